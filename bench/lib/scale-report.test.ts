import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createResults, pushRow, type SteadyRow, type StartupRow } from './bench-results.ts';
import type { UsageSummary } from './proc.ts';
import { growthTables, perPod, scaleCharts } from './scale-report.ts';
import { renderReport } from './report.ts';

function usage(rssMiB: number, cpuCores: number): UsageSummary {
  return {
    samples: 61,
    rssMaxKiB: rssMiB * 1024,
    rssLastKiB: rssMiB * 1024,
    cpuP50: cpuCores,
    cpuP95: cpuCores * 2,
    cpuMax: cpuCores * 3,
    cpuSecTotal: cpuCores * 60,
    mainCpuSecTotal: cpuCores * 60,
    seconds: 60,
  };
}

function steady(kubelet: SteadyRow['kubelet'], pods: number, rssMiB: number, cpu: number): SteadyRow {
  return {
    kubelet,
    pods,
    usage: usage(rssMiB, cpu),
    containerd: usage(50, 0.01),
    hostBusy: 0.1,
    fds: { kubelet: 20 + pods, containerd: 30 + 4 * pods },
  };
}

function batch(runner: string, n: number, perPodMs: number): StartupRow {
  return {
    runner,
    n,
    latencies: Array.from({ length: n }, (_, i) => (i + 1) * perPodMs),
    batchMs: n * perPodMs,
    failed: 0,
    usage: usage(90, 0.5),
  };
}

describe('perPod', () => {
  it('divides the growth over idle by the pod count', () => {
    assert.equal(perPod(180, 80, 100), 1);
    assert.ok(Number.isNaN(perPod(80, 80, 0)), 'no pods: no per-pod figure');
    assert.ok(Number.isNaN(perPod(NaN, 80, 10)), 'a missing value stays missing');
  });
});

describe('scaleCharts', () => {
  it('draws nothing from a single pod count: one point is not a curve', () => {
    const r = createResults();
    pushRow(r.static, 10, batch('tskubelet', 10, 100));
    r.steady.push(steady('tskubelet', 110, 150, 0.05));
    assert.deepEqual(scaleCharts(r), []);
  });

  it('draws startup vs N with the floor, and steady RSS, CPU and relist vs pods, for every kubelet', () => {
    const r = createResults();
    for (const n of [10, 250]) {
      pushRow(r.floor, n, batch('floor c=4', n, 50));
      pushRow(r.static, n, batch('tskubelet', n, 100));
      pushRow(r.static, n, batch('upstream', n, 120));
      pushRow(r.cluster, n, batch('tskubelet', n, 100));
    }
    for (const [pods, rss] of [
      [0, 80],
      [250, 180],
    ] as const) {
      r.steady.push(steady('tskubelet', pods, rss, 0.01), steady('upstream', pods, rss - 10, 0.02));
      r.relist.push({
        what: 'pleg',
        kubelet: 'tskubelet',
        pods,
        source: 'pleg',
        stats: { n: 50, p50: 1 + pods / 10, p99: 2 + pods / 10, max: 3 },
      });
    }
    const charts = new Map(scaleCharts(r).map((c) => [c.key, c.svg]));
    assert.deepEqual(
      [...charts.keys()],
      ['startup-static', 'startup-cluster', 'steady-rss', 'steady-cpu', 'relist'],
    );
    const st = charts.get('startup-static') ?? '';
    assert.ok(st.includes('>floor (best of) p99<') && st.includes('>upstream p50<'));
    assert.ok(!(charts.get('startup-cluster') ?? '').includes('floor'), 'the floor is a static-pod baseline');
    assert.ok((charts.get('steady-rss') ?? '').includes('>upstream<'));
    assert.equal(((charts.get('steady-rss') ?? '').match(/<circle /g) ?? []).length, 4);
  });
});

describe('growthTables', () => {
  it('gives RSS, CPU, relist and fds per held pod against the idle kubelet', () => {
    const r = createResults();
    r.steady.push(steady('tskubelet', 0, 80, 0.01), steady('tskubelet', 100, 100, 0.03));
    for (const [pods, p50] of [
      [0, 1],
      [100, 6],
    ] as const) {
      r.relist.push({
        what: '',
        kubelet: 'tskubelet',
        pods,
        source: 'pleg',
        stats: { n: 50, p50, p99: p50, max: p50 },
      });
    }
    const text = growthTables(r).join('\n');
    const row = text.split('\n').find((l) => l.startsWith('| 100 | tskubelet |')) ?? '';
    // 20 MiB over 100 pods = 205 KiB; 20 millicores over 100 pods = 0.2; 5 ms over 100 pods = 50 µs;
    // kubelet fds +1 per pod, containerd +4.
    assert.equal(row, '| 100 | tskubelet | 100.0 | 205 | 205 | 30.0 | 0.200 | 6.0 | 50.0 | 1.00 | 4.00 |');
  });

  it('stays out of a report with one N and one pod count', () => {
    const r = createResults();
    pushRow(r.static, 10, batch('tskubelet', 10, 100));
    assert.deepEqual(growthTables(r), []);
  });
});

describe('renderReport', () => {
  it('puts each chart beside its table', () => {
    const r = createResults();
    r.steady.push(steady('tskubelet', 0, 80, 0.01), steady('tskubelet', 250, 180, 0.05));
    const md = renderReport(r, {
      date: '2026-11-24',
      quick: false,
      argv: [],
      minutes: 1,
      final: true,
      ns: [10],
      steadyPods: [0, 250],
      windowMs: 60_000,
      token: true,
      execRate: 50,
      observeMs: 200,
      machine: [],
      charts: new Map([
        ['steady-rss', 'x-steady-rss.svg'],
        ['steady-cpu', 'x-steady-cpu.svg'],
      ]),
    });
    const s3 = md.indexOf('## Scenario 3');
    const rss = md.indexOf('(x-steady-rss.svg)');
    const next = md.indexOf('## Scale');
    assert.ok(s3 >= 0 && rss > s3 && next > rss, 'the RSS chart sits in scenario 3, before the next section');
  });
});
