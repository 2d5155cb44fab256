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
