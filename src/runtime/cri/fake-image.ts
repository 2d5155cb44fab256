/**
 * CRI ImageService in memory, for unit tests (upstream cri-api `apis/testing` FakeImageService);
 * import it from testing.ts.
 */
import { createHash } from 'node:crypto';
import { FakeCriService } from './fake-service.ts';
import type {
  AuthConfig,
  CallOptions,
  FilesystemUsage,
  Image,
  ImageService,
  ImageSpec,
  PodSandboxConfig,
} from './types.ts';

/** docker's normalization, enough for matching: `busybox` → `docker.io/library/busybox:latest`. */
export function normalizeImageRef(ref: string): string {
  if (ref.startsWith('sha256:')) return ref;
  const slash = ref.indexOf('/');
  const first = slash < 0 ? '' : ref.slice(0, slash);
  let named =
    /[.:]/.test(first) || first === 'localhost' ? ref : `docker.io/${slash < 0 ? 'library/' : ''}${ref}`;
  if (!named.includes('@') && !named.slice(named.lastIndexOf('/')).includes(':')) named += ':latest';
  return named;
}

/** CRI ImageService in memory: images by ID, found by ID, tag or digest (normalized). */
export class FakeImageService extends FakeCriService<keyof ImageService> implements ImageService {
  readonly images = new Map<string, Image>();

  /** Puts an image in the store (as if pulled earlier); returns it. */
  addImage(ref: string, extra: Partial<Omit<Image, 'id' | 'repoTags' | 'repoDigests'>> = {}): Image {
    const named = normalizeImageRef(ref);
    const digest = `sha256:${createHash('sha256').update(named).digest('hex')}`;
    const at = named.indexOf('@');
    const repo = at >= 0 ? named.slice(0, at) : named.slice(0, named.lastIndexOf(':'));
    const image: Image = {
      id: `sha256:${createHash('sha256').update(`id:${named}`).digest('hex')}`,
      repoTags: at >= 0 ? [] : [named],
      repoDigests: [at >= 0 ? named : `${repo}@${digest}`],
      size: 1_000_000,
      username: '',
      ...extra,
    };
    this.images.set(image.id, image);
    return image;
  }

  find(ref: string): Image | undefined {
    const named = normalizeImageRef(ref);
    for (const img of this.images.values()) {
      if (img.id === ref || img.repoTags.includes(named) || img.repoDigests.includes(named)) return img;
    }
    return undefined;
  }

  listImages(filter?: ImageSpec, opts?: CallOptions): Promise<Image[]> {
    return this.call('listImages', [filter], opts, () => {
      if (!filter?.image) return structuredClone([...this.images.values()]);
      const img = this.find(filter.image);
      return img ? [structuredClone(img)] : [];
    });
  }

  imageStatus(image: ImageSpec, opts?: CallOptions): Promise<Image | null> {
    return this.call('imageStatus', [image], opts, () => structuredClone(this.find(image.image) ?? null));
  }

  /** Adds the image (unless present) and returns its ID, as containerd does. */
  pullImage(
    image: ImageSpec,
    auth?: AuthConfig,
    sandboxConfig?: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string> {
    return this.call('pullImage', [image, auth, sandboxConfig], opts, () => {
      return (this.find(image.image) ?? this.addImage(image.image)).id;
    });
  }

  removeImage(image: ImageSpec, opts?: CallOptions): Promise<void> {
    return this.call('removeImage', [image], opts, () => {
      const img = this.find(image.image);
      if (img) this.images.delete(img.id);
    });
  }

  imageFsInfo(opts?: CallOptions): Promise<FilesystemUsage[]> {
    return this.call('imageFsInfo', [], opts, () => {
      const all = [...this.images.values()];
      return [
        {
          timestamp: this.clock.now() * 1e6,
          fsId: { mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs' },
          usedBytes: { value: all.reduce((n, i) => n + i.size, 0) },
          inodesUsed: { value: all.length },
        },
      ];
    });
  }
}
