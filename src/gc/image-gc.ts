/**
 * Image garbage collection (upstream images.realImageGCManager): when the image filesystem is at
 * or above the high threshold, unused images are removed, least recently used first, until usage
 * is back at the low threshold. It never removes an image a container (running or not) was
 * created from, the sandbox (pause) image, a pinned image, or one first seen less than the
 * minimum age ago.
 */
import type { Logger } from '../util/logger.ts';
import { abortReason, combineSignals } from '../util/abort.ts';
import { describeError } from '../util/errors.ts';
import type { CallOptions, Image, ImageService, RuntimeService } from '../runtime/cri/types.ts';
import type { ImageFsUsageFn } from './image-fs.ts';
import { singleFlight } from '../util/single-flight.ts';
import { monotonicNow } from '../util/clock.ts';

/** Deadline of each CRI call of a pass. */
const CALL_TIMEOUT_MS = 60_000;
/** A pass that takes longer stops where it is; the next one (a period later) carries on. */
const PASS_TIMEOUT_MS = 5 * 60_000;

/** Upstream ImageGCPolicy. */
export interface ImageGCPolicy {
  /** Usage (percent) at or above which a pass frees space; 100 disables image GC. */
  highThresholdPercent: number;
  /** Usage (percent) a pass frees down to. */
  lowThresholdPercent: number;
  /** An image first seen less than this long ago stays. */
  minAgeMs: number;
}

export interface ImageGCDeps {
  images: ImageService;
  /** Its containers (all of them, exited too) say which images are in use. */
  runtime: RuntimeService;
  policy: ImageGCPolicy;
  /** The sandbox (pause) image reference: never removed (upstream sandboxImage). */
  sandboxImage: string;
  /** Capacity and available bytes of the image filesystem. */
  imageFsUsage: ImageFsUsageFn;
  /** Records an event on the Node (ImageGCFailed, FreeDiskSpaceFailed, InvalidDiskCapacity). */
  nodeEvent(type: 'Normal' | 'Warning', reason: string, message: string): void;
  /** Aborted when the kubelet stops: the pass in flight ends at once. */
  signal: AbortSignal;
  logger: Logger;
  /**
   * Monotonic ms (util/clock's by default): when images were first seen and last used, their age.
   * On the wall clock a forward step made a just-pulled image old enough to remove at once, and a
   * backward one kept every image too young to remove for as long as the step.
   */
  monotonic?: () => number;
  callTimeoutMs?: number;
  passTimeoutMs?: number;
}

/** What one pass did. */
export interface ImageGCPassResult {
  /** Image filesystem usage in percent; undefined when it could not be measured (or GC is disabled). */
  usagePercent: number | undefined;
  /** Bytes the pass set out to free (0 below the high threshold). */
  bytesToFree: number;
  removedImages: number;
  freedBytes: number;
  /** Why the pass failed, each one logged; empty when it succeeded. */
  errors: string[];
  /** The pass was stopped (kubelet stop or its deadline) before it finished. */
  aborted: boolean;
}

/**
 * Upstream ImageGCManager. Each pass (every IMAGE_GC_PERIOD_MS) records the images present and
 * which are in use (upstream detectImages), then measures the image filesystem and, at or above
 * the high threshold, removes images (upstream GarbageCollect → freeSpace).
 */
export interface ImageGC {
  /** One pass, or joins the one in flight (the timer fires whether or not it has finished). Never rejects. */
  collect(): Promise<ImageGCPassResult>;
  /** Resolves when no pass is running. */
  idle(): Promise<void>;
  /**
   * Upstream DeleteUnusedImages (the eviction manager's reclaim under disk pressure): after any
   * pass in flight, removes every unused image old enough, whatever the thresholds say.
   */
  deleteUnusedImages(): Promise<ImageGCPassResult>;
}

/** Upstream imageRecord: what the kubelet remembers of an image between passes. */
interface ImageRecord {
  /** -Infinity for images present at the first detection (upstream's zero time: not young). */
  firstDetected: number;
  /** 0 until a container is seen using it. */
  lastUsed: number;
  size: number;
}

const emptyResult = (): ImageGCPassResult => ({
  usagePercent: undefined,
  bytesToFree: 0,
  removedImages: 0,
  freedBytes: 0,
  errors: [],
  aborted: false,
});

/** An image is in use when any of its names (ID, tags, digests) is a reference in use. */
function isUsed(img: Image, inUse: ReadonlySet<string>): boolean {
  return (
    inUse.has(img.id) || img.repoTags.some((t) => inUse.has(t)) || img.repoDigests.some((d) => inUse.has(d))
  );
}

/** Ascending, -Infinity (present at the first detection) equal to itself. */
const order = (a: number, b: number): number => (a === b ? 0 : a < b ? -1 : 1);

export function createImageGC(deps: ImageGCDeps): ImageGC {
  const { images, runtime, policy, logger: log } = deps;
  const now = deps.monotonic ?? monotonicNow;
  const callTimeoutMs = deps.callTimeoutMs ?? CALL_TIMEOUT_MS;
  const passTimeoutMs = deps.passTimeoutMs ?? PASS_TIMEOUT_MS;
  // Upstream StartGarbageCollection: a high threshold of 100 stubs the image GC out.
  const disabled = policy.highThresholdPercent >= 100;
  const records = new Map<string, ImageRecord>();
  let initialized = false;
  let prevFailed = false;

  const call = (signal: AbortSignal): CallOptions => ({ signal, timeoutMs: callTimeoutMs });

  /**
   * Upstream detectImages: refreshes the records (new images, sizes, gone images) and marks the
   * ones in use as used at `detectTime`. Returns the images present that are in use.
   */
  async function detectImages(detectTime: number, signal: AbortSignal): Promise<Set<string>> {
    const refs = new Set<string>();
    try {
      const sandbox = await images.imageStatus({ image: deps.sandboxImage }, call(signal));
      if (sandbox) refs.add(sandbox.id);
    } catch (err) {
      if (signal.aborted) throw err;
      // Upstream ignores this error too: the image may simply not be pulled yet.
      log.debug('image GC: sandbox image status failed', {
        image: deps.sandboxImage,
        err: describeError(err),
      });
    }
    refs.add(deps.sandboxImage);
    const [present, containers] = await Promise.all([
      images.listImages(undefined, call(signal)),
      runtime.listContainers(undefined, call(signal)),
    ]);
    for (const c of containers) {
      refs.add(c.imageRef);
      refs.add(c.image.image);
    }
    const firstDetected = initialized ? detectTime : -Infinity;
    const inUse = new Set<string>();
    for (const img of present) {
      let rec = records.get(img.id);
      if (!rec) {
        rec = { firstDetected, lastUsed: 0, size: img.size };
        records.set(img.id, rec);
      }
      // Pinned images (the runtime's own, e.g. containerd's sandbox image) count as in use.
      if (img.pinned === true || isUsed(img, refs)) {
        rec.lastUsed = detectTime;
        inUse.add(img.id);
      }
      rec.size = img.size;
    }
    const ids = new Set(present.map((i) => i.id));
    for (const id of records.keys()) if (!ids.has(id)) records.delete(id);
    initialized = true;
    return inUse;
  }

  /**
   * Upstream freeSpace: removes unused images old enough, least recently used first (then
   * first detected first), until `bytesToFree` are freed. A failing removal is logged and the
   * next image tried.
   */
  async function freeSpace(
    bytesToFree: number,
    freeTime: number,
    inUse: ReadonlySet<string>,
    signal: AbortSignal,
    result: ImageGCPassResult,
  ): Promise<void> {
    const candidates = [...records]
      .filter(([id]) => !inUse.has(id))
      .sort(([, a], [, b]) => a.lastUsed - b.lastUsed || order(a.firstDetected, b.firstDetected));
    const deletionErrors: string[] = [];
    for (const [id, rec] of candidates) {
      if (rec.lastUsed >= freeTime) continue;
      if (freeTime - rec.firstDetected < policy.minAgeMs) continue;
      if (signal.aborted) throw abortReason(signal);
      log.info('image GC: removing image', { imageID: id, sizeBytes: rec.size });
      try {
        await images.removeImage({ image: id }, call(signal));
      } catch (err) {
        if (signal.aborted) throw abortReason(signal);
        log.warn('image GC: failed to remove image; trying the next one', {
          imageID: id,
          err: describeError(err),
        });
        deletionErrors.push(describeError(err));
        continue;
      }
      records.delete(id);
      result.removedImages++;
      result.freedBytes += rec.size;
      if (result.freedBytes >= bytesToFree) break;
    }
    if (deletionErrors.length > 0) {
      result.errors.push(
        `wanted to free ${bytesToFree} bytes, but freed ${result.freedBytes} bytes space with errors in image deletion: [${deletionErrors.join(', ')}]`,
      );
    }
  }

  /** Upstream GarbageCollect: the error of a failed pass goes in `result.errors`. */
  async function pass(signal: AbortSignal, result: ImageGCPassResult): Promise<void> {
    const t = now();
    const inUse = await detectImages(t, signal);
    const fs = await deps.imageFsUsage(signal);
    const capacity = fs.capacityBytes;
    let available = fs.availableBytes;
    if (available > capacity) {
      log.warn('image GC: available bytes exceed the capacity', { available, capacity });
      available = capacity;
    }
    if (capacity === 0) {
      const message = 'invalid capacity 0 on image filesystem';
      deps.nodeEvent('Warning', 'InvalidDiskCapacity', message);
      result.errors.push(message);
      return;
    }
    const usagePercent = 100 - Math.trunc((available * 100) / capacity);
    result.usagePercent = usagePercent;
    if (usagePercent < policy.highThresholdPercent) return;
    const bytesToFree = Math.trunc((capacity * (100 - policy.lowThresholdPercent)) / 100) - available;
    result.bytesToFree = bytesToFree;
    log.info(
      `image GC: disk usage on image filesystem is at ${usagePercent}% which is over the high threshold ` +
        `(${policy.highThresholdPercent}%); trying to free ${bytesToFree} bytes down to the low threshold ` +
        `(${policy.lowThresholdPercent}%)`,
    );
    await freeSpace(bytesToFree, t, inUse, signal, result);
    if (result.errors.length > 0) return;
    if (result.freedBytes < bytesToFree) {
      const message = `failed to garbage collect required amount of images. Wanted to free ${bytesToFree} bytes, but freed ${result.freedBytes} bytes`;
      deps.nodeEvent('Warning', 'FreeDiskSpaceFailed', message);
      result.errors.push(message);
    }
  }

  /** Upstream StartGarbageCollection's handling of a pass's error. */
  function report(result: ImageGCPassResult): void {
    if (result.errors.length === 0) {
      if (prevFailed) log.info('image garbage collection succeeded', { freedBytes: result.freedBytes });
      else log.debug('image garbage collection succeeded', { freedBytes: result.freedBytes });
      prevFailed = false;
      return;
    }
    const message = result.errors.join('; ');
    if (prevFailed) {
      log.error('image garbage collection failed multiple times in a row', { err: message });
      // Upstream: only repeated failures make an event.
      deps.nodeEvent('Warning', 'ImageGCFailed', message);
    } else {
      log.error('image garbage collection failed once; stats initialization may not have completed yet', {
        err: message,
      });
    }
    prevFailed = true;
  }

  /** Upstream DeleteUnusedImages: freeSpace(MaxInt64) on fresh image records. */
  async function deleteAll(signal: AbortSignal, result: ImageGCPassResult): Promise<void> {
    const t = now();
    const inUse = await detectImages(t, signal);
    await freeSpace(Infinity, t, inUse, signal, result);
    if (result.removedImages > 0)
      log.info('image GC: removed unused images', {
        images: result.removedImages,
        freedBytes: result.freedBytes,
      });
  }

  async function run(all = false): Promise<ImageGCPassResult> {
    const signal = combineSignals([deps.signal], passTimeoutMs);
    const result = emptyResult();
    try {
      if (all) await deleteAll(signal, result);
      else await pass(signal, result);
    } catch (err) {
      if (!signal.aborted) {
        result.errors.push(describeError(err));
      } else {
        result.aborted = true;
        if (!deps.signal.aborted) {
          log.warn('image GC: pass stopped at its deadline; the next pass carries on', {
            deadlineMs: passTimeoutMs,
            removedImages: result.removedImages,
          });
        }
        return result;
      }
    }
    report(result);
    return result;
  }

  // A pass that rejects is a bug (each step catches its own errors): logged, answered as a failed pass.
  const failed =
    (what: string) =>
    (err: unknown): ImageGCPassResult => {
      log.error(`${what}: pass failed`, { err: describeError(err) });
      return { ...emptyResult(), errors: [describeError(err)] };
    };
  const passes = singleFlight<ImageGCPassResult>();
  const allUnused = singleFlight<ImageGCPassResult>();
  return {
    collect: () =>
      disabled ? Promise.resolve(emptyResult()) : passes.run(() => run(false).catch(failed('image GC'))),
    async idle() {
      await Promise.all([passes.idle(), allUnused.idle()]);
    },
    async deleteUnusedImages() {
      await passes.idle();
      return allUnused.run(() => run(true).catch(failed('image GC (all unused)')));
    },
  };
}
