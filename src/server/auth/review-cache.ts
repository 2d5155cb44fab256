/**
 * A bounded cache for TokenReview / SubjectAccessReview answers, with one lookup in flight per key:
 * 1,000 requests carrying the same token while the API server is slow cost one review, not 1,000.
 * Failures (the lookup rejected) are not cached; the caller decides what they mean. Expiry is on the
 * monotonic clock: after a backward wall step an allowed or denied answer would otherwise outlive
 * its TTL by the step (a revoked permission honoured for an hour).
 */
import { monotonicNow } from '../../util/clock.ts';
export interface ReviewCache<V> {
  /** The cached value, or the result of `lookup` (shared by concurrent callers of the same key). */
  get(key: string, lookup: () => Promise<V>): Promise<V>;
  readonly size: number;
}

export interface ReviewCacheOptions<V> {
  /** How long an answer stays valid; 0 = never cached (lookups still shared while in flight). */
  ttlMs: (value: V) => number;
  /** Entries beyond this are evicted oldest first. */
  maxEntries: number;
  /** Monotonic ms for the cache TTL; default util/clock's. */
  monotonic?: () => number;
}

export function createReviewCache<V>(opts: ReviewCacheOptions<V>): ReviewCache<V> {
  const now = opts.monotonic ?? monotonicNow;
  // A Map iterates in insertion order: the first key is the oldest entry.
  const entries = new Map<string, { value: V; expires: number }>();
  const inFlight = new Map<string, Promise<V>>();

  function remember(key: string, value: V): void {
    const ttl = opts.ttlMs(value);
    if (ttl <= 0) return;
    entries.delete(key);
    entries.set(key, { value, expires: now() + ttl });
    while (entries.size > opts.maxEntries) {
      const oldest = entries.keys().next();
      if (oldest.done) break;
      entries.delete(oldest.value);
    }
  }

  return {
    get(key, lookup) {
      const hit = entries.get(key);
      if (hit) {
        if (hit.expires > now()) return Promise.resolve(hit.value);
        entries.delete(key);
      }
      const pending = inFlight.get(key);
      if (pending) return pending;
      const p = lookup().then(
        (value) => {
          inFlight.delete(key);
          remember(key, value);
          return value;
        },
        (err: unknown) => {
          inFlight.delete(key);
          throw err;
        },
      );
      inFlight.set(key, p);
      return p;
    },
    get size() {
      return entries.size;
    },
  };
}
