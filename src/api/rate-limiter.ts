import { abortReason, sleep, untilAborted } from '../util/abort.ts';
import { monotonicNow } from '../util/clock.ts';

/**
 * Token bucket (client-go flowcontrol.NewTokenBucketRateLimiter): `qps` tokens per second, at most
 * `burst` saved up. `acquire` waits for a token, in FIFO order, or rejects when the signal aborts.
 * Refills are measured on the monotonic clock (a time going back refills nothing): on the wall
 * clock, a 1 h backward step left the bucket 3600 × qps tokens short, so every request of the client
 * (the Lease's too) waited an hour.
 */
export interface RateLimiter {
  acquire(signal?: AbortSignal): Promise<void>;
  /** Requests waiting for a token (for metrics and tests). */
  waiting(): number;
}

export function createRateLimiter(qps: number, burst: number, now: () => number = monotonicNow): RateLimiter {
  if (qps <= 0) return { acquire: () => Promise.resolve(), waiting: () => 0 };
  let tokens = burst;
  let last = now();
  let queue: Promise<void> = Promise.resolve();
  let waiting = 0;
  const refill = () => {
    const t = now();
    tokens = Math.min(burst, tokens + (Math.max(0, t - last) / 1000) * qps);
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
