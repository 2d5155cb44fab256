/**
 * The one exponential back-off (upstream k8s.io/apimachinery wait.Backoff and client-go
 * flowcontrol.Backoff): a delay that starts at an initial value and doubles up to a cap. Three
 * shapes of it: `backoffDelay` (the delay of the n-th retry), `backoffSteps` (a retry loop's
 * successive delays) and `createBackoff` (a per-key table, for crash loops and image pulls: upstream
 * 10 s doubling to 300 s).
 */
import { BACKOFF_INITIAL_MS, BACKOFF_MAX_MS } from '../config/defaults.ts';
import { wallToMonotonic, type Clock } from './clock.ts';

/** How a back-off grows: `initialMs` first, multiplied by `factor` (2) each time, never above `maxMs`. */
export interface BackoffShape {
  initialMs: number;
  /** The cap; none when left out. */
  maxMs?: number;
  /** Upstream wait.Backoff Factor; 2 when left out. */
  factor?: number;
}

function grow(delayMs: number, shape: BackoffShape): number {
  return Math.min(delayMs * (shape.factor ?? 2), shape.maxMs ?? Infinity);
}

/** The delay before retry `attempt` (0 for the first): initialMs × factor^attempt, capped. */
export function backoffDelay(attempt: number, shape: BackoffShape): number {
  // The exponent is bounded so that a long outage's count cannot turn 0 × ∞ into NaN.
  const grown = shape.initialMs * (shape.factor ?? 2) ** Math.min(Math.max(attempt, 0), 64);
  return Math.min(grown, shape.maxMs ?? Infinity);
}

/** A retry loop's delays (upstream wait.Backoff.Step without jitter). */
export interface BackoffSteps {
  /** The delay to wait now: initialMs the first time, then each call's grows by the factor up to the cap. */
  step(): number;
  /** The next step() answers initialMs again (the thing retried worked). */
  reset(): void;
}

export function backoffSteps(shape: BackoffShape): BackoffSteps {
  let next = shape.initialMs;
  return {
    step() {
      const d = next;
      next = grow(next, shape);
      return d;
    },
    reset() {
      next = shape.initialMs;
    },
  };
}

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
      e.delayMs = grow(e.delayMs, { initialMs, maxMs });
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
