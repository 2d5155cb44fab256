/** The targets of issues 4 and 14 checked against a run's results, one "met / missed" line each. */
import { floorBest, sortedKeys, type BenchResults } from './bench-results.ts';
import { cores, mib, msText, ratio, sec, summarize } from './stats.ts';

export function targets(results: BenchResults): string[] {
  const out: string[] = [];
  const check = (ok: boolean | undefined, text: string) =>
    out.push(`- ${ok === undefined ? '?' : ok ? 'met' : '**missed**'}: ${text}`);
  for (const n of sortedKeys(results.static)) {
    const rs = results.static.get(n) ?? [];
    const t = rs.find((r) => r.runner === 'tskubelet');
    const u = rs.find((r) => r.runner === 'upstream');
    const f = floorBest(results, n);
    const ts = t ? summarize(t.latencies) : undefined;
    const us = u ? summarize(u.latencies) : undefined;
    if (n === 1 && ts && f) {
      check(ts.p50 <= f.p50 + 30, `static N=1 ≤ floor + 30 ms (${msText(ts.p50)} vs ${msText(f.p50)} ms)`);
    } else if (ts && f) {
      check(ts.p99 <= 1.05 * f.p99, `static N=${n} p99 ≤ 1.05× floor (${ratio(ts.p99, f.p99)})`);
    }
    if (n > 1 && ts && us)
      check(ts.p50 <= 0.6 * us.p50, `static N=${n} p50 ≤ 0.6× upstream (${ratio(ts.p50, us.p50)})`);
    if (t?.usage && u?.usage) {
      check(
        t.usage.rssMaxKiB <= u.usage.rssMaxKiB,
        `static N=${n} peak RSS ≤ upstream's (${mib(t.usage.rssMaxKiB)} vs ${mib(u.usage.rssMaxKiB)} MiB)`,
      );
    }
  }
  for (const n of sortedKeys(results.cluster)) {
    const rs = results.cluster.get(n) ?? [];
    const t = rs.find((r) => r.runner === 'tskubelet');
    const u = rs.find((r) => r.runner === 'upstream');
    if (t && u) {
      const ts = summarize(t.latencies);
      const us = summarize(u.latencies);
      check(ts.p99 <= 0.5 * us.p99, `cluster N=${n} p99 ≤ 0.5× upstream (${ratio(ts.p99, us.p99)})`);
      if (n === 10) check(ts.p99 <= 5_000, `cluster N=10 p99 ≤ 5 s pod-startup SLO (${sec(ts.p99)} s)`);
    }
    if (t?.usage && u?.usage) {
      check(
        t.usage.rssMaxKiB <= u.usage.rssMaxKiB,
        `cluster N=${n} peak RSS ≤ upstream's (${mib(t.usage.rssMaxKiB)} vs ${mib(u.usage.rssMaxKiB)} MiB)`,
      );
    }
  }
  for (const r of results.steady.filter((x) => x.kubelet === 'tskubelet')) {
    if (r.pods === 0) check(r.usage.rssMaxKiB <= 80 * 1024, `idle RSS ≤ 80 MiB (${mib(r.usage.rssMaxKiB)})`);
    if (r.pods === 110) {
      check(r.usage.rssMaxKiB <= 150 * 1024, `110 pods RSS ≤ 150 MiB (${mib(r.usage.rssMaxKiB)})`);
      check(r.usage.cpuP95 <= 0.1, `110 pods CPU p95 ≤ 0.1 core (${cores(r.usage.cpuP95)})`);
    }
    if (r.pods === 35 || r.pods === 0) {
      check(
        r.usage.cpuP95 <= 0.2,
        `${r.pods} pods CPU p50/p95 ≤ 0.1/0.2 core, density test (${cores(r.usage.cpuP50)} / ${cores(r.usage.cpuP95)})`,
      );
    }
  }
  return out;
}
