/**
 * The table of a same-run A/B of two tskubelet builds (bench/run.ts with `--kubelets
 * tskubelet,tskubelet-base --base-tree DIR`, repeated): per measure, each build's median over the
 * reps, the per-rep difference (tskubelet − tskubelet-base) as median and range, and in how many
 * reps the candidate was lower. Reads every `rep-<n>.md` in DIR (static N = 10 and 30, steady 0).
 *
 *   node bench/ab-summary.ts DIR [--labels candidate,base]
 */
import { readFileSync, readdirSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  options: { labels: { type: 'string', default: 'tskubelet,tskubelet-base' } },
  allowPositionals: true,
});
const dir = positionals[0] ?? '.';
const [a = 'tskubelet', b = 'tskubelet-base'] = values.labels.split(',');

type Row = Record<string, number>;
const reps: { main: Row; base: Row }[] = [];
for (const f of readdirSync(dir)
  .filter((x) => /^rep-\d+\.md$/.test(x))
  .sort()) {
  const r = { main: {} as Row, base: {} as Row };
  for (const line of readFileSync(`${dir}/${f}`, 'utf8').split('\n')) {
    const c = line.split('|').map((x) => x.trim());
    const who = c[2] === 'tskubelet' ? r.main : c[2] === 'tskubelet-base' ? r.base : undefined;
    if (!who) continue;
    if ((c[1] === '10' || c[1] === '30') && c.length > 12) {
      const n = c[1];
      who[`N=${n} p50 s`] = Number(c[3]);
      who[`N=${n} p99 s`] = Number(c[5]);
      const [all, mainThread] = (c[9] ?? '').split('/').map((x) => Number(x.trim()));
      who[`N=${n} CPU s (all)`] = all ?? NaN;
      who[`N=${n} CPU s (main thread)`] = mainThread ?? NaN;
      who[`N=${n} peak RSS MiB`] = Number(c[10]);
    } else if (c[1] === '0' && c.length > 10) {
      who['idle RSS max MiB'] = Number(c[3]);
      who['idle CPU mean cores'] = Number(c[6]);
      const [heapUsed] = (c[9] ?? '').split('/').map((x) => Number(x.trim()));
      who['idle heap used MiB'] = heapUsed ?? NaN;
    }
  }
  reps.push(r);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length / 2;
  return s.length % 2 ? s[Math.floor(m)]! : (s[m - 1]! + s[m]!) / 2;
};
const fmt = (x: number): string => (Math.abs(x) < 1 ? x.toFixed(3) : x.toFixed(2));
console.log(`| measure | ${a} (median) | ${b} (median) | ${a} − ${b}, median | range | ${a} lower |`);
console.log('|---|---|---|---|---|---|');
for (const k of Object.keys(reps[0]?.main ?? {})) {
  const d = reps.map((r) => r.main[k]! - r.base[k]!);
  const lower = d.filter((x) => x < 0).length;
  console.log(
    `| ${k} | ${fmt(median(reps.map((r) => r.main[k]!)))} | ${fmt(median(reps.map((r) => r.base[k]!)))} | ${fmt(median(d))} | ${fmt(Math.min(...d))} … ${fmt(Math.max(...d))} | ${lower} of ${d.length} |`,
  );
}
