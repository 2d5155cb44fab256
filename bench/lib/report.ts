/**
 * The results file of bench/run.ts as markdown: one section per scenario with its tables, the charts
 * of how cost grows with the pod count beside them (scale-report.ts), the targets, the machine and
 * its load. Pure: the caller writes the text and the charts.
 */
import { cpus, release, totalmem } from 'node:os';
import { apiloadReport, apiloadTargets } from './apiload.ts';
import { floorBest, sortedKeys, type BenchResults, type Eld, type StartupRow } from './bench-results.ts';
import { targets } from './report-targets.ts';
import { chartLink, growthTables, type ChartKey } from './scale-report.ts';
import { cores, mib, msText, ratio, sec, summarize, table } from './stats.ts';
import { breakdownSections } from './timeline-breakdown.ts';

export interface ReportMeta {
  date: string;
  quick: boolean;
  /** The command line's arguments after `bench/run.ts`. */
  argv: readonly string[];
  /** Minutes since the run started. */
  minutes: number;
  final: boolean;
  ns: readonly number[];
  steadyPods: readonly number[];
  windowMs: number;
  token: boolean;
  execRate: number;
  observeMs: number;
  /** Machine lines (machineLines()), computed once per run. */
  machine: readonly string[];
  /** Charts written beside the results file, by key → file name (relative to the results file). */
  charts: ReadonlyMap<ChartKey, string>;
}

export function eldText(e: Eld | undefined): string {
  return e ? `${msText(e.p99)} / ${msText(e.max)}` : '—';
}

function startupTable(
  results: BenchResults,
  m: Map<number, StartupRow[]>,
  withFloor: boolean,
  cluster: boolean,
): string {
  const header = [
    'N',
    'runner',
    'p50 s',
    'p90 s',
    'p99 s',
    'max s',
    'batch s',
    'to sandbox p50 / p99 s',
    ...(cluster ? ['CRI start p50 / p99 s'] : []),
    'kubelet CPU s (all / main thread)',
    'peak RSS MiB',
    'ELD p99 / max ms',
    'host busy cores',
  ];
  const rows: string[][] = [];
  for (const n of [...new Set([...results.floor.keys(), ...m.keys()])].sort((a, b) => a - b)) {
    const all = [...(withFloor ? (results.floor.get(n) ?? []) : []), ...(m.get(n) ?? [])];
    for (const r of all) {
      const s = summarize(r.latencies);
      const c = r.criLatencies ? summarize(r.criLatencies) : undefined;
      rows.push([
        String(n),
        r.runner + (r.failed > 0 ? ` (${r.failed} not running)` : ''),
        sec(s.p50),
        sec(s.p90),
        sec(s.p99),
        sec(s.max),
        sec(r.batchMs),
        r.toSandbox ? `${sec(summarize(r.toSandbox).p50)} / ${sec(summarize(r.toSandbox).p99)}` : '—',
        ...(cluster ? [c ? `${sec(c.p50)} / ${sec(c.p99)}` : '—'] : []),
        // The main thread is the JavaScript one; a Go program's leader thread idles (upstream: all only).
        r.usage
          ? `${r.usage.cpuSecTotal.toFixed(2)} / ${r.runner === 'upstream' ? '—' : r.usage.mainCpuSecTotal.toFixed(2)}`
          : '—',
        r.usage ? mib(r.usage.rssMaxKiB) : '—',
        eldText(r.eld),
        r.hostBusy !== undefined ? r.hostBusy.toFixed(2) : '—',
      ]);
    }
    const best = floorBest(results, n);
    if (withFloor && best) {
      rows.push([
        String(n),
        '**floor (best of)**',
        sec(best.p50),
        sec(best.p90),
        sec(best.p99),
        sec(best.max),
        sec(best.batch),
        '—',
        '—',
        '—',
        '—',
        '—',
      ]);
    }
  }
  return table(header, rows);
}

function ratioTable(results: BenchResults, m: Map<number, StartupRow[]>): string {
  const rows: string[][] = [];
  for (const n of sortedKeys(m)) {
    const rs = m.get(n) ?? [];
    const t = rs.find((r) => r.runner === 'tskubelet');
    const u = rs.find((r) => r.runner === 'upstream');
    const ts = t ? summarize(t.latencies) : undefined;
    const us = u ? summarize(u.latencies) : undefined;
    const f = floorBest(results, n);
    rows.push([
      String(n),
      ratio(ts?.p50 ?? NaN, f?.p50 ?? NaN),
      ratio(ts?.p99 ?? NaN, f?.p99 ?? NaN),
      ratio(us?.p50 ?? NaN, f?.p50 ?? NaN),
      ratio(us?.p99 ?? NaN, f?.p99 ?? NaN),
      ratio(ts?.p50 ?? NaN, us?.p50 ?? NaN),
      ratio(ts?.p99 ?? NaN, us?.p99 ?? NaN),
      ratio(t?.usage?.rssMaxKiB ?? NaN, u?.usage?.rssMaxKiB ?? NaN),
      ratio(t?.usage?.cpuSecTotal ?? NaN, u?.usage?.cpuSecTotal ?? NaN),
    ]);
  }
  return table(
    [
      'N',
      'tsk:floor p50',
      'tsk:floor p99',
      'upstream:floor p50',
      'upstream:floor p99',
      'tsk:upstream p50',
      'tsk:upstream p99',
      'tsk:upstream peak RSS',
      'tsk:upstream CPU s',
    ],
    rows,
  );
}

function teardownTable(results: BenchResults): string {
  const rows: string[][] = [];
  const add = (mode: string, r: StartupRow) => {
    const t = r.teardown;
    if (!t) return;
    const s = summarize(t.stopped);
    const rm = summarize(t.removed);
    rows.push([
      mode,
      String(r.n),
      r.runner,
      sec(s.p50),
      sec(s.p90),
      sec(s.p99),
      sec(s.max),
      t.notRemoved > 0 ? `> ${sec(t.capMs)} (${t.notRemoved} left)` : sec(rm.max),
    ]);
  };
  for (const n of sortedKeys(results.static)) for (const r of results.static.get(n) ?? []) add('static', r);
  for (const n of sortedKeys(results.cluster))
    for (const r of results.cluster.get(n) ?? []) add('cluster', r);
  for (const r of results.steadyTeardown) add('cluster (steady)', r);
  return table(
    ['mode', 'N', 'kubelet', 'stopped p50 s', 'p90 s', 'p99 s', 'max s', 'all sandboxes removed s'],
    rows,
  );
}

function steadyTable(results: BenchResults): string {
  const withFds = results.steady.some((r) => r.fds);
  return table(
    [
      'pods',
      'kubelet',
      'RSS max MiB',
      'CPU p50 cores',
      'CPU p95 cores',
      'CPU mean cores',
      'containerd CPU p50 / p95',
      'ELD p99 / max ms',
      'heap used / total MiB',
      'host busy cores',
      ...(withFds ? ['fds kubelet / containerd'] : []),
    ],
    results.steady.map((r) => [
      String(r.pods),
      r.kubelet,
      mib(r.usage.rssMaxKiB),
      cores(r.usage.cpuP50),
      cores(r.usage.cpuP95),
      cores(r.usage.cpuSecTotal / r.usage.seconds),
      `${cores(r.containerd.cpuP50)} / ${cores(r.containerd.cpuP95)}`,
      eldText(r.eld),
      r.eld?.heapUsed !== undefined ? `${r.eld.heapUsed} / ${r.eld.heapTotal ?? '?'}` : '—',
      r.hostBusy.toFixed(2),
      ...(withFds ? [r.fds ? `${r.fds.kubelet} / ${r.fds.containerd}` : '—'] : []),
    ]),
  );
}

function relistTable(results: BenchResults): string {
  return table(
    ['what', 'samples', 'p50 ms', 'p99 ms', 'max ms'],
    results.relist.map((r) => [
      r.what,
      String(r.stats.n),
      msText(r.stats.p50),
      msText(r.stats.p99),
      msText(r.stats.max),
    ]),
  );
}

/** The machine, the versions under test and the run's settings (git and containerd asked once). */
export function machineLines(o: {
  git: (args: string[]) => string;
  containerd: string;
  upstreamBinary: string;
  ns: readonly number[];
  steadyPods: readonly number[];
  windowMs: number;
  token: boolean;
  /** Both kubelets with pod cgroups per QoS class; absent: not said (tools that never set it). */
  qosCgroups?: boolean;
  limits: string;
}): string[] {
  const dirty = o.git(['status', '--porcelain']) === '' ? '' : ' (uncommitted changes)';
  return [
    `- machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${release()}`,
    `- tskubelet ${o.git(['rev-parse', '--short', 'HEAD'])}${dirty}, Node.js ${process.version}; upstream kubelet 1.20.2 (${o.upstreamBinary}); containerd ${o.containerd}`,
    `- settings: N = ${o.ns.join(', ')}; steady-state pods ${o.steadyPods.join(', ')}, window ${o.windowMs / 1000} s; --max-pods 110, or the run's pod count when larger (both kubelets); cluster pods ${o.token ? 'mount their service-account token (secret volume, the default)' : 'with automountServiceAccountToken: false'}${o.qosCgroups === undefined ? '' : o.qosCgroups ? '; both kubelets with pod cgroups per QoS class and `--enforce-node-allocatable=pods` (their default)' : '; both kubelets with `--cgroups-per-qos=false --enforce-node-allocatable=` (--no-qos-cgroups)'}; kubelet process sampled every 250 ms (batches) / 1 s (steady state)`,
    `- limits: ${o.limits}`,
  ];
}

function plots(meta: ReportMeta, keys: readonly ChartKey[]): string[] {
  const out: string[] = [];
  for (const k of keys) {
    const file = meta.charts.get(k);
    if (file) out.push(chartLink(k, file), '');
  }
  return out;
}

export function renderReport(results: BenchResults, meta: ReportMeta): string {
  const argv = meta.argv.length ? ` ${meta.argv.join(' ')}` : '';
  const parts: string[] = [
    `# tskubelet vs upstream kubelet 1.20.2 — ${meta.date}${meta.quick ? ' (quick)' : ''}`,
    '',
    `Command: \`node bench/run.ts${argv}\`; ${meta.final ? 'total' : 'so far'} ${meta.minutes.toFixed(1)} min. How it measures: bench/README.md.`,
    '',
    ...meta.machine,
    '',
  ];
  if (results.static.size > 0 || results.floor.size > 0) {
    parts.push(
      '## Scenario 1: static-pod batch startup (manifest written → container running, CRI startedAt)',
      '',
      "floor = the same pods straight over CRI (no kubelet) at the given concurrency; latency from the batch start. \"best of\" takes each column's minimum over the concurrency levels. to sandbox = written/created → the sandbox's CRI createdAt (when containerd began RunPodSandbox: the kubelet's reaction and queueing); the rest is sandbox, container create and start. host busy = machine-wide busy CPU during the batch (kubelet, containerd, runc, the bench, and any other work on the machine).",
      '',
      startupTable(results, results.static, true, false),
      '',
      ratioTable(results, results.static),
      '',
      ...breakdownSections(results.static),
      ...plots(meta, ['startup-static']),
    );
  }
  if (results.cluster.size > 0) {
    parts.push(
      '## Scenario 2: cluster batch startup (API create → Running with all containers started, seen by a watch)',
      '',
      "CRI start = create → container startedAt (what the kubelet did before reporting). Ratios to the floor use scenario 1's floor at the same N.",
      '',
      startupTable(results, results.cluster, false, true),
      '',
      ratioTable(results, results.cluster),
      '',
      ...breakdownSections(results.cluster),
      ...plots(meta, ['startup-cluster']),
    );
  }
  if (results.steady.length > 0) {
    parts.push(
      `## Scenario 3: steady state (cluster mode, ${meta.windowMs / 1000} s window per row, sampled each second from /proc)`,
      '',
      "ELD = tskubelet's event-loop delay (perf_hooks histogram preloaded with --import, bench/lib/eld-probe.ts); heap = its V8 heap at the end of the window (process.memoryUsage()); host busy = machine-wide busy CPU in the window; fds = open file descriptors at the end of the window.",
      '',
      steadyTable(results),
      '',
      ...plots(meta, ['steady-rss', 'steady-cpu']),
    );
  }
  if (results.relist.length > 0) {
    parts.push('## Scenario 4: relist cost', '', relistTable(results), '', ...plots(meta, ['relist']));
  }
  const growth = growthTables(results);
  if (growth.length > 0) {
    parts.push(
      '## Scale: how each cost grows with the pod count',
      '',
      'Per pod = (value at N − value at 0 pods) / N for steady state; startup divides the batch time and the kubelet CPU seconds by N. A cost that is linear in the pods shows the same per-pod figure at every N; one that is worse than linear shows it rising.',
      '',
      ...growth,
    );
  }
  if (results.static.size > 0 || results.cluster.size > 0 || results.steadyTeardown.length > 0) {
    parts.push(
      '## Scenario 5: teardown (static: manifests removed; cluster: deleted with grace 0)',
      '',
      `stopped = no ready sandbox and no running container (per pod, from the delete; ${meta.observeMs} ms poll resolution); removed = the last sandbox gone from containerd (waited up to 75 s, 0.6 s per pod above 125 pods: the upstream kubelet removes sandboxes in its once-a-minute container GC).`,
      '',
      teardownTable(results),
      '',
    );
  }
  if (results.apiload.length > 0) {
    parts.push(
      `## Scenario 6: the kubelet API under load (30 logging pods; ${meta.windowMs / 1000} s window unloaded, then the same under load)`,
      '',
      `Load, straight at the kubelet's HTTPS port with the API server's kubelet client certificate: 100 \`containerLogs?follow=true\` streams over the 30 pods (each prints a line every 100 ms) for the whole window, and ${meta.execRate} exec/s (SPDY/3.1 remotecommand v4, \`echo hiN\`, a new TLS connection each, open loop). Batch = 10 pods created through the API at a quarter of each window (create → Running seen by a watch), then deleted. fds = the kubelet's /proc/<pid>/fd before the window / max during it / 10 s after it. bench CPU = this process (the load generator runs in a worker thread of it). ELD = tskubelet's event-loop delay over the window. See bench/README.md.`,
      '',
      apiloadReport(results.apiload),
      '',
    );
  }
  const t = targets(results);
  if (t.length > 0) parts.push('## Against the targets of issue 4', '', ...t, '');
  const t9 = apiloadTargets(results.apiload);
  if (t9.length > 0) parts.push('## Against the targets of issue 9 (API load)', '', ...t9, '');
  if (results.failures.length > 0)
    parts.push('## Failures', '', ...results.failures.map((f) => `- ${f}`), '');
  parts.push(
    '## Machine load per run (load average 1/5/15 min at the start)',
    '',
    ...results.loads.map((l) => `- ${l}`),
    '',
  );
  return parts.join('\n');
}
