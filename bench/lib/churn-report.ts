/**
 * The churn benchmark's results: the series (with the tolerance that decides "flat"), the summary
 * table and verdict, one SVG chart per series with every kubelet on the same axes, and the raw
 * samples as JSON. Pure: it gets the runs and returns text; bench/churn.ts writes the files.
 */
import type { KubeletKind } from '../../test/kit/kubelets.ts';
import type { ChurnPlan } from './churn-schedule.ts';
import type { ChurnSample } from './churn-sample.ts';
import { lineChart, type ChartSeries } from './svg-chart.ts';
import { summarizeSeries, type SeriesSummary, type Tolerance } from './trend.ts';
import { table } from './stats.ts';

export interface ChurnRun {
  kind: KubeletKind;
  /** Samples without their pod names (those only feed `podsSeen`). */
  samples: Omit<ChurnSample, 'podNames'>[];
  podsCreated: number;
  /** Distinct pods whose sandbox some sample saw: a lower bound on the pods the kubelet started. */
  podsSeen: number;
  /** Rounds whose manifests were written more than 1 s late (the bench process starved). */
  lateRounds: number;
  error?: string;
}

export interface SeriesDef {
  /** File-name slug. */
  key: string;
  title: string;
  unit: string;
  value: (s: ChurnRun['samples'][number]) => number;
  /** A dashed companion line per kubelet (e.g. the running subset of the containers). */
  sub?: { label: string; value: (s: ChurnRun['samples'][number]) => number };
  tolerance: Tolerance;
  digits: number;
}

const MiB = 2 ** 20;

export const SERIES: readonly SeriesDef[] = [
  {
    key: 'containers',
    title: "containerd's containers (dashed: running)",
    unit: 'containers',
    value: (s) => s.containers,
    sub: { label: 'running', value: (s) => s.containersRunning },
    tolerance: { absolute: 2, relative: 0.05 },
    digits: 0,
  },
  {
    key: 'sandboxes',
    title: "containerd's pod sandboxes (dashed: ready)",
    unit: 'sandboxes',
    value: (s) => s.sandboxes,
    sub: { label: 'ready', value: (s) => s.sandboxesReady },
    tolerance: { absolute: 2, relative: 0.05 },
    digits: 0,
  },
  {
    key: 'root-bytes',
    title: "The kubelet's root dir: size of its files",
    unit: 'MiB',
    value: (s) => s.rootBytes / MiB,
    tolerance: { absolute: 1, relative: 0.05 },
    digits: 2,
  },
  {
    key: 'root-files',
    title: "The kubelet's root dir: entries (files, dirs, links)",
    unit: 'entries',
    value: (s) => s.rootFiles,
    tolerance: { absolute: 20, relative: 0.05 },
    digits: 0,
  },
  {
    key: 'root-mounts',
    title: 'Mounts under the root dir (emptyDir tmpfs)',
    unit: 'mounts',
    value: (s) => s.rootMounts,
    tolerance: { absolute: 2, relative: 0.05 },
    digits: 0,
  },
  {
    key: 'log-bytes',
    title: 'Pod log directories (/var/log/pods): size',
    unit: 'KiB',
    value: (s) => s.logBytes / 1024,
    tolerance: { absolute: 256, relative: 0.05 },
    digits: 1,
  },
  {
    key: 'log-files',
    title: 'Pod log directories (/var/log/pods): entries',
    unit: 'entries',
    value: (s) => s.logFiles,
    tolerance: { absolute: 20, relative: 0.05 },
    digits: 0,
  },
  {
    key: 'rss',
    title: "The kubelet's resident memory (VmRSS)",
    unit: 'MiB',
    value: (s) => s.rssKiB / 1024,
    tolerance: { absolute: 4, relative: 0.05 },
    digits: 1,
  },
  {
    key: 'heap',
    title: "The kubelet's heap: V8 heapUsed, Go heap_alloc (dashed: heapTotal, heap_inuse)",
    unit: 'MiB',
    value: (s) => s.heapUsedMiB,
    sub: { label: 'total / inuse', value: (s) => s.heapTotalMiB },
    tolerance: { absolute: 2, relative: 0.05 },
    digits: 1,
  },
  {
    key: 'cpu',
    title: "The kubelet's CPU (mean over each 10 s)",
    unit: 'cores',
    value: (s) => s.cpuCores,
    tolerance: { absolute: 0.02, relative: 0.1 },
    digits: 3,
  },
  {
    key: 'fds',
    title: "The kubelet's open file descriptors",
    unit: 'fds',
    value: (s) => s.fds,
    tolerance: { absolute: 3, relative: 0.05 },
    digits: 0,
  },
  {
    key: 'pods',
    title: 'Pods the kubelet reports on its read-only /pods',
    unit: 'pods',
    value: (s) => s.pods,
    tolerance: { absolute: 2, relative: 0.05 },
    digits: 0,
  },
];

const COLORS: Record<KubeletKind, string> = {
  tskubelet: '#1f77b4',
  'tskubelet-unpaced': '#2ca02c',
  'tskubelet-base': '#ff7f0e',
  upstream: '#d62728',
};

export function fmt(v: number, digits: number): string {
  return Number.isFinite(v) ? v.toFixed(digits) : '—';
}

/** A signed trend ("+1.20", "-0.40", "0"). */
function signed(v: number, digits: number): string {
  if (!Number.isFinite(v)) return '—';
  const s = v.toFixed(digits);
  return v > 0 && Number(s) !== 0 ? `+${s}` : Number(s) === 0 ? '0' : s;
}

/** The samples in the fitted window: churn phase, after the warm-up. */
export function fitted(plan: ChurnPlan, run: ChurnRun): ChurnRun['samples'] {
  return run.samples.filter((s) => s.phase === 'churn' && s.t >= plan.warmupS);
}

export interface SeriesResult {
  def: SeriesDef;
  kind: KubeletKind;
  baseline: number;
  summary: SeriesSummary;
  afterDrain: number;
}

export function seriesResults(plan: ChurnPlan, runs: readonly ChurnRun[]): SeriesResult[] {
  const out: SeriesResult[] = [];
  for (const def of SERIES) {
    for (const run of runs) {
      const drain = run.samples.filter((s) => s.phase === 'drain');
      const last = drain[drain.length - 1];
      out.push({
        def,
        kind: run.kind,
        baseline: ((s) => (s ? def.value(s) : NaN))(run.samples.find((s) => s.phase === 'baseline')),
        summary: summarizeSeries(
          fitted(plan, run).map((s) => ({ t: s.t, v: def.value(s) })),
          def.tolerance,
        ),
        afterDrain: last ? def.value(last) : NaN,
      });
    }
  }
  return out;
}

export function summaryTable(results: readonly SeriesResult[]): string {
  return table(
    [
      'series',
      'kubelet',
      'idle before',
      'start',
      'middle',
      'end',
      'max',
      'trend / 10 min',
      'flat within ±',
      'verdict',
      'after drain',
    ],
    results.map((r) => {
      const d = r.def.digits;
      const s = r.summary;
      return [
        `${r.def.key} (${r.def.unit})`,
        r.kind,
        fmt(r.baseline, d),
        fmt(s.start, d),
        fmt(s.middle, d),
        fmt(s.end, d),
        fmt(s.max, d),
        signed(s.slopePer10Min, d + 1),
        fmt(s.allowedPer10Min, d + 1),
        s.verdict === 'flat' || s.verdict === 'n/a' ? s.verdict : `**${s.verdict}**`,
        fmt(r.afterDrain, d),
      ];
    }),
  );
}

/** One line per kubelet: "flat" or the series that are not, with their trend (series without data: n/a). */
export function verdictLines(results: readonly SeriesResult[], kinds: readonly KubeletKind[]): string[] {
  return kinds.map((kind) => {
    const mine = results.filter((r) => r.kind === kind);
    const judged = mine.filter((r) => r.summary.verdict !== 'n/a');
    const missing = mine.filter((r) => r.summary.verdict === 'n/a').map((r) => r.def.key);
    const na = missing.length ? ` (no data: ${missing.join(', ')})` : '';
    const off = judged.filter((r) => r.summary.verdict !== 'flat');
    if (off.length === 0) return `${kind}: flat — all ${judged.length} series within tolerance${na}`;
    const what = off.map(
      (r) =>
        `${r.def.key} ${r.summary.verdict} (${signed(r.summary.slopePer10Min, r.def.digits + 1)} ${r.def.unit} / 10 min, tolerance ±${fmt(r.summary.allowedPer10Min, r.def.digits + 1)})`,
    );
    return `${kind}: NOT flat — ${what.join('; ')}${na}`;
  });
}

/** The chart of one series, every kubelet on the same axes; x in minutes from the first round. */
export function seriesChart(def: SeriesDef, plan: ChurnPlan, runs: readonly ChurnRun[]): string {
  const series: ChartSeries[] = [];
  for (const run of runs) {
    const pts = (f: (s: ChurnRun['samples'][number]) => number) =>
      run.samples.map((s) => ({ x: s.t / 60, y: f(s) }));
    series.push({ label: run.kind, color: COLORS[run.kind], points: pts(def.value) });
    if (def.sub) {
      series.push({
        label: `${run.kind} ${def.sub.label}`,
        color: COLORS[run.kind],
        dash: '6 4',
        points: pts(def.sub.value),
      });
    }
  }
  return lineChart({
    title: def.title,
    xLabel: 'minutes since the first round',
    yLabel: def.unit,
    series,
    markers: [{ x: plan.churnS / 60, label: 'churn ends' }],
    shadeUntil: { x: plan.warmupS / 60, label: 'warm-up (not in the trend)' },
    formatY: (v) => String(Number(v.toPrecision(4))),
  });
}
