/**
 * The kubelet's two clocks. The wall clock (`Date.now()`) can step — an NTP correction, a VM
 * resumed after hours, an operator setting the date — forwards or backwards by any amount; the
 * monotonic clock (`performance.now()`, libuv's clock behind every timer) never does.
 *
 * - Intervals, periods, deadlines, TTLs, back-off windows and the ordering of the kubelet's own
 *   events are measured on the monotonic clock (upstream gets this for free: Go's `time.Now()`
 *   carries a monotonic reading that `Sub`/`Since`/`Before` use).
 * - Timestamps that leave the process (the API's startedAt, lastTransitionTime, renewTime, event
 *   times, file names) are wall time, as are the runtime's own stamps (a container's finishedAt).
 *   A duration between a wall stamp and now is clamped at 0: a stamp "in the future" means the
 *   clock stepped back, never a negative age.
 */
export interface Clock {
  /** Wall time, ms since the Unix epoch. May step. */
  readonly now: () => number;
  /** Monotonic ms from an arbitrary origin (this process's start). Never steps, never goes back. */
  readonly monotonic: () => number;
}

export const wallNow = (): number => Date.now();
export const monotonicNow = (): number => performance.now();

export const systemClock: Clock = { now: wallNow, monotonic: monotonicNow };

/** ms elapsed since the wall stamp `stampMs`, never negative (a stamp ahead of now reads as 0). */
export function wallAge(stampMs: number, nowMs: number): number {
  return Math.max(0, nowMs - stampMs);
}

/**
 * A wall stamp (e.g. from the runtime) placed on the monotonic timeline as of now: the instant that
 * lies `wallAge` before the current monotonic reading. Pin the answer the first time a stamp is
 * seen: converting again after a wall step would move it.
 */
export function wallToMonotonic(stampMs: number, clock: Clock): number {
  return clock.monotonic() - wallAge(stampMs, clock.now());
}
