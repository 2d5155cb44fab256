/**
 * The churn benchmark's timetable. Round r (r = 0 … rounds−1) runs at r × interval: it removes the
 * manifests of round r−1 and writes round r's. At rounds × interval ("churn ends") the last round's
 * manifests are removed, and the drain follows. Samples are taken once before the first round
 * (t = 0, the idle baseline) and then half an interval after each round (5 s, 15 s, …) until the
 * drain ends, so a sample never coincides with a round's writes.
 */
import type { ChurnPhase } from './churn-sample.ts';

export interface ChurnPlan {
  intervalS: number;
  rounds: number;
  /** rounds × interval: when the last manifests are removed. */
  churnS: number;
  drainS: number;
  /** Samples before this are left out of the trend (the counts and the heap are still filling up). */
  warmupS: number;
  /** Sample times, seconds from the first round. */
  sampleTimes: number[];
}

/**
 * "1800", "1800s", "30m", "1h" → seconds. Anything else throws, so a typo never runs a
 * 30-minute benchmark with the wrong length.
 */
export function parseDurationS(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(text.trim());
  if (!m) throw new Error(`not a duration: "${text}" (e.g. 180, 180s, 30m)`);
  const n = Number(m[1]) * ({ s: 1, m: 60, h: 3600 }[m[2] ?? 's'] ?? 1);
  if (!(n > 0)) throw new Error(`duration must be positive: "${text}"`);
  return n;
}

/**
 * The warm-up left out of the trend: a fifth of the churn, at least one minute (a full container-GC
 * period, so the dead-container sawtooth is in steady state) and at most five, never more than
 * half the churn.
 */
export function warmupFor(churnS: number): number {
  return Math.min(churnS / 2, Math.max(60, Math.min(300, Math.round(churnS / 5))));
}

export function churnPlan(durationS: number, drainS: number, intervalS = 10): ChurnPlan {
  const rounds = Math.max(1, Math.floor(durationS / intervalS));
  const churnS = rounds * intervalS;
  const sampleTimes = [0];
  for (let t = intervalS / 2; t < churnS + drainS; t += intervalS) sampleTimes.push(t);
  return { intervalS, rounds, churnS, drainS, warmupS: warmupFor(churnS), sampleTimes };
}

export function phaseAt(plan: ChurnPlan, t: number): ChurnPhase {
  if (t === 0) return 'baseline';
  return t < plan.churnS ? 'churn' : 'drain';
}
