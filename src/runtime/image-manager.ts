import type { Container, Pod } from '../api/types.ts';
import type { EventRecorder } from '../api/events.ts';
import type { ImageService, PodSandboxConfig } from './cri/types.ts';
import { createBackoff, type Backoff } from '../util/backoff.ts';
import { IMAGE_BACKOFF_INITIAL_MS, IMAGE_BACKOFF_MAX_MS } from '../config/defaults.ts';
import { describeError } from '../util/errors.ts';

/** Why a container could not get its image; these strings become the waiting reason in pod status. */
export type ImageErrorReason = 'ErrImagePull' | 'ImagePullBackOff' | 'ErrImageNeverPull' | 'InvalidImageName';

export class ImageError extends Error {
  readonly reason: ImageErrorReason;
  constructor(reason: ImageErrorReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ImageError';
    this.reason = reason;
  }
}

/** Makes sure a container's image is present, honouring imagePullPolicy (upstream images.ImageManager). */
export interface ImageManager {
  /** Resolves to the image reference (image ID) to create the container from; rejects with ImageError. */
  ensureImage(
    pod: Pod,
    container: Container,
    sandboxConfig: PodSandboxConfig,
    signal?: AbortSignal,
  ): Promise<string>;
}

export interface ImageManagerDeps {
  images: ImageService;
  recorder: EventRecorder;
  now?: () => number;
  backoff?: Backoff;
}

/** `docker.io/library/busybox:1.29` → true; `busybox`, `busybox:latest` → false; digests count as pinned. */
export function hasPinnedTag(image: string): boolean {
  if (image.includes('@')) return true;
  const lastSlash = image.lastIndexOf('/');
  const colon = image.indexOf(':', lastSlash + 1);
  if (colon === -1) return false;
  return image.slice(colon + 1) !== 'latest';
}

export function createImageManager(deps: ImageManagerDeps): ImageManager {
  const now = deps.now ?? Date.now;
  const backoff = deps.backoff ?? createBackoff(IMAGE_BACKOFF_INITIAL_MS, IMAGE_BACKOFF_MAX_MS);
  const lastFailure = new Map<string, number>();

  return {
    async ensureImage(pod, container, sandboxConfig, signal) {
      const image = container.image ?? '';
      if (image === '' || /\s/.test(image)) {
        const msg = `Failed to apply default image tag "${image}": invalid reference format`;
        deps.recorder.event(pod, 'Warning', 'InspectFailed', msg);
        throw new ImageError('InvalidImageName', msg);
      }
      const policy = container.imagePullPolicy ?? (hasPinnedTag(image) ? 'IfNotPresent' : 'Always');
      const present = await deps.images.imageStatus({ image }, { signal });
      if (present && policy !== 'Always') {
        deps.recorder.event(pod, 'Normal', 'Pulled', `Container image "${image}" already present on machine`);
        return present.id;
      }
      if (!present && policy === 'Never') {
        const msg = `Container image "${image}" is not present with pull policy of Never`;
        deps.recorder.event(pod, 'Warning', 'ErrImageNeverPull', msg);
        throw new ImageError('ErrImageNeverPull', msg);
      }
      const key = `${pod.metadata.uid ?? ''}_${image}`;
      const t = now();
      // Upstream IsInBackOffSinceUpdate: the window starts at the last failed pull.
      const lastFailed = lastFailure.get(key);
      if (lastFailed !== undefined && backoff.isInBackoffSince(key, lastFailed, t)) {
        const msg = `Back-off pulling image "${image}"`;
        deps.recorder.event(pod, 'Normal', 'BackOff', msg);
        throw new ImageError('ImagePullBackOff', msg);
      }
      deps.recorder.event(pod, 'Normal', 'Pulling', `Pulling image "${image}"`);
      const started = now();
      try {
        const ref = await deps.images.pullImage({ image }, undefined, sandboxConfig, { signal });
        backoff.reset(key);
        lastFailure.delete(key);
        const secs = ((now() - started) / 1000).toFixed(3);
        deps.recorder.event(pod, 'Normal', 'Pulled', `Successfully pulled image "${image}" in ${secs}s`);
        return ref;
      } catch (err) {
        backoff.next(key, now(), now());
        lastFailure.set(key, now());
        const msg = `Failed to pull image "${image}": ${describeError(err)}`;
        deps.recorder.event(pod, 'Warning', 'Failed', msg);
        throw new ImageError('ErrImagePull', msg, { cause: err });
      }
    },
  };
}
