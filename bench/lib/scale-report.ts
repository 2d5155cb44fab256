/**
 * How each kubelet's cost grows with the pod count (issue 14, "Scale beyond the benchmark's N"):
 * per-pod figures at steady state (RSS, CPU, relist, fds) and per batch (batch time, kubelet CPU), and
 * SVG line charts of startup p50/p99 vs N, steady-state RSS and CPU vs pods, and relist time vs pods.
 * Pure: bench/run.ts writes the charts beside the results file.
 */
import type { KubeletKind } from '../../test/kit/kubelets.ts';
import {
  floorBest,
  sortedKeys,
  type BenchResults,
  type RelistRow,
  type StartupRow,
} from './bench-results.ts';
import { lineChart, type ChartSeries } from './svg-chart.ts';
import { mib, msText, sec, summarize, table } from './stats.ts';

export type ChartKey = 'startup-static' | 'startup-cluster' | 'steady-rss' | 'steady-cpu' | 'relist';

const TITLES: Record<ChartKey, string> = {
  'startup-static': 'Static-pod batch startup vs N (written → container started)',
  'startup-cluster': 'Cluster batch startup vs N (API create → Running seen by a watch)',
  'steady-rss': 'Steady state: kubelet RSS (max over the window) vs pods',
  'steady-cpu': 'Steady state: kubelet CPU vs pods (solid: mean, dashed: p95)',
  relist: 'Relist time vs pods (p50 solid, p99 dashed)',
};

const COLORS: Record<KubeletKind | 'floor' | 'cri', string> = {
  tskubelet: '#1f77b4',
  'tskubelet-unpaced': '#2ca02c',
  'tskubelet-base': '#ff7f0e',
  upstream: '#d62728',
  floor: '#7f7f7f',
  cri: '#9467bd',
};
const DASH = '6 4';

function colorOf(runner: string): string {
  return runner in COLORS ? COLORS[runner as KubeletKind] : COLORS.floor;
}

/** The markdown image line for a chart file. */
export function chartLink(key: ChartKey, file: string): string {
  return `![${TITLES[key]}](${file})`;
}

/** (value − idle) / pods; NaN for 0 pods or a missing value. */
export function perPod(value: number, idle: number, pods: number): number {
  return pods > 0 && Number.isFinite(value) && Number.isFinite(idle) ? (value - idle) / pods : NaN;
}

/** Kubelets in the order first measured. */
function kindsIn<T>(rows: readonly T[], kind: (r: T) => string): string[] {
  return [...new Set(rows.map(kind))];
}

function startupSeries(
  results: BenchResults,
  m: Map<number, StartupRow[]>,
  withFloor: boolean,
): ChartSeries[] {
  const rows = sortedKeys(m).flatMap((n) => m.get(n) ?? []);
  const series: ChartSeries[] = [];
  for (const runner of kindsIn(rows, (r) => r.runner)) {
    const mine = rows.filter((r) => r.runner === runner && r.latencies.length > 0);
    const pts = (q: 'p50' | 'p99') => mine.map((r) => ({ x: r.n, y: summarize(r.latencies)[q] / 1000 }));
    const color = colorOf(runner);
    series.push(
      { label: `${runner} p50`, color, points: pts('p50'), showPoints: true },
      { label: `${runner} p99`, color, dash: DASH, points: pts('p99'), showPoints: true },
    );
  }
  if (withFloor) {
    const best = sortedKeys(results.floor).flatMap((n) => {
      const b = floorBest(results, n);
      return b ? [{ n, ...b }] : [];
    });
    if (best.length > 0) {
      const pts = (q: 'p50' | 'p99') => best.map((b) => ({ x: b.n, y: b[q] / 1000 }));
      series.push(
        { label: 'floor (best of) p50', color: COLORS.floor, points: pts('p50'), showPoints: true },
        {
          label: 'floor (best of) p99',
          color: COLORS.floor,
          dash: DASH,
          points: pts('p99'),
          showPoints: true,
        },
      );
    }
  }
  return series;
}

function relistSeries(rows: readonly RelistRow[]): ChartSeries[] {
  const series: ChartSeries[] = [];
  for (const kubelet of kindsIn(rows, (r) => r.kubelet)) {
    for (const source of ['pleg', 'metric', 'cri'] as const) {
      const mine = rows.filter((r) => r.kubelet === kubelet && r.source === source);
      if (mine.length === 0) continue;
      const what = source === 'cri' ? `CRI list calls (${kubelet} running)` : kubelet;
      const color = source === 'cri' ? COLORS.cri : colorOf(kubelet);
      const pts = (q: 'p50' | 'p99') => mine.map((r) => ({ x: r.pods, y: r.stats[q] }));
      series.push({ label: `${what} p50`, color, points: pts('p50'), showPoints: true });
      if (source !== 'cri')
        series.push({ label: `${what} p99`, color, dash: DASH, points: pts('p99'), showPoints: true });
    }
  }
  return series;
}

/** Every chart the results can draw as a curve (at least two pod counts), keyed for file names. */
export function scaleCharts(results: BenchResults): { key: ChartKey; svg: string }[] {
  const out: { key: ChartKey; svg: string }[] = [];
  const add = (
    key: ChartKey,
    xs: readonly number[],
    xLabel: string,
    yLabel: string,
    series: ChartSeries[],
  ) => {
    if (new Set(xs).size < 2 || series.length === 0) return;
    out.push({
      key,
      svg: lineChart({
        title: TITLES[key],
        xLabel,
        yLabel,
        series,
        formatY: (v) => String(Number(v.toPrecision(4))),
      }),
    });
  };
  add(
    'startup-static',
    sortedKeys(results.static),
    'pods in the batch (N)',
    'seconds',
    startupSeries(results, results.static, true),
  );
  add(
    'startup-cluster',
    sortedKeys(results.cluster),
    'pods in the batch (N)',
    'seconds',
    startupSeries(results, results.cluster, false),
  );
  const steadyKinds = kindsIn(results.steady, (r) => r.kubelet);
  const steadyOf = (k: string) => results.steady.filter((r) => r.kubelet === k);
  add(
    'steady-rss',
    results.steady.map((r) => r.pods),
    'pods held',
    'MiB',
    steadyKinds.map((k) => ({
      label: k,
      color: colorOf(k),
      showPoints: true,
      points: steadyOf(k).map((r) => ({ x: r.pods, y: r.usage.rssMaxKiB / 1024 })),
    })),
  );
  add(
    'steady-cpu',
    results.steady.map((r) => r.pods),
    'pods held',
    'cores',
    steadyKinds.flatMap((k) => [
      {
        label: `${k} mean`,
        color: colorOf(k),
        showPoints: true,
        points: steadyOf(k).map((r) => ({ x: r.pods, y: r.usage.cpuSecTotal / r.usage.seconds })),
      },
      {
        label: `${k} p95`,
        color: colorOf(k),
        dash: DASH,
        showPoints: true,
        points: steadyOf(k).map((r) => ({ x: r.pods, y: r.usage.cpuP95 })),
      },
    ]),
  );
  add(
    'relist',
    results.relist.map((r) => r.pods),
    'pods held',
    'ms',
    relistSeries(results.relist),
  );
  return out;
}

function num(v: number, digits: number): string {
  return Number.isFinite(v) ? v.toFixed(digits) : '—';
}

/** The kubelet's own relist at `pods`: tskubelet's PLEG code timed from the bench, upstream's histogram. */
function ownRelist(results: BenchResults, kubelet: string, pods: number): RelistRow | undefined {
  return results.relist.find(
    (r) => r.kubelet === kubelet && r.pods === pods && (r.source === 'pleg' || r.source === 'metric'),
  );
}

function steadyGrowth(results: BenchResults): string {
  const rows: string[][] = [];
  for (const k of kindsIn(results.steady, (r) => r.kubelet)) {
    const mine = results.steady.filter((r) => r.kubelet === k).sort((a, b) => a.pods - b.pods);
    const idle = mine.find((r) => r.pods === 0);
    const idleRelist = ownRelist(results, k, 0);
    let prev = idle;
    for (const r of mine) {
      const cpu = r.usage.cpuSecTotal / r.usage.seconds;
      const idleCpu = idle ? idle.usage.cpuSecTotal / idle.usage.seconds : NaN;
      const relist = ownRelist(results, k, r.pods);
      const marginal =
        prev && prev !== r ? (r.usage.rssMaxKiB - prev.usage.rssMaxKiB) / (r.pods - prev.pods) : NaN;
      rows.push([
        String(r.pods),
        k,
        mib(r.usage.rssMaxKiB),
        num(perPod(r.usage.rssMaxKiB, idle?.usage.rssMaxKiB ?? NaN, r.pods), 0),
        num(marginal, 0),
        num(cpu * 1000, 1),
        num(perPod(cpu * 1000, idleCpu * 1000, r.pods), 3),
        relist ? msText(relist.stats.p50) : '—',
        num(perPod((relist?.stats.p50 ?? NaN) * 1000, (idleRelist?.stats.p50 ?? NaN) * 1000, r.pods), 1),
        r.fds ? num(perPod(r.fds.kubelet, idle?.fds?.kubelet ?? NaN, r.pods), 2) : '—',
        r.fds ? num(perPod(r.fds.containerd, idle?.fds?.containerd ?? NaN, r.pods), 2) : '—',
      ]);
      prev = r;
    }
  }
  return table(
    [
      'pods',
      'kubelet',
      'RSS max MiB',
      'RSS per pod KiB (vs 0 pods)',
      'RSS per added pod KiB (vs previous row)',
      'CPU mean millicores',
      'CPU per pod millicores (vs 0 pods)',
      'own relist p50 ms',
      'relist per pod µs (vs 0 pods)',
      'kubelet fds per pod',
      'containerd fds per pod',
    ],
    rows,
  );
}

function startupGrowth(results: BenchResults): string {
  const rows: string[][] = [];
  const add = (mode: string, m: Map<number, StartupRow[]>) => {
    for (const n of sortedKeys(m)) {
      for (const r of m.get(n) ?? []) {
        const s = summarize(r.latencies);
        rows.push([
          mode,
          String(n),
          r.runner,
          sec(s.p50),
          sec(s.p99),
          num(r.batchMs / n, 0),
          r.usage ? num((r.usage.cpuSecTotal * 1000) / n, 1) : '—',
          r.usage ? mib(r.usage.rssMaxKiB) : '—',
        ]);
      }
      const best = mode === 'static' ? floorBest(results, n) : undefined;
      if (best) {
        rows.push([
          mode,
          String(n),
          'floor (best of)',
          sec(best.p50),
          sec(best.p99),
          num(best.batch / n, 0),
          '—',
          '—',
        ]);
      }
    }
  };
  add('static', results.static);
  add('cluster', results.cluster);
  return table(
    ['mode', 'N', 'runner', 'p50 s', 'p99 s', 'batch per pod ms', 'kubelet CPU per pod ms', 'peak RSS MiB'],
    rows,
  );
}

/** The growth tables when the results hold more than one N or pod count; empty otherwise. */
export function growthTables(results: BenchResults): string[] {
  const out: string[] = [];
  if (new Set([...results.static.keys(), ...results.cluster.keys()]).size > 1) {
    out.push('Startup: what a batch costs per pod as N grows.', '', startupGrowth(results), '');
  }
  if (new Set(results.steady.map((r) => r.pods)).size > 1) {
    out.push(
      "Steady state: what each held pod costs. Own relist = tskubelet's PLEG relist code timed from the bench / upstream's kubelet_pleg_relist_duration_seconds over the window.",
      '',
      steadyGrowth(results),
      '',
    );
  }
  return out;
}
