/**
 * The per-step breakdown of a tskubelet batch (issue 15): after the batch, every pod's startup
 * timeline is read from the kubelet's local socket (`/debug/pods/{ns}/{name}/timeline`) and cut
 * into phases, summarised as p50 / p99 across the pods. Reading happens after the batch's
 * latencies, CPU and ELD are taken, so it is outside the timed path.
 *
 * Why the local socket: the static scenario's tskubelet is standalone (no API server, so no
 * webhook authorization) and refuses anonymous HTTPS requests; the root-only local socket
 * (`<root-dir>/tskubelet.sock`) serves the whole API without credentials and costs no listener
 * (the read-only port no longer serves the timeline, as it serves upstream's routes only).
 */
import { connectNode, NodeApiError } from '../../src/cli/node/client.ts';
import type { PodTimeline, TimelineStepView } from '../../src/timeline/index.ts';
import { msText, pct, table } from './stats.ts';

/**
 * The phases of one pod's start, in order; together they cover `seen` → the last container start.
 * - queueing: seen by a source → RunPodSandbox issued (admission, the sync loop, the pod worker, the
 *   runtime pacer's turn).
 * - sandbox: RunPodSandbox (containerd sets the network up, CNI ADD, inside this call: the network
 *   is not measurable apart from it from the kubelet's side).
 * - before image: sandbox created → the last-started container's image check began (init
 *   containers run here, and containers started before it).
 * - image: its image check / pull.
 * - create: image ready → CreateContainer returned (container config: mounts, env; the pacer's turn).
 * - start: → StartContainer returned.
 * - status: container started → Running seen by the benchmark's watch (cluster only: the status
 *   manager, the PLEG, the API patch, the watch).
 */
export const PHASES = ['queueing', 'sandbox', 'before image', 'image', 'create', 'start', 'status'] as const;
export type Phase = (typeof PHASES)[number];

export type PodPhases = Partial<Record<Phase | 'total', number>>;

function first(
  steps: readonly TimelineStepView[],
  step: string,
  container?: string,
): TimelineStepView | undefined {
  return steps.find((s) => s.step === step && (container === undefined || s.container === container));
}

/**
 * One pod's phases in ms, from its timeline; `runningSeenAt` (wall ms) adds the status phase. A
 * phase whose steps are missing is left out. Offsets are monotonic; the status phase alone compares
 * wall clocks (the kubelet's and the benchmark's, on the same machine).
 */
export function podPhases(tl: PodTimeline, runningSeenAt?: number): PodPhases {
  const steps = tl.attempts.flatMap((a) => a.steps);
  const out: PodPhases = {};
  const seen = first(steps, 'seen');
  const requested = first(steps, 'sandbox-requested');
  const created = first(steps, 'sandbox-created');
  // The container whose start made the pod running: the last one started.
  let last: TimelineStepView | undefined;
  for (const s of steps) {
    if (s.step !== 'container-started' || s.container === undefined) continue;
    if (first(steps, 'container-started', s.container) !== s) continue;
    if (!last || s.offsetMs >= last.offsetMs) last = s;
  }
  const c = last?.container;
  const pullStarted = c === undefined ? undefined : first(steps, 'image-pull-started', c);
  const pullDone = c === undefined ? undefined : first(steps, 'image-pull-done', c);
  const containerCreated = c === undefined ? undefined : first(steps, 'container-created', c);
  const span = (from: TimelineStepView | undefined, to: TimelineStepView | undefined): number | undefined =>
    from && to ? to.offsetMs - from.offsetMs : undefined;
  const put = (phase: Phase | 'total', v: number | undefined): void => {
    if (v !== undefined && Number.isFinite(v)) out[phase] = v;
  };
  put('queueing', span(seen, requested));
  put('sandbox', span(requested, created));
  put('before image', span(created, pullStarted));
  put('image', span(pullStarted, pullDone));
  put('create', span(pullDone, containerCreated));
  put('start', span(containerCreated, last));
  put('total', span(seen, last));
  if (runningSeenAt !== undefined && last) put('status', runningSeenAt - Date.parse(last.at));
  return out;
}

export interface PhaseSummary {
  phase: Phase | 'total';
  /** Pods with this phase measured. */
  n: number;
  p50: number;
  p99: number;
}

/** Per phase (then the total), p50 / p99 across the pods that have it. */
export function breakdown(
  timelines: readonly PodTimeline[],
  runningSeenAt?: ReadonlyMap<string, number>,
): PhaseSummary[] {
  const per = timelines.map((tl) => podPhases(tl, runningSeenAt?.get(tl.name)));
  const out: PhaseSummary[] = [];
  for (const phase of [...PHASES, 'total'] as const) {
    const values = per.flatMap((p) => (p[phase] !== undefined ? [p[phase]] : [])).sort((a, b) => a - b);
    if (values.length === 0) continue;
    out.push({ phase, n: values.length, p50: pct(values, 50), p99: pct(values, 99) });
  }
  return out;
}

/** One batch's breakdown as a markdown table. */
export function breakdownTable(rows: readonly PhaseSummary[]): string {
  return table(
    ['phase', 'pods', 'p50 ms', 'p99 ms'],
    rows.map((r) => [
      r.phase === 'total' ? '**seen → started**' : r.phase,
      String(r.n),
      msText(r.p50),
      msText(r.p99),
    ]),
  );
}

export interface FetchedTimelines {
  timelines: PodTimeline[];
  /** Pods whose timeline could not be read (not found, an error, a timeout), with why. */
  missing: string[];
}

/**
 * Reads each pod's timeline from the read-only port, a few at a time, each within `timeoutMs`.
 * Never rejects: a pod that cannot be read is listed in `missing`.
 */
export async function fetchTimelines(
  socket: string,
  namespace: string,
  names: readonly string[],
  opts: { concurrency?: number; timeoutMs?: number } = {},
): Promise<FetchedTimelines> {
  const timelines: PodTimeline[] = [];
  const missing: string[] = [];
  const queue = [...names];
  const client = await connectNode({ socket });
  const worker = async (): Promise<void> => {
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
      const path = `/debug/pods/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/timeline`;
      try {
        timelines.push(await client.getJSON<PodTimeline>(path, AbortSignal.timeout(opts.timeoutMs ?? 5_000)));
      } catch (err) {
        missing.push(
          err instanceof NodeApiError
            ? `${name}: HTTP ${err.status}`
            : `${name}: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 4) }, () => worker()));
  return { timelines, missing };
}

/** The rows of one scenario, as bench-results' StartupRow holds them. */
interface BatchRow {
  runner: string;
  n: number;
  steps?: readonly PhaseSummary[];
  stepsMissing?: readonly string[];
}

/**
 * The markdown lines of a scenario's per-step breakdowns: a heading and a table per tskubelet batch
 * (N ascending); nothing when no batch has one.
 */
export function breakdownSections(rowsByN: ReadonlyMap<number, readonly BatchRow[]>): string[] {
  const out: string[] = [];
  for (const n of [...rowsByN.keys()].sort((a, b) => a - b)) {
    for (const r of rowsByN.get(n) ?? []) {
      if (!r.steps) continue;
      const missing = r.stepsMissing?.length ?? 0;
      if (r.steps.length === 0 && missing > 0) {
        // Not one pod read: an older build without the route (a tskubelet-base run), or a kubelet
        // gone before the read. One line, not an empty table.
        out.push(`**${r.runner}, N=${n}**: no timeline read (${r.stepsMissing?.[0] ?? ''})`, '');
        continue;
      }
      out.push(
        `**${r.runner}, N=${n}: where the time went** (from each pod's timeline${missing > 0 ? `; ${missing} pod(s) unread: ${r.stepsMissing?.slice(0, 3).join('; ')}` : ''})`,
        '',
        breakdownTable(r.steps),
        '',
      );
    }
  }
  if (out.length === 0) return [];
  return [
    "Per-step breakdown (issue 15): every pod's startup timeline (`/debug/pods/{ns}/{name}/timeline`, read after the batch from the read-only port), p50 / p99 across pods per phase; phases are consecutive and add up to seen → started per pod (percentiles do not add). queueing = seen by the source → RunPodSandbox issued (admission, sync loop, pod worker, pacer turn); sandbox = RunPodSandbox (CNI runs inside it: not separable from the kubelet); before image = sandbox → the last-started container's image check (init containers); image = image check / pull; create = image → CreateContainer done (config, pacer turn); start = StartContainer; status = started → Running seen by the watch (cluster only). Definitions: bench/lib/timeline-breakdown.ts.",
    '',
    ...out,
  ];
}
