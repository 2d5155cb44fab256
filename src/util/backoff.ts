import { BACKOFF_INITIAL_MS, BACKOFF_MAX_MS } from '../config/defaults.ts';
import { wallToMonotonic, type Clock } from './clock.ts';

/**
 * Per-key exponential back-off (upstream `flowcontrol.Backoff`): the first failure waits `initialMs`,
 * each further one doubles up to `maxMs`. An entry not touched for 2×max is forgotten (upstream GC),
 * so a container that ran fine for ten minutes starts again from the initial delay.
 *
 * Every time given to or kept by the table is on the monotonic clock (util/clock), so a wall step
 * neither holds a key in back-off for hours nor ends every window at once. An event the runtime
 * stamped with wall time (a container's finishedAt) is put on that timeline by `eventTime`.
 */
export interface Backoff {
  /**
   * Records a failure for `key` whose event (e.g. container finish) happened at `eventMs`; returns the
   * new delay. As upstream, the first failure only arms the entry, so the first restart is immediate.
   */
  next(key: string, eventMs: number, nowMs: number): number;
  /** True while `nowMs - eventMs` is inside the key's current back-off window. */
  isInBackoffSince(key: string, eventMs: number, nowMs: number): boolean;
  /**
   * The monotonic instant of an event the wall clock stamped (`stampMs`), pinned per key: the same
   * stamp always answers the same instant, as placed when first asked (its age then, never
   * negative), so a later wall step does not move the window. A stamp ahead of the wall clock (it
   * stepped back since) counts as just now.
   */
  eventTime(key: string, stampMs: number, clock: Clock): number;
  /** The current delay for key (0 if none). */
  get(key: string): number;
  reset(key: string): void;
  /** Forgets entries idle for more than 2×max. */
  gc(nowMs: number): void;
  /** Serializable view (monotonic times), for restart re-adoption and tests. */
  entries(): ReadonlyMap<string, { delayMs: number; lastUpdateMs: number }>;
  /** Puts back an entry saved by a previous kubelet process (its time made monotonic by the caller). */
  restore(key: string, delayMs: number, lastUpdateMs: number): void;
}

export function createBackoff(initialMs = BACKOFF_INITIAL_MS, maxMs = BACKOFF_MAX_MS): Backoff {
  const table = new Map<string, { delayMs: number; lastUpdateMs: number }>();
  /** Per key, the last event stamp placed on the monotonic timeline. */
  const pinned = new Map<string, { stampMs: number; atMs: number }>();
  // Upstream hasExpired: the event is more than 2×max after the entry's last update.
  const expired = (e: { lastUpdateMs: number }, eventMs: number) => eventMs - e.lastUpdateMs > 2 * maxMs;
  return {
    next(key, eventMs, nowMs) {
      const e = table.get(key);
      if (!e || expired(e, eventMs)) {
        table.set(key, { delayMs: initialMs, lastUpdateMs: nowMs });
        return initialMs;
      }
      e.delayMs = Math.min(e.delayMs * 2, maxMs);
      e.lastUpdateMs = nowMs;
      return e.delayMs;
    },
    isInBackoffSince(key, eventMs, nowMs) {
      const e = table.get(key);
      if (!e || expired(e, eventMs)) return false;
      return nowMs - eventMs < e.delayMs;
    },
    eventTime(key, stampMs, clock) {
      const p = pinned.get(key);
      if (p?.stampMs === stampMs) return p.atMs;
      const atMs = wallToMonotonic(stampMs, clock);
      pinned.set(key, { stampMs, atMs });
      return atMs;
    },
    get(key) {
      return table.get(key)?.delayMs ?? 0;
    },
    reset(key) {
      table.delete(key);
      pinned.delete(key);
    },
    gc(nowMs) {
      for (const [k, e] of table) if (expired(e, nowMs)) table.delete(k);
      for (const [k, p] of pinned) if (!table.has(k) && nowMs - p.atMs > 2 * maxMs) pinned.delete(k);
    },
    entries() {
      return table;
    },
    restore(key, delayMs, lastUpdateMs) {
      table.set(key, { delayMs: Math.min(Math.max(delayMs, initialMs), maxMs), lastUpdateMs });
    },
  };
}
