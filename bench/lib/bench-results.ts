/**
 * What bench/run.ts measures, as data: one row per batch, steady-state window and relist sample,
 * collected by the scenarios (scenario-*.ts) and rendered by report.ts and scale-report.ts.
 */
import type { KubeletKind } from '../../test/kit/kubelets.ts';
import type { UsageSummary } from './proc.ts';
import type { ApiLoadRow } from './apiload.ts';
import { summarize, type Summary } from './stats.ts';
import type { PhaseSummary } from './timeline-breakdown.ts';

export interface Teardown {
  /** Per pod: delete → no ready sandbox and no running container. */
  stopped: number[];
  /** Per pod: delete → sandbox gone from the runtime (pods not removed within the cap are left out). */
  removed: number[];
  notRemoved: number;
  /** How long removal was waited for (from the delete). */
  capMs: number;
}

/** tskubelet's event-loop delay over a period (bench/lib/eld-probe.ts), ms; its V8 heap, MiB. */
export interface Eld {
  p50: number;
  p99: number;
  max: number;
  /** process.memoryUsage() at the end of the period, MiB. */
  heapUsed?: number;
  heapTotal?: number;
  external?: number;
}

export interface StartupRow {
  runner: string;
  n: number;
  /** Per pod: created/written → running (static: CRI startedAt; cluster: Running seen by the watch). */
  latencies: number[];
  /** cluster only: created → CRI startedAt. */
  criLatencies?: number[];
  /** Per pod: created/written → its sandbox's CRI createdAt (the kubelet's reaction and queueing). */
  toSandbox?: number[];
  /** first write/create → last pod running. */
  batchMs: number;
  failed: number;
  usage?: UsageSummary;
  eld?: Eld;
  teardown?: Teardown;
  /** Machine-wide busy CPU (cores) during the batch: everything, this run included. */
  hostBusy?: number;
  /**
   * tskubelet only: the batch's per-step breakdown from the pods' timelines, read after the batch
   * (timeline-breakdown.ts); `stepsMissing` lists pods whose timeline could not be read.
   */
  steps?: PhaseSummary[];
  stepsMissing?: string[];
}

export interface SteadyRow {
  kubelet: KubeletKind;
  pods: number;
  usage: UsageSummary;
  containerd: UsageSummary;
  eld?: Eld;
  hostBusy: number;
  /** Open fds at the end of the window (/proc/<pid>/fd). */
  fds?: { kubelet: number; containerd: number };
}

/** cri: ListPodSandbox + ListContainers from the bench; pleg: tskubelet's relist code in the bench; metric: upstream's own histogram. */
export type RelistSource = 'cri' | 'pleg' | 'metric';

export interface RelistRow {
  what: string;
  kubelet: KubeletKind;
  pods: number;
  source: RelistSource;
  stats: Summary | { p50: number; p99: number; n: number; max: number };
}

export interface BenchResults {
  floor: Map<number, StartupRow[]>;
  static: Map<number, StartupRow[]>;
  cluster: Map<number, StartupRow[]>;
  steady: SteadyRow[];
  relist: RelistRow[];
  steadyTeardown: StartupRow[];
  apiload: ApiLoadRow[];
  failures: string[];
  loads: string[];
}

export function createResults(): BenchResults {
  return {
    floor: new Map(),
    static: new Map(),
    cluster: new Map(),
    steady: [],
    relist: [],
    steadyTeardown: [],
    apiload: [],
    failures: [],
    loads: [],
  };
}

export function pushRow<K>(m: Map<K, StartupRow[]>, k: K, row: StartupRow): void {
  m.set(k, [...(m.get(k) ?? []), row]);
}

export interface FloorBest {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  batch: number;
}

/** Each percentile's minimum over the floor's concurrency levels at N = `n`. */
export function floorBest(results: Pick<BenchResults, 'floor'>, n: number): FloorBest | undefined {
  const rows = results.floor.get(n);
  if (!rows || rows.length === 0) return undefined;
  const s = rows.map((r) => summarize(r.latencies));
  const min = (f: (x: Summary) => number) => Math.min(...s.map(f));
  return {
    p50: min((x) => x.p50),
    p90: min((x) => x.p90),
    p99: min((x) => x.p99),
    max: min((x) => x.max),
    batch: Math.min(...rows.map((r) => r.batchMs)),
  };
}

/** The N values measured, ascending. */
export function sortedKeys<V>(m: ReadonlyMap<number, V>): number[] {
  return [...m.keys()].sort((a, b) => a - b);
}
