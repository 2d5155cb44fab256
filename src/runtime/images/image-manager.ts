/**
 * Makes sure a container's image is there before it is created: pull policy, events and the
 * per-image pull back-off (upstream images.ImageManager EnsureImageExists). References are parsed in
 * image-reference.ts, credentials found in image-credentials.ts, pulls run in image-puller.ts.
 */
import type { Container, KubeletPod, PullPolicy } from '../../api/types.ts';
import { podFullName } from '../../api/types.ts';
import type { EventRecorder } from '../../api/events.ts';
import type { PodSandboxConfig } from '../cri/index.ts';
import { createBackoff, type Backoff } from '../../util/backoff.ts';
import { IMAGE_BACKOFF_INITIAL_MS, IMAGE_BACKOFF_MAX_MS } from '../../config/defaults.ts';
import { formatGoDuration } from '../../config/duration.ts';
import { describeError, isCanceled } from '../../util/errors.ts';
import { nullLogger, type Logger } from '../../util/logger.ts';
import { createImageCredentials, type ImageCredentialsDeps } from './image-credentials.ts';
import { createImagePuller, type ImagePullerDeps } from './image-puller.ts';
import { defaultPullPolicyFor, parseImageReference, type ImageReference } from './image-reference.ts';
import { monotonicNow } from '../../util/clock.ts';
import { noopTimeline, type TimelineRecorder } from '../../timeline/index.ts';

/** Why a container could not get its image; these strings become the waiting reason in pod status. */
export type ImageErrorReason =
  'ErrImagePull' | 'ImagePullBackOff' | 'ErrImageNeverPull' | 'InvalidImageName' | 'ImageInspectError';

export class ImageError extends Error {
  readonly reason: ImageErrorReason;
  constructor(reason: ImageErrorReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ImageError';
    this.reason = reason;
  }
}

/**
 * Makes sure a container's image is present, honouring imagePullPolicy, the pod's imagePullSecrets
 * and the node's own credentials (each matching one tried in turn), the parallel-pull limit, the
 * registry QPS and the per-image pull back-off (upstream images.ImageManager + puller + kuberuntime
 * PullImage).
 */
export interface ImageManager {
  /**
   * Resolves to the image reference (image ID) to create the container from. Rejects with an
   * ImageError whose `reason` is the container's waiting reason; rejects with the signal's reason
   * (not an ImageError, no event, no back-off) when `signal` aborts first.
   */
  ensureImage(
    pod: KubeletPod,
    container: Container,
    sandboxConfig: PodSandboxConfig,
    signal?: AbortSignal,
  ): Promise<string>;
  /**
   * Read-only, for `why`: the pod's image pulls in flight and its images in pull back-off. CRI
   * reports no progress during a pull, so no byte count is known until it is done.
   */
  pullState(podUID: string): ImagePullState[];
}

/** One image of a pod as `ImageManager.pullState` reports it (monotonic ms). */
export interface ImagePullState {
  image: string;
  /** The container whose start asked for it (the first one, when several share the image). */
  container: string;
  /** The pull in flight started at (monotonic ms); absent when none is. */
  pullingSince?: number;
  /** Left of the pull back-off window (ms); absent when not in back-off. */
  backOffLeftMs?: number;
  /** The current back-off delay (ms). */
  backOffMs?: number;
  /** Why the last pull failed. */
  lastError?: string;
}

export interface ImageManagerDeps extends ImagePullerDeps, ImageCredentialsDeps {
  recorder: EventRecorder;
  logger?: Logger;
  /** Monotonic ms (util/clock): the pull back-off and pull durations. */
  monotonic?: () => number;
  backoff?: Backoff;
  /** `image-pull-started` / `image-pull-done` (bytes, cached) / `failed`; absent: nothing. */
  timeline?: Pick<TimelineRecorder, 'record'>;
}

/** Upstream shouldPullImage. */
export function shouldPullImage(policy: PullPolicy, present: boolean): boolean {
  switch (policy) {
    case 'Never':
      return false;
    case 'Always':
      return true;
    case 'IfNotPresent':
      return !present;
  }
}

export function createImageManager(deps: ImageManagerDeps): ImageManager {
  /** The size of an image just pulled (one ImageStatus, only when a timeline records it). */
  async function pulledSize(
    imageRef: string,
    signal: AbortSignal | undefined,
    plog: Logger,
  ): Promise<{ bytes?: number }> {
    try {
      const img = await deps.images.imageStatus({ image: imageRef }, { signal });
      return img ? { bytes: img.size } : {};
    } catch (err) {
      plog.debug('cannot read the pulled image size for the timeline', {
        image: imageRef,
        err: describeError(err),
      });
      return {};
    }
  }

  const now = deps.monotonic ?? monotonicNow;
  const log = deps.logger ?? nullLogger;
  const backoff = deps.backoff ?? createBackoff(IMAGE_BACKOFF_INITIAL_MS, IMAGE_BACKOFF_MAX_MS);
  const puller = createImagePuller(deps);
  const credentialsFor = createImageCredentials(deps);
  /** Pulls in flight by back-off key (`<podUID>_<image>`): read by `pullState` only. */
  const inFlight = new Map<string, { container: string; since: number }>();
  /** The container that last asked for each back-off key and its last pull error, for `pullState`. */
  const askedBy = new Map<string, { container: string; lastError?: string }>();
  const timeline = deps.timeline ?? noopTimeline;

  return {
    async ensureImage(pod, container, sandboxConfig, signal) {
      const plog = log.child({ pod: podFullName(pod), podUID: pod.metadata.uid, container: container.name });
      const image = container.image ?? '';
      let ref: ImageReference;
      try {
        ref = parseImageReference(image);
      } catch (err) {
        const msg = `Failed to apply default image tag "${image}": couldn't parse image reference "${image}": ${describeError(err)}`;
        deps.recorder.event(pod, 'Warning', 'InspectFailed', msg);
        throw new ImageError('InvalidImageName', msg, { cause: err });
      }
      // As upstream: a bare name gets `:latest` appended, not a fully qualified rewrite, so the
      // runtime sees the name the user wrote.
      const spec = ref.tag === undefined && ref.digest === undefined ? `${image}:latest` : image;
      const uid = pod.metadata.uid;
      const stepFields = { container: container.name, image };
      const stepFailed = (error: string): void => {
        if (!signal?.aborted)
          timeline.record(uid, 'failed', { failedStep: 'image-pull-done', ...stepFields, error });
      };
      // Started before the presence check: for a cached image the step is that check.
      timeline.record(uid, 'image-pull-started', stepFields);

      let present;
      try {
        present = await deps.images.imageStatus({ image: spec }, { signal });
      } catch (err) {
        if (signal?.aborted || isCanceled(err)) throw err;
        const msg = `Failed to inspect image "${image}": ${describeError(err)}`;
        stepFailed(msg);
        deps.recorder.event(pod, 'Warning', 'InspectFailed', msg);
        throw new ImageError('ImageInspectError', msg, { cause: err });
      }
      const policy = container.imagePullPolicy ?? defaultPullPolicyFor(ref);
      if (!shouldPullImage(policy, present !== null)) {
        if (present) {
          deps.recorder.event(
            pod,
            'Normal',
            'Pulled',
            `Container image "${image}" already present on machine`,
          );
          timeline.record(uid, 'image-pull-done', { ...stepFields, bytes: present.size, cached: true });
          return present.id;
        }
        const msg = `Container image "${image}" is not present with pull policy of Never`;
        stepFailed(msg);
        deps.recorder.event(pod, 'Warning', 'ErrImageNeverPull', msg);
        throw new ImageError('ErrImageNeverPull', msg);
      }

      const key = `${pod.metadata.uid}_${image}`;
      // Upstream IsInBackOffSinceUpdate: the window runs from the last failed pull.
      const last = backoff.entries().get(key);
      if (last !== undefined && backoff.isInBackoffSince(key, last.lastUpdateMs, now())) {
        const msg = `Back-off pulling image "${image}"`;
        stepFailed(msg);
        deps.recorder.event(pod, 'Normal', 'BackOff', msg);
        throw new ImageError('ImagePullBackOff', msg);
      }

      deps.recorder.event(pod, 'Normal', 'Pulling', `Pulling image "${image}"`);
      const started = now();
      let imageRef: string;
      inFlight.set(key, { container: container.name, since: started });
      askedBy.set(key, { container: container.name });
      try {
        const creds = await credentialsFor(pod, ref.repository, signal, plog);
        imageRef = await puller.pull(spec, creds, sandboxConfig, signal, plog);
      } catch (err) {
        inFlight.delete(key);
        // The caller gave up (pod terminating, kubelet stopping): not the image's fault.
        if (signal?.aborted) throw err;
        const t = now();
        backoff.next(key, t, t);
        const reason = describeError(err);
        askedBy.set(key, { container: container.name, lastError: reason });
        stepFailed(reason);
        deps.recorder.event(pod, 'Warning', 'Failed', `Failed to pull image "${image}": ${reason}`);
        throw new ImageError('ErrImagePull', reason, { cause: err });
      }
      inFlight.delete(key);
      askedBy.delete(key);
      deps.recorder.event(
        pod,
        'Normal',
        'Pulled',
        `Successfully pulled image "${image}" in ${formatGoDuration(now() - started)}`,
      );
      if (deps.timeline) {
        timeline.record(uid, 'image-pull-done', {
          ...stepFields,
          ...(await pulledSize(imageRef, signal, plog)),
          cached: false,
        });
      }
      backoff.gc(now());
      for (const k of askedBy.keys()) if (!backoff.entries().has(k) && !inFlight.has(k)) askedBy.delete(k);
      return imageRef;
    },
    pullState(podUID) {
      const prefix = `${podUID}_`;
      const t = now();
      const out = new Map<string, ImagePullState>();
      for (const [key, p] of inFlight) {
        if (key.startsWith(prefix)) {
          out.set(key, { image: key.slice(prefix.length), container: p.container, pullingSince: p.since });
        }
      }
      for (const [key, e] of backoff.entries()) {
        if (!key.startsWith(prefix) || out.has(key)) continue;
        const left = e.lastUpdateMs + e.delayMs - t;
        if (left <= 0) continue;
        const asked = askedBy.get(key);
        out.set(key, {
          image: key.slice(prefix.length),
          container: asked?.container ?? '',
          backOffLeftMs: left,
          backOffMs: e.delayMs,
          ...(asked?.lastError !== undefined ? { lastError: asked.lastError } : {}),
        });
      }
      return [...out.values()];
    },
  };
}
