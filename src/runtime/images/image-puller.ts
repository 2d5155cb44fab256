/**
 * The pull itself (upstream kuberuntime PullImage behind images.puller): each credential tried in
 * turn, within the parallel-pull limit (maxParallelImagePulls), the registry QPS and a timeout, and
 * one pull shared by everyone asking for the same image with the same credentials.
 */
import { createHash } from 'node:crypto';
import { createRateLimiter, type RateLimiter } from '../../api/rate-limiter.ts';
import {
  DEFAULT_MAX_PARALLEL_IMAGE_PULLS,
  DEFAULT_REGISTRY_BURST,
  DEFAULT_REGISTRY_PULL_QPS,
  IMAGE_PULL_TIMEOUT_MS,
} from '../../config/defaults.ts';
import { abortReason, combineSignals, untilAborted } from '../../util/abort.ts';
import { KubeletError, describeError } from '../../util/errors.ts';
import type { Logger } from '../../util/logger.ts';
import type { AuthConfig, ImageService, PodSandboxConfig } from '../cri/index.ts';
import { toAuthConfig, type RegistryCredential } from './pull-secrets.ts';

/** The image service and the limits pulls run under. */
export interface ImagePullerDeps {
  images: ImageService;
  /**
   * Pulls running at once across all pods (maxParallelImagePulls; 1 = serializeImagePulls).
   * Default 5. `Infinity` means no limit.
   */
  maxParallelPulls?: number;
  /** registryPullQPS (0 = no limit), default 5. Ignored when `rateLimiter` is given. */
  registryPullQPS?: number;
  /**
   * registryBurst, default 10. A burst of 0 with a QPS limit is taken as 1: upstream's token bucket
   * would then refuse every pull ("pull QPS exceeded"), ours would wait forever.
   */
  registryBurst?: number;
  /** Replaces the token bucket built from registryPullQPS/registryBurst (tests). */
  rateLimiter?: RateLimiter;
  /** Bound on one pull (all credential attempts, after its turn came). Default 10 min. */
  pullTimeoutMs?: number;
}

/** Pulls images; never records events or keeps back-off (the image manager does). */
export interface ImagePuller {
  /**
   * Resolves to the image reference pulled. Joins the pull in flight for the same image with the
   * same credentials, or starts one; the pull goes on while anyone waits for it, the last waiter
   * to give up (through `signal`) cancels it. Several failed credentials reject with all of them.
   */
  pull(
    image: string,
    creds: readonly RegistryCredential[],
    sandboxConfig: PodSandboxConfig,
    signal: AbortSignal | undefined,
    plog: Logger,
  ): Promise<string>;
}

/** A FIFO counting semaphore whose waits can be cancelled. */
interface Semaphore {
  acquire(signal?: AbortSignal): Promise<() => void>;
  active(): number;
  waiting(): number;
}

function createSemaphore(limit: number): Semaphore {
  let active = 0;
  const queue: { grant: () => void }[] = [];
  const release = () => {
    active--;
    const next = queue.shift();
    if (next) next.grant();
  };
  const once = () => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      release();
    };
  };
  return {
    acquire(signal) {
      if (signal?.aborted) return Promise.reject(abortReason(signal));
      if (active < limit) {
        active++;
        return Promise.resolve(once());
      }
      return new Promise((resolve, reject) => {
        const waiter = {
          grant: () => {
            signal?.removeEventListener('abort', onAbort);
            active++;
            resolve(once());
          },
        };
        const onAbort = () => {
          const i = queue.indexOf(waiter);
          if (i !== -1) queue.splice(i, 1);
          reject(abortReason(signal));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        queue.push(waiter);
      });
    },
    active: () => active,
    waiting: () => queue.length,
  };
}

/** upstream utilerrors.NewAggregate(...).Error(): one message alone, several in brackets. */
function aggregateMessage(errors: unknown[]): string {
  const msgs = errors.map(describeError);
  return msgs.length === 1 ? (msgs[0] ?? '') : `[${msgs.join(', ')}]`;
}

interface InflightPull {
  promise: Promise<string>;
  controller: AbortController;
  waiters: number;
}

export function createImagePuller(deps: ImagePullerDeps): ImagePuller {
  const maxParallel = deps.maxParallelPulls ?? DEFAULT_MAX_PARALLEL_IMAGE_PULLS;
  if (!(maxParallel >= 1)) {
    throw new KubeletError('InvalidArgument', 'create image manager', `maxParallelPulls ${maxParallel} < 1`);
  }
  const slots = createSemaphore(maxParallel);
  const limiter =
    deps.rateLimiter ??
    createRateLimiter(
      deps.registryPullQPS ?? DEFAULT_REGISTRY_PULL_QPS,
      Math.max(1, deps.registryBurst ?? DEFAULT_REGISTRY_BURST),
    );
  const pullTimeoutMs = deps.pullTimeoutMs ?? IMAGE_PULL_TIMEOUT_MS;
  const inflight = new Map<string, InflightPull>();

  /** One pull of `image` with each credential in turn until one works (kuberuntime PullImage). */
  async function pullOnce(
    image: string,
    creds: readonly RegistryCredential[],
    sandboxConfig: PodSandboxConfig,
    signal: AbortSignal,
    plog: Logger,
  ): Promise<string> {
    const release = await slots.acquire(signal);
    try {
      await limiter.acquire(signal);
      const bounded = combineSignals([signal], pullTimeoutMs);
      const attempts: (AuthConfig | undefined)[] = creds.length === 0 ? [undefined] : creds.map(toAuthConfig);
      const errors: unknown[] = [];
      for (const [i, auth] of attempts.entries()) {
        try {
          plog.debug('pulling image', {
            image,
            credentials: auth ? `${creds[i]?.source ?? ''} #${i + 1}/${creds.length}` : 'none',
          });
          return await deps.images.pullImage({ image }, auth, sandboxConfig, { signal: bounded });
        } catch (err) {
          if (signal.aborted) throw err;
          if (bounded.aborted) {
            throw new KubeletError('DeadlineExceeded', 'pull image', `no result within ${pullTimeoutMs} ms`, {
              cause: err,
            });
          }
          errors.push(err);
        }
      }
      // One attempt: its own error, as upstream returns it. Several: all of them, in order.
      if (errors.length === 1) throw errors[0];
      throw new KubeletError(
        'Unknown',
        `pull image "${image}" with ${errors.length} credentials`,
        aggregateMessage(errors),
        { cause: errors[0] },
      );
    } finally {
      release();
    }
  }

  /**
   * Joins the pull in flight for the same image with the same credentials, or starts one. The pull
   * goes on while anyone waits for it; the last waiter to give up cancels it.
   */
  function sharedPull(
    image: string,
    creds: readonly RegistryCredential[],
    sandboxConfig: PodSandboxConfig,
    signal: AbortSignal | undefined,
    plog: Logger,
  ): Promise<string> {
    const credsHash = createHash('sha256')
      .update(JSON.stringify(creds.map(toAuthConfig)))
      .digest('hex');
    const key = `${image}\0${credsHash}`;
    let entry = inflight.get(key);
    if (entry === undefined) {
      const controller = new AbortController();
      const e: InflightPull = {
        controller,
        waiters: 0,
        promise: pullOnce(image, creds, sandboxConfig, controller.signal, plog).finally(() => {
          if (inflight.get(key) === e) inflight.delete(key);
        }),
      };
      // Every waiter observes the outcome through untilAborted; this only keeps a pull that all
      // waiters abandoned from becoming an unhandled rejection.
      e.promise.catch((err: unknown) => plog.debug('shared pull ended', { image, err: describeError(err) }));
      inflight.set(key, e);
      entry = e;
    } else {
      plog.debug('joining a pull in flight', { image });
    }
    const joined = entry;
    joined.waiters++;
    return untilAborted(joined.promise, signal).finally(() => {
      joined.waiters--;
      if (joined.waiters === 0 && !joined.controller.signal.aborted && signal?.aborted) {
        if (inflight.get(key) === joined) inflight.delete(key);
        joined.controller.abort(abortReason(signal));
      }
    });
  }

  return { pull: sharedPull };
}
