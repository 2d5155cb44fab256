/**
 * The table of a same-run A/B of two tskubelet builds, with upstream when the run had it
 * (bench/run.ts with `--kubelets tskubelet,tskubelet-base[,upstream] --base-tree DIR`, repeated):
 * per measure, each runner's median over the reps and its spread, the per-rep difference
 * (tskubelet − tskubelet-base) as median and range, in how many reps the candidate was lower, and
 * each build's ratio to upstream. Reads every `rep-<n>.md` in DIR: the static batches (every N)
 * and the steady-state windows (every pod count).
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
const [candidate = 'tskubelet', base = 'tskubelet-base'] = values.labels.split(',');

const RUNNERS = ['tskubelet', 'tskubelet-base', 'upstream'] as const;
type Runner = (typeof RUNNERS)[number];
type Row = Record<string, number>;
const isRunner = (x: string): x is Runner => (RUNNERS as readonly string[]).includes(x);
const num = (x: string | undefined): number => (x === undefined || !/^[\d.]+$/.test(x) ? NaN : Number(x));
/** The first number of a cell like `0.36 / 0.26`. */
const first = (x: string | undefined): number => num((x ?? '').split('/')[0]?.trim());

const reps: Record<Runner, Row>[] = [];
for (const f of readdirSync(dir)
  .filter((x) => /^rep-\d+\.md$/.test(x))
  .sort()) {
  const r: Record<Runner, Row> = { tskubelet: {}, 'tskubelet-base': {}, upstream: {} };
  let table: 'static' | 'steady' | undefined;
  for (const line of readFileSync(`${dir}/${f}`, 'utf8').split('\n')) {
    if (line.startsWith('| N | runner | p50 s')) table = 'static';
    else if (line.startsWith('| pods | kubelet | RSS max MiB | CPU p50 cores')) table = 'steady';
    else if (!line.startsWith('| ')) table = undefined;
    const c = line.split('|').map((x) => x.trim());
    const who = c[2] ?? '';
    if (!table || !isRunner(who) || !/^\d+$/.test(c[1] ?? '')) continue;
    if (table === 'static') {
      const n = c[1];
      r[who][`N=${n} p50 s`] = num(c[3]);
      r[who][`N=${n} p99 s`] = num(c[5]);
      r[who][`N=${n} kubelet CPU s`] = first(c[9]);
      r[who][`N=${n} peak RSS MiB`] = num(c[10]);
    } else {
      const pods = c[1];
      r[who][`steady ${pods} pods RSS max MiB`] = num(c[3]);
      r[who][`steady ${pods} pods CPU mean cores`] = num(c[6]);
      r[who][`steady ${pods} pods heap used MiB`] = first(c[9]);
    }
  }
  reps.push(r);
}

const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((x, y) => x - y);
  if (s.length === 0) return NaN;
  const m = s.length / 2;
  return s.length % 2 ? s[Math.floor(m)]! : (s[m - 1]! + s[m]!) / 2;
};
const fmt = (x: number): string =>
  !Number.isFinite(x) ? '—' : Math.abs(x) < 1 ? x.toFixed(3) : x.toFixed(2);
const spread = (xs: number[]): string => {
  const ok = xs.filter((x) => Number.isFinite(x));
  return ok.length === 0 ? '—' : `${fmt(Math.min(...ok))} … ${fmt(Math.max(...ok))}`;
};
const valuesOf = (who: Runner, k: string): number[] => reps.map((r) => r[who][k] ?? NaN);
const cell = (who: Runner, k: string): string =>
  `${fmt(median(valuesOf(who, k)))} (${spread(valuesOf(who, k))})`;
const withUpstream = reps.some((r) => Object.keys(r.upstream).length > 0);

console.log(
  `${reps.length} reps. Median (min … max) per runner; ${candidate} = tskubelet, ${base} = tskubelet-base.\n`,
);
const head = [
  'measure',
  ...(withUpstream ? ['upstream'] : []),
  base,
  candidate,
  `${candidate} − ${base}, median (range)`,
  `${candidate} lower`,
  ...(withUpstream ? [`${base} : upstream`, `${candidate} : upstream`] : []),
];
console.log(`| ${head.join(' | ')} |`);
console.log(`|${head.map(() => '---').join('|')}|`);
for (const k of [...new Set(reps.flatMap((r) => Object.keys(r.tskubelet)))]) {
  const d = reps
    .map((r) => (r.tskubelet[k] ?? NaN) - (r['tskubelet-base'][k] ?? NaN))
    .filter(Number.isFinite);
  const up = median(valuesOf('upstream', k));
  const row = [
    k,
    ...(withUpstream ? [cell('upstream', k)] : []),
    cell('tskubelet-base', k),
    cell('tskubelet', k),
    `${fmt(median(d))} (${spread(d)})`,
    `${d.filter((x) => x < 0).length} of ${d.length}`,
    ...(withUpstream
      ? [fmt(median(valuesOf('tskubelet-base', k)) / up), fmt(median(valuesOf('tskubelet', k)) / up)]
      : []),
  ];
  console.log(`| ${row.join(' | ')} |`);
}
