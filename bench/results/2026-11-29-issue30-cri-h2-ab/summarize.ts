// Summarizes the A/B reps: per measure, h2 (tskubelet) − grpc-js (tskubelet-base) per rep, the median and how often main is lower.
import { readFileSync, readdirSync } from 'node:fs';
const dir = process.argv[2] ?? '.';
const files = readdirSync(dir).filter((f) => /^rep-\d+\.md$/.test(f)).sort();
type Row = Record<string, number>;
const reps: { main: Row; base: Row }[] = [];
for (const f of files) {
  const text = readFileSync(`${dir}/${f}`, 'utf8');
  const r = { main: {} as Row, base: {} as Row };
  for (const line of text.split('\n')) {
    const c = line.split('|').map((x) => x.trim());
    const who = c[2] === 'tskubelet' ? r.main : c[2] === 'tskubelet-base' ? r.base : undefined;
    if (!who) continue;
    if ((c[1] === '10' || c[1] === '30') && c.length > 12) {
      const n = c[1];
      who[`N=${n} p50 s`] = Number(c[3]);
      who[`N=${n} p99 s`] = Number(c[5]);
      const [all, mainT] = (c[9] ?? '').split('/').map((x) => Number(x.trim()));
      who[`N=${n} CPU s (all)`] = all ?? NaN;
      who[`N=${n} CPU s (main thread)`] = mainT ?? NaN;
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
const keys = Object.keys(reps[0]?.main ?? {});
const med = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const m = s.length / 2; return s.length % 2 ? s[Math.floor(m)]! : (s[m - 1]! + s[m]!) / 2; };
console.log(`| measure | h2 (median) | grpc-js (median) | h2 − grpc-js, median | spread | h2 lower |`);
console.log(`|---|---|---|---|---|---|`);
for (const k of keys) {
  const d = reps.map((r) => r.main[k]! - r.base[k]!);
  const lower = d.filter((x) => x < 0).length;
  const f = (x: number) => (Math.abs(x) < 1 ? x.toFixed(3) : x.toFixed(2));
  console.log(`| ${k} | ${f(med(reps.map((r) => r.main[k]!)))} | ${f(med(reps.map((r) => r.base[k]!)))} | ${f(med(d))} | ${f(Math.min(...d))} … ${f(Math.max(...d))} | ${lower} of ${d.length} |`);
}
