/**
 * The reliability suite (issue 13): every fault scenario on the real bed, then every fuzzed input
 * surface, and a report of what was done, how often, and what was seen.
 *
 *   node test/reliability/run.ts [--quick] [--only id,id] [--reps N] [--fuzz-runs N] [--no-fuzz]
 *                                [--no-faults] [--out FILE]
 *
 * Full mode (the default) writes docs/reliability.md and bench/results/<date>-reliability.json;
 * --quick writes bench/results/<date>-reliability-quick.md. Run it alone on the bed:
 * `flock /tmp/tskubelet-bed.lock node test/reliability/run.ts`. Exits 1 when a check fails.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger, nullLogger } from '../../src/util/logger.ts';
import { describeError } from '../../src/util/errors.ts';
import { SCENARIOS } from './scenarios/index.ts';
import { SURFACES } from './fuzz/index.ts';
import { check, fuzzPassed, passed, renderReport, type FuzzResult, type ScenarioResult } from './report.ts';

const REPO = join(import.meta.dirname, '..', '..');
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
      verbose: { type: 'boolean', default: false },
    },
  });
  const mode = values.quick ? 'quick' : 'full';
  const only = values.only?.split(',').filter(Boolean);
  const logger = values.verbose ? createLogger({ verbosity: 4, format: 'text' }) : nullLogger;
  const started = Date.now();
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
  const machine = `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`;
  const command = `node test/reliability/run.ts ${process.argv.slice(2).join(' ')}`.trim();
  const report = renderReport(
    { mode, date, commit, machine, wallMs: Date.now() - started, command },
    scenarios,
    fuzz,
  );
  const out =
    values.out ??
    (mode === 'full' && !only
      ? join(REPO, 'docs', 'reliability.md')
      : join(REPO, 'bench', 'results', `${date}-reliability-${mode}.md`));
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, report);
  await writeFile(out.replace(/\.md$/, '.json'), JSON.stringify({ scenarios, fuzz }, null, 1) + '\n');
  process.stdout.write(`report: ${out}\n`);
  return scenarios.every(passed) && fuzz.every(fuzzPassed) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`reliability: ${describeError(err)}\n`);
    process.exit(2);
  },
);
