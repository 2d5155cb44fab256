/**
 * The reliability suite (issue 13): every fault scenario on the real bed, then every fuzzed input
 * surface, and a report of what was done, how often, and what was seen.
 *
 *   node test/reliability/run.ts [--quick] [--only id,id] [--reps N] [--fuzz-runs N] [--no-fuzz]
 *                                [--no-faults] [--kubelet-flag FLAG]... [--out FILE]
 *
 * Full mode (the default) keeps each result in bench/results/reliability/<id>.json and renders
 * docs/reliability.md from every kept result (so `--only x` refreshes x's section alone); --quick
 * (or --out FILE) writes bench/results/<date>-reliability-quick.md (or FILE) with this run only. Run it alone on the bed:
 * `flock /tmp/tskubelet-bed.lock node test/reliability/run.ts`. Exits 1 when a check fails.
 * `--kubelet-flag` runs the suite in a variant: every tskubelet process a scenario starts gets the
 * flag (e.g. `--kubelet-flag=--evented-pleg=true`); a variant's results are never kept, so full
 * mode then needs --out. The in-process scenario (limits) runs on the fake CRI and takes no flags.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger, nullLogger } from '../../src/util/logger.ts';
import { describeError } from '../../src/util/errors.ts';
import { SCENARIOS } from './scenarios/index.ts';
import { setVariantKubeletFlags } from '../kit/process.ts';
import { SURFACES } from './fuzz/index.ts';
import { check, fuzzPassed, passed, renderReport, type FuzzResult, type ScenarioResult } from './report.ts';

const REPO = join(import.meta.dirname, '..', '..');
/** Where full-mode results are kept, one JSON per scenario or surface. */
const RESULTS_DIR = join(REPO, 'bench', 'results', 'reliability');

async function writeJson(path: string, value: unknown): Promise<void> {
  await writeFile(path, JSON.stringify(value, null, 1) + '\n');
}

/** Every kept result, scenarios in the registry's order, then the surfaces'. */
async function readKept(): Promise<{ scenarios: ScenarioResult[]; fuzz: FuzzResult[] }> {
  const names = await readdir(RESULTS_DIR).catch(() => [] as string[]);
  const scenarios: ScenarioResult[] = [];
  const fuzz: FuzzResult[] = [];
  for (const n of names.filter((x) => x.endsWith('.json')).sort()) {
    const v = JSON.parse(await readFile(join(RESULTS_DIR, n), 'utf8')) as ScenarioResult | FuzzResult;
    if ('checks' in v) scenarios.push(v);
    else fuzz.push(v);
  }
  const order = (id: string) => {
    const i = SCENARIOS.findIndex((s) => s.id === id);
    return i < 0 ? SCENARIOS.length : i;
  };
  scenarios.sort((a, b) => order(a.id) - order(b.id));
  return { scenarios, fuzz };
}
/** Cases per fuzzed surface: the nightly count, and the CI one. */
export const FUZZ_RUNS = { full: 10_000, quick: 300 };

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      reps: { type: 'string' },
      'fuzz-runs': { type: 'string' },
      'no-fuzz': { type: 'boolean', default: false },
      'no-faults': { type: 'boolean', default: false },
      out: { type: 'string' },
      'kubelet-flag': { type: 'string', multiple: true },
      verbose: { type: 'boolean', default: false },
    },
  });
  const mode = values.quick ? 'quick' : 'full';
  const variant = values['kubelet-flag'] ?? [];
  if (variant.length > 0 && mode === 'full' && values.out === undefined) {
    throw new Error('--kubelet-flag: a variant run is not kept with the default results; give --out FILE');
  }
  setVariantKubeletFlags(variant);
  const only = values.only?.split(',').filter(Boolean);
  const logger = values.verbose ? createLogger({ verbosity: 4, format: 'text' }) : nullLogger;
  const scenarios: ScenarioResult[] = [];
  const fuzz: FuzzResult[] = [];
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort(new Error('interrupted')));

  if (!values['no-faults']) {
    for (const s of SCENARIOS) {
      if (only && !only.includes(s.id)) continue;
      const reps = values.reps ? Number(values.reps) : s.reps[mode];
      process.stdout.write(`== ${s.id}: ${s.fault} (×${reps})\n`);
      const t0 = Date.now();
      let r: ScenarioResult;
      try {
        r = await s.run({ reps, mode, logger, signal: controller.signal });
      } catch (err) {
        r = {
          id: s.id,
          fault: s.fault,
          repetitions: reps,
          durationMs: Date.now() - t0,
          checks: [check('the scenario ran to its end', 'no error', describeError(err), false)],
        };
      }
      scenarios.push(r);
      for (const c of r.checks) {
        process.stdout.write(
          `   ${c.ok ? 'ok  ' : 'FAIL'} ${c.what}: ${c.observed} (expected ${c.expected})\n`,
        );
      }
    }
  }
  if (!values['no-fuzz']) {
    const runs = values['fuzz-runs'] ? Number(values['fuzz-runs']) : FUZZ_RUNS[mode];
    for (const f of SURFACES) {
      if (only && !only.includes(f.id)) continue;
      const r = await f.run({ runs });
      fuzz.push(r);
      process.stdout.write(
        `== fuzz ${f.id}: ${r.cases} cases, ${r.crashes} crashes, ${r.hangs} hangs, ${r.unclear} unclear\n`,
      );
    }
  }

  const date = new Date().toISOString().slice(0, 10);
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
    cwd: REPO,
    encoding: 'utf8',
  }).trim();
  const recorded = { date, commit, mode } as const;
  for (const r of [...scenarios, ...fuzz]) r.recorded = recorded;
  const meta = {
    machine: `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`,
    command: ['node test/reliability/run.ts', ...variant.map((f) => `--kubelet-flag=${f}`)].join(' '),
  };
  if (mode === 'full' && values.out === undefined) {
    // Each result is kept by id; the report is rendered from every kept result, so running some
    // scenarios again keeps the others' last figures.
    await mkdir(RESULTS_DIR, { recursive: true });
    for (const r of scenarios) await writeJson(join(RESULTS_DIR, `${r.id}.json`), r);
    for (const f of fuzz) await writeJson(join(RESULTS_DIR, `fuzz-${f.surface}.json`), f);
    const kept = await readKept();
    await writeFile(join(REPO, 'docs', 'reliability.md'), renderReport(meta, kept.scenarios, kept.fuzz));
    process.stdout.write(`report: docs/reliability.md (results in ${RESULTS_DIR})\n`);
  } else {
    const out = values.out ?? join(REPO, 'bench', 'results', `${date}-reliability-${mode}.md`);
    await mkdir(dirname(out), { recursive: true });
    await writeFile(out, renderReport(meta, scenarios, fuzz));
    await writeJson(out.replace(/\.md$/, '.json'), { scenarios, fuzz });
    process.stdout.write(`report: ${out}\n`);
  }
  return scenarios.every(passed) && fuzz.every(fuzzPassed) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`reliability: ${describeError(err)}\n`);
    process.exit(2);
  },
);
