import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { churnPlan } from './churn-schedule.ts';
import {
  SERIES,
  seriesChart,
  seriesResults,
  summaryTable,
  verdictLines,
  type ChurnRun,
} from './churn-report.ts';
import { CHURN_ROUND, churnManifest, churnPodName } from './churn-pods.ts';

const plan = churnPlan(600, 30);

/** A run whose RSS grows by `rssGrowthKiBPerS` and whose every other series is constant. */
function run(kind: 'tskubelet' | 'upstream', rssGrowthKiBPerS: number): ChurnRun {
  return {
    kind,
    podsCreated: 600,
    podsSeen: 600,
    lateRounds: 0,
    samples: plan.sampleTimes.map((t) => ({
      t,
      phase: t === 0 ? 'baseline' : t < plan.churnS ? 'churn' : 'drain',
      containers: t === 0 || t >= plan.churnS ? 0 : 25,
      containersRunning: 10,
      sandboxes: 20,
      sandboxesReady: 10,
      rootBytes: 2 ** 20,
      rootFiles: 300,
      logBytes: 10_240,
      logFiles: 60,
      rootMounts: 2,
      rssKiB: 100 * 1024 + rssGrowthKiBPerS * t,
      cpuCores: 0.05,
      fds: 40,
      heapUsedMiB: 20,
      heapTotalMiB: kind === 'tskubelet' ? 30 : NaN,
      pods: 20,
      sampleMs: 20,
      errors: [],
    })),
  };
}

describe('churn report', () => {
  it('fits the trend over the churn after the warm-up and judges each series', () => {
    // 20 KiB/s = 11.7 MiB per 10 min, beyond 5 % of ~100 MiB.
    const results = seriesResults(plan, [run('tskubelet', 0), run('upstream', 20)]);
    assert.equal(results.length, SERIES.length * 2);
    const rss = (kind: string) => results.find((r) => r.def.key === 'rss' && r.kind === kind);
    assert.equal(rss('tskubelet')?.summary.verdict, 'flat');
    assert.equal(rss('upstream')?.summary.verdict, 'grows');
    assert.ok(Math.abs((rss('upstream')?.summary.slopePer10Min ?? 0) - (20 * 600) / 1024) < 1e-9);
    const containers = results.find((r) => r.def.key === 'containers' && r.kind === 'tskubelet');
    assert.equal(containers?.baseline, 0);
    assert.equal(containers?.summary.start, 25);
    assert.equal(containers?.afterDrain, 0);
    assert.equal(containers?.summary.verdict, 'flat');

    const lines = verdictLines(results, ['tskubelet', 'upstream']);
    assert.match(lines[0] ?? '', /^tskubelet: flat/);
    assert.match(lines[1] ?? '', /^upstream: NOT flat — rss grows \(\+11\.72 MiB \/ 10 min/);
    assert.match(summaryTable(results), /\| rss \(MiB\) \| upstream \| 100\.0 \|.*\*\*grows\*\*/);
  });

  it('charts every kubelet on one set of axes, with the dashed companion line', () => {
    const def = SERIES.find((d) => d.key === 'containers');
    assert.ok(def);
    const svg = seriesChart(def, plan, [run('tskubelet', 0), run('upstream', 0)]);
    assert.equal((svg.match(/<path /g) ?? []).length, 4);
    assert.ok(svg.includes('>upstream running<'));
  });

  it('leaves a series without samples out of the verdict, and says so', () => {
    const empty = run('upstream', 0);
    empty.samples = empty.samples.map((s) => ({ ...s, fds: NaN }));
    const lines = verdictLines(seriesResults(plan, [empty]), ['upstream']);
    assert.equal(
      lines[0],
      `upstream: flat — all ${SERIES.length - 1} series within tolerance (no data: fds)`,
    );
  });
});

describe('churn pods', () => {
  it('names every pod of a round as a DNS label that fits with the node name appended', () => {
    for (let i = 0; i < CHURN_ROUND.length; i++) {
      const name = `${churnPodName(9999, i)}-bench-upstream`;
      assert.match(name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      assert.ok(name.length <= 63, name);
    }
  });

  it('gives the exiting pods their restart policy and the volume pods their emptyDir', () => {
    const spec = (k: Parameters<typeof churnManifest>[1]) =>
      churnManifest('p', k).spec as Record<string, unknown> & { volumes?: { emptyDir: unknown }[] };
    assert.equal(spec('exit').restartPolicy, 'Never');
    assert.equal(spec('crash').restartPolicy, 'Always');
    assert.deepEqual(spec('emptydir').volumes?.[0]?.emptyDir, {});
    assert.deepEqual(spec('memdir').volumes?.[0]?.emptyDir, { medium: 'Memory', sizeLimit: '8Mi' });
    assert.equal(spec('sleep').terminationGracePeriodSeconds, 1);
  });
});
