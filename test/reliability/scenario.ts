/**
 * A fault scenario of the reliability suite: it does something bad to a real kubelet on the bed,
 * `reps` times, and returns what it checked. Scenarios run one at a time (they share the bed);
 * each cleans up after itself, whatever happened.
 */
import type { Logger } from '../../src/util/logger.ts';
import type { ScenarioResult } from './report.ts';

export interface ScenarioContext {
  /** Repetitions to run (the scenario's quick or full count, or an override). */
  reps: number;
  mode: 'quick' | 'full';
  logger: Logger;
  signal: AbortSignal;
}

export interface Scenario {
  id: string;
  /** One line: what is done to the kubelet. */
  fault: string;
  reps: { quick: number; full: number };
  /** Whether it needs the cluster bed (etcd + kube-apiserver …), which is started when missing. */
  cluster: boolean;
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}

/** A fuzzed input surface: `runs` generated inputs through the real parser/validator/handler. */
export interface FuzzSurface {
  id: string;
  title: string;
  run(opts: { runs: number; seed?: number }): Promise<import('./report.ts').FuzzResult>;
}

/**
 * Runs a scenario at its quick repetition count (what CI runs) and returns the checks that failed,
 * each as one line; throws if it checked nothing.
 */
export async function failedQuickChecks(s: Scenario, logger: Logger): Promise<string[]> {
  const r = await s.run({ reps: s.reps.quick, mode: 'quick', logger, signal: new AbortController().signal });
  if (r.checks.length === 0) throw new Error(`scenario ${s.id} checked nothing`);
  return r.checks.filter((c) => !c.ok).map((c) => `${c.what}: expected ${c.expected}, saw ${c.observed}`);
}
