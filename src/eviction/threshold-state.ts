/**
 * The eviction manager's bookkeeping between two observations (upstream synchronize's first
 * half), as one pure step: which thresholds are crossed, which stay active until their minimum
 * reclaim is met, how long each has been crossed (soft grace periods), which node conditions are
 * reported (held for evictionPressureTransitionPeriod after the last crossing), and which
 * thresholds may drive an eviction now.
 */
import type { Observations } from './observations.ts';
import {
  SIGNAL_CONDITION,
  SIGNAL_RESOURCE,
  thresholdKey,
  thresholdQuantity,
  type PressureCondition,
  type Threshold,
} from './signals.ts';

export interface ThresholdState {
  /** Thresholds whose grace period was met at the last step (they stay until min reclaim is met). */
  readonly met: readonly Threshold[];
  /** When each currently crossed threshold was first seen crossed (monotonic ms), by thresholdKey. */
  readonly firstObservedAt: ReadonlyMap<string, number>;
  /** When each node condition was last observed (monotonic ms). */
  readonly conditionLastObservedAt: ReadonlyMap<PressureCondition, number>;
  readonly lastObservations: Observations;
}

export const INITIAL_THRESHOLD_STATE: ThresholdState = {
  met: [],
  firstObservedAt: new Map(),
  conditionLastObservedAt: new Map(),
  lastObservations: new Map(),
};

export interface StepResult {
  state: ThresholdState;
  /** Node conditions to report (observed within the transition period). */
  conditions: PressureCondition[];
  /** Crossed thresholds past their grace period whose signal was measured anew: act on these. */
  actionable: Threshold[];
}

/**
 * Thresholds crossed by the observations (upstream thresholdsMet). With `enforceMinReclaim` a
 * threshold counts as crossed until `available` exceeds its value plus its minimum reclaim.
 */
export function thresholdsMet(
  thresholds: readonly Threshold[],
  observations: Observations,
  enforceMinReclaim: boolean,
): Threshold[] {
  return thresholds.filter((t) => {
    const o = observations.get(t.signal);
    if (!o) return false;
    let q = thresholdQuantity(t.value, o.capacity);
    if (enforceMinReclaim && t.minReclaim) q += thresholdQuantity(t.minReclaim, o.capacity);
    return q > o.available;
  });
}

function merge(a: readonly Threshold[], b: readonly Threshold[]): Threshold[] {
  const keys = new Set(a.map(thresholdKey));
  return [...a, ...b.filter((t) => !keys.has(thresholdKey(t)))];
}

/** One step at `now`, monotonic ms (never the wall clock: a step would stretch or cut the periods). */
export function step(
  thresholds: readonly Threshold[],
  pressureTransitionPeriodMs: number,
  prev: ThresholdState,
  observations: Observations,
  now: number,
): StepResult {
  let crossed = thresholdsMet(thresholds, observations, false);
  if (prev.met.length > 0) crossed = merge(crossed, thresholdsMet(prev.met, observations, true));

  const firstObservedAt = new Map<string, number>();
  for (const t of crossed) {
    const k = thresholdKey(t);
    firstObservedAt.set(k, prev.firstObservedAt.get(k) ?? now);
  }

  const conditionLastObservedAt = new Map(prev.conditionLastObservedAt);
  for (const t of crossed) conditionLastObservedAt.set(SIGNAL_CONDITION[t.signal], now);
  const conditions: PressureCondition[] = [];
  for (const [c, at] of conditionLastObservedAt) {
    if (now - at < pressureTransitionPeriodMs) conditions.push(c);
    else conditionLastObservedAt.delete(c);
  }

  const met = crossed.filter((t) => now - (firstObservedAt.get(thresholdKey(t)) ?? now) >= t.gracePeriodMs);
  // Only act on a threshold whose signal was measured since the last step (upstream
  // thresholdsUpdatedStats): a stale observation must not evict twice. A measurement is new when
  // its time differs: upstream wants it later, and after the wall clock stepped back (the stats are
  // stamped with wall time) would not act on any signal until the clock caught up.
  const actionable = met.filter((t) => {
    const o = observations.get(t.signal);
    if (!o) return false;
    const last = prev.lastObservations.get(t.signal);
    return !last || o.time === 0 || o.time !== last.time;
  });
  return {
    state: { met, firstObservedAt, conditionLastObservedAt, lastObservations: observations },
    conditions: conditions.sort(),
    actionable,
  };
}

/**
 * Upstream byEvictionPriority + getReclaimableThreshold: memory signals first, then the others in
 * their given order; the first one with a resource to reclaim.
 */
export function thresholdToReclaim(actionable: readonly Threshold[]): Threshold | undefined {
  const memory = (t: Threshold): boolean =>
    t.signal === 'memory.available' || t.signal === 'allocatableMemory.available';
  const sorted = [...actionable.filter(memory), ...actionable.filter((t) => !memory(t))];
  return sorted.find((t) => SIGNAL_RESOURCE[t.signal] !== undefined);
}
