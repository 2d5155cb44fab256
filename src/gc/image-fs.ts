/**
 * How full the image filesystem is (upstream's StatsProvider.ImageFsStats via cadvisor): CRI
 * ImageFsInfo names the filesystem (its mountpoint) but gives no capacity, so the capacity and
 * what is available come from statfs of that mountpoint, or of a configured path (containerd's
 * root) when the runtime names none.
 */
import { statfs } from 'node:fs/promises';
import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import type { CallOptions, ImageService } from '../runtime/cri/index.ts';

/** Bytes of the filesystem holding the images, and bytes an unprivileged writer can still use. */
export interface ImageFsUsage {
  capacityBytes: number;
  availableBytes: number;
}

/** Measures the image filesystem; rejects when it cannot. */
export type ImageFsUsageFn = (signal: AbortSignal) => Promise<ImageFsUsage>;

export interface ImageFsUsageDeps {
  images: ImageService;
  /** statfs'd when CRI ImageFsInfo fails or names no mountpoint (e.g. `/var/lib/containerd`). */
  fallbackPath: string;
  logger: Logger;
  callTimeoutMs: number;
  /** Replaceable for tests. */
  statfs?: (path: string) => Promise<{ bsize: number; blocks: number; bavail: number }>;
}

export function createImageFsUsage(deps: ImageFsUsageDeps): ImageFsUsageFn {
  const fsStat = deps.statfs ?? ((path: string) => statfs(path));
  return async (signal) => {
    let path = deps.fallbackPath;
    const opts: CallOptions = { signal, timeoutMs: deps.callTimeoutMs };
    try {
      const mountpoint = (await deps.images.imageFsInfo(opts))[0]?.fsId?.mountpoint;
      if (mountpoint) path = mountpoint;
    } catch (err) {
      if (signal.aborted) throw err;
      deps.logger.debug('image GC: CRI ImageFsInfo failed; measuring the configured path instead', {
        path,
        err: describeError(err),
      });
    }
    const st = await fsStat(path);
    return { capacityBytes: st.blocks * st.bsize, availableBytes: st.bavail * st.bsize };
  };
}
