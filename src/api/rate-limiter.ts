import { abortReason, sleep, untilAborted } from '../util/abort.ts';

/**
 * Token bucket (client-go flowcontrol.NewTokenBucketRateLimiter): `qps` tokens per second, at most
 * `burst` saved up. `acquire` waits for a token, in FIFO order, or rejects when the signal aborts.
 */
export interface RateLimiter {
  acquire(signal?: AbortSignal): Promise<void>;
  /** Requests waiting for a token (for metrics and tests). */
  waiting(): number;
}

export function createRateLimiter(qps: number, burst: number, now: () => number = Date.now): RateLimiter {
  if (qps <= 0) return { acquire: () => Promise.resolve(), waiting: () => 0 };
  let tokens = burst;
  let last = now();
  let queue: Promise<void> = Promise.resolve();
  let waiting = 0;
  const refill = () => {
    const t = now();
    tokens = Math.min(burst, tokens + ((t - last) / 1000) * qps);
    last = t;
  };
  return {
    acquire(signal) {
      if (signal?.aborted) return Promise.reject(abortReason(signal));
      waiting++;
      // Chain so tokens go out in arrival order.
      const turn = queue.then(async () => {
        if (signal?.aborted) throw abortReason(signal); // a caller that gave up never takes a token
        refill();
        while (tokens < 1) {
          await sleep(Math.ceil(((1 - tokens) / qps) * 1000), signal);
          refill();
        }
        tokens -= 1;
      });
      queue = turn.catch(() => undefined);
      // A caller that gives up while queued is rejected at once, not when its turn comes.
      const mine = untilAborted(turn, signal);
      return mine.finally(() => {
        waiting--;
      });
    },
    waiting: () => waiting,
  };
}
