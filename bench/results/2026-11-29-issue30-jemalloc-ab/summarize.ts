// Summarizes the reps: per measure and runner, the median over reps and the spread; then
// jemalloc (tskubelet) − glibc (tskubelet-base) per rep, and each against upstream.
import { readFileSync, readdirSync } from 'node:fs';
const dir = process.argv[2] ?? import.meta.dirname;
const files = readdirSync(dir).filter((f) => /^rep-\d+\.md$/.test(f)).sort();
type Row = Record<string, number>;
const runners = ['tskubelet', 'tskubelet-base', 'upstream'] as const;
const reps: Record<string, Row>[] = [];
for (const f of files) {
  const text = readFileSync(`${dir}/${f}`, 'utf8');
  const r: Record<string, Row> = { tskubelet: {}, 'tskubelet-base': {}, upstream: {} };
  let steadyTable = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('| pods |')) steadyTable = line.includes('CPU p50 cores');
    const c = line.split('|').map((x) => x.trim());
    const who = r[c[2] ?? ''];
    if (!who) continue;
    if (/^\d+$/.test(c[1] ?? '') && c.length === 14 && c[3] !== undefined && /^[\d.]+$/.test(c[3])) {
      const n = c[1];
      who[`N=${n} p50 s`] = Number(c[3]);
      who[`N=${n} p99 s`] = Number(c[5]);
      const [all] = (c[9] ?? '').split('/').map((x) => Number(x.trim()));
      who[`N=${n} kubelet CPU s`] = all ?? NaN;
      who[`N=${n} peak RSS MiB`] = Number(c[10]);
    } else if (steadyTable && /^\d+$/.test(c[1] ?? '') && c.length === 13 && c[3] !== undefined && /^[\d.]+$/.test(c[3])) {
      const pods = c[1];
      who[`steady ${pods} pods RSS max MiB`] = Number(c[3]);
      who[`steady ${pods} pods CPU mean cores`] = Number(c[6]);
    }
  }
  reps.push(r);
}
const keys = [...new Set(reps.flatMap((r) => Object.keys(r.tskubelet ?? {})))];
const med = (xs: number[]) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length / 2;
  return s.length % 2 ? s[Math.floor(m)]! : (s[m - 1]! + s[m]!) / 2;
};
const f = (x: number) => (!Number.isFinite(x) ? '—' : Math.abs(x) < 1 ? x.toFixed(3) : x.toFixed(2));
const span = (xs: number[]) => {
  const ok = xs.filter((x) => Number.isFinite(x));
  return ok.length === 0 ? '—' : `${f(Math.min(...ok))} … ${f(Math.max(...ok))}`;
};
console.log(`${reps.length} reps. Median (min … max) per runner; jemalloc = tskubelet, glibc = tskubelet-base.\n`);
console.log('| measure | upstream | glibc (main) | jemalloc | jemalloc − glibc, median (spread) | jemalloc lower | glibc : upstream | jemalloc : upstream |');
console.log('|---|---|---|---|---|---|---|---|');
for (const k of keys) {
  const v = (who: (typeof runners)[number]) => reps.map((r) => r[who]![k]!);
  const d = reps.map((r) => r.tskubelet![k]! - r['tskubelet-base']![k]!).filter((x) => Number.isFinite(x));
  const cell = (who: (typeof runners)[number]) => `${f(med(v(who)))} (${span(v(who))})`;
  const up = med(v('upstream'));
  console.log(
    `| ${k} | ${cell('upstream')} | ${cell('tskubelet-base')} | ${cell('tskubelet')} | ${f(med(d))} (${span(d)}) | ${d.filter((x) => x < 0).length} of ${d.length} | ${f(med(v('tskubelet-base')) / up)} | ${f(med(v('tskubelet')) / up)} |`,
  );
}
