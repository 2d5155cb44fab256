/**
 * Churn: does a kubelet stay flat under pod turnover? Standalone static pods: every 10 s, 10 new
 * manifests are written and the 10 of the previous round removed (bench/lib/churn-pods.ts: pods
 * that log and wait, exit, crash-loop, use an emptyDir on disk or on tmpfs), for `--duration`;
 * then the last round is removed and the node drains for `--drain`. Every 10 s: containerd's
 * containers and sandboxes (CRI), the kubelet's root dir and pod log dirs (bytes, entries), mounts
 * under the root dir, the kubelet's RSS, CPU and fds, and its read-only /pods. Each kubelet runs
 * alone, in turn, on a freshly restarted benchmark containerd (bench/lib/containerd.ts).
 *
 *   flock /tmp/tskubelet-bed.lock node bench/churn.ts [--quick] [--duration 30m] [--drain 90s]
 *                                                     [--kubelets tskubelet,upstream] [--out FILE.md]
 *                                                     [--tskubelet-flag FLAG]...
 *
 * `--tskubelet-flag` adds a flag to tskubelet's command line (a soak of a variant, e.g.
 * `--tskubelet-flag=--evented-pleg=true`); the report's command line says so.
 *
 * Writes FILE.md (default bench/results/<date>-churn[-quick].md), one SVG per series beside it
 * (FILE-<series>.svg) and the raw samples (FILE.json); prints the verdict. See bench/README.md.
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { basename, dirname, join } from 'node:path';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { createCriClient } from '../src/runtime/cri/index.ts';
import { DEFAULT_POD_LOGS_DIR } from '../src/config/defaults.ts';
import { describeError } from '../src/util/errors.ts';
import { nullLogger } from '../src/util/logger.ts';
import { sleep } from '../src/util/abort.ts';
import { ensureKubernetesBinaries, kubernetesBinary } from '../test/harness/cluster/index.ts';
import {
  BENCH_PATHS,
  removeAllBenchPods,
  restartBenchContainerd,
  stopBenchContainerd,
} from './lib/containerd.ts';
import {
  BENCH_READONLY_PORT,
  KUBELETS,
  isTskubelet,
  kubeletApiPort,
  removeKubeletDir,
  removePodLogDirs,
  startKubelet,
  type KubeletKind,
} from '../test/kit/kubelets.ts';
import { CHURN_PREFIX, CHURN_ROUND, churnManifest, churnPodName } from './lib/churn-pods.ts';
import { createChurnSampler, type ChurnSample } from './lib/churn-sample.ts';
import { churnPlan, parseDurationS, phaseAt } from './lib/churn-schedule.ts';
import { probeHeap, scrapeGoHeap } from './lib/heap.ts';
import {
  fmt,
  SERIES,
  seriesChart,
  seriesResults,
  summaryTable,
  verdictLines,
  type ChurnRun,
} from './lib/churn-report.ts';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    duration: { type: 'string' },
    drain: { type: 'string' },
    kubelets: { type: 'string' },
    out: { type: 'string' },
    'tskubelet-flag': { type: 'string', multiple: true },
  },
});
const tskubeletFlags = values['tskubelet-flag'] ?? [];
const quick = values.quick;
const plan = churnPlan(
  parseDurationS(values.duration ?? (quick ? '3m' : '30m')),
  parseDurationS(values.drain ?? '90s'),
);
const kubelets: KubeletKind[] = values.kubelets
  ? values.kubelets.split(',').map((k) => {
      if (!(KUBELETS as readonly string[]).includes(k)) throw new Error(`unknown kubelet ${k}`);
      return k as KubeletKind;
    })
  : [...KUBELETS];
const NODE: Record<KubeletKind, string> = {
  tskubelet: 'bench-tsk',
  'tskubelet-unpaced': 'bench-tsk-unpaced',
  'tskubelet-base': 'bench-tsk-base',
  upstream: 'bench-upstream',
};
/** After /healthz: the kubelet's start-up work (first relist, file source) settles before the baseline. */
const SETTLE_MS = 10_000;
const REPO = join(import.meta.dirname, '..');
const DATE = new Date().toISOString().slice(0, 10);
const OUT = values.out ?? join(REPO, 'bench', 'results', `${DATE}-churn${quick ? '-quick' : ''}.md`);
const STEM = OUT.replace(/\.md$/, '');
const RUN_LOG_DIR = join('/var/log/tskubelet-bench', new Date().toISOString().replace(/[:.]/g, '-'));

const started = Date.now();
function log(msg: string): void {
  const s = ((Date.now() - started) / 1000).toFixed(0).padStart(5);
  process.stderr.write(`[${s}s] ${msg}\n`);
}

function sampleLine(kind: KubeletKind, s: ChurnSample): string {
  return (
    `${kind} t=${s.t}s ${s.phase}: containers ${s.containers} (${s.containersRunning} running), ` +
    `sandboxes ${s.sandboxes} (${s.sandboxesReady} ready), root ${fmt(s.rootBytes / 2 ** 20, 2)} MiB / ` +
    `${s.rootFiles} entries / ${s.rootMounts} mounts, logs ${fmt(s.logBytes / 1024, 1)} KiB / ${s.logFiles}, ` +
    `RSS ${fmt(s.rssKiB / 1024, 1)} MiB, heap ${fmt(s.heapUsedMiB, 1)} / ${fmt(s.heapTotalMiB, 1)} MiB, ` +
    `CPU ${fmt(s.cpuCores, 3)}, fds ${s.fds}, /pods ${s.pods}` +
    (s.errors.length ? `; errors: ${s.errors.join('; ')}` : '')
  );
}

/** Resolves at `at` (ms epoch); throws if the kubelet died meanwhile. */
async function until(at: number, alive: () => boolean, kind: KubeletKind): Promise<void> {
  const wait = at - Date.now();
  if (wait > 0) await sleep(wait);
  if (!alive()) throw new Error(`${kind} exited during the churn`);
}

async function churnRun(kind: KubeletKind, runs: ChurnRun[]): Promise<void> {
  const dir = join(BENCH_PATHS.kubeletRoot, `churn-${kind}`);
  const root = join(dir, 'root');
  const manifests = join(dir, 'manifests');
  const run: ChurnRun = { kind, samples: [], podsCreated: 0, podsSeen: 0, lateRounds: 0 };
  runs.push(run);
  log(`${kind}: restarting the benchmark containerd (load ${loadavg()[0]?.toFixed(2)})`);
  const bed = await restartBenchContainerd(nullLogger);
  const cri = createCriClient({ endpoint: bed.endpoint });
  await removeKubeletDir(dir);
  await mkdir(manifests, { recursive: true });
  await mkdir(root, { recursive: true });
  await removePodLogDirs(CHURN_PREFIX);
  const logFile = join(RUN_LOG_DIR, `churn-${kind}.log`);
  // tskubelet's heap comes from the preloaded probe, which answers SIGUSR2 only with a file to write.
  const eldFile = isTskubelet(kind) ? join(RUN_LOG_DIR, `churn-${kind}.eld.jsonl`) : undefined;
  const k = await startKubelet({
    kind,
    nodeName: NODE[kind],
    endpoint: bed.endpoint,
    rootDir: root,
    manifestDir: manifests,
    logFile,
    eldFile,
    readOnlyPort: BENCH_READONLY_PORT,
    extraArgs: tskubeletFlags,
  });
  const seen = new Set<string>();
  let failed = false;
  try {
    await k.ready(60_000);
    // Created before the settle, so the baseline's CPU is the idle kubelet's over the settle.
    const sampler = createChurnSampler({
      cri,
      pid: k.pid,
      rootDir: root,
      logsDir: DEFAULT_POD_LOGS_DIR,
      podPrefix: CHURN_PREFIX,
      podsUrl: `http://127.0.0.1:${BENCH_READONLY_PORT}/pods`,
      heap: eldFile ? () => probeHeap(k.pid, eldFile) : () => scrapeGoHeap(kubeletApiPort(kind)),
    });
    await sleep(SETTLE_MS);
    // Either loop failing stops the other at its next step.
    const alive = () => !k.exited() && !failed;
    const record = async (t: number): Promise<void> => {
      const s = await sampler.take(t, phaseAt(plan, t));
      for (const n of s.podNames) if (n.startsWith(CHURN_PREFIX)) seen.add(n);
      const { podNames: _names, ...kept } = s;
      run.samples.push(kept);
      run.podsSeen = seen.size;
      log(sampleLine(kind, s));
      if (s.sampleMs > (plan.intervalS * 1000) / 2) log(`${kind}: sample took ${s.sampleMs} ms`);
    };
    await record(0);
    const t0 = Date.now();
    const rounds = (async () => {
      let previous: string[] = [];
      for (let r = 0; r <= plan.rounds; r++) {
        const at = t0 + r * plan.intervalS * 1000;
        await until(at, alive, kind);
        if (Date.now() - at > 1_000) run.lateRounds++;
        for (const f of previous) rmSync(f, { force: true });
        previous = [];
        if (r === plan.rounds) break; // churn ends: the last round removed, nothing new
        for (let i = 0; i < CHURN_ROUND.length; i++) {
          const kindOfPod = CHURN_ROUND[i] ?? 'sleep';
          const name = churnPodName(r, i);
          const tmp = join(manifests, `.${name}.tmp`);
          writeFileSync(tmp, JSON.stringify(churnManifest(name, kindOfPod)));
          renameSync(tmp, join(manifests, `${name}.json`));
          previous.push(join(manifests, `${name}.json`));
          run.podsCreated++;
        }
      }
      log(`${kind}: churn ends (${plan.rounds} rounds, ${run.podsCreated} pods); draining`);
    })();
    const samples = (async () => {
      for (const t of plan.sampleTimes.filter((x) => x > 0)) {
        await until(t0 + t * 1000, alive, kind);
        await record(t);
      }
    })();
    await Promise.all([rounds, samples]);
  } catch (err) {
    failed = true;
    run.error = describeError(err);
    throw err;
  } finally {
    await k.stop();
    cri.close();
    await removeAllBenchPods(bed).catch((err: unknown) => log(`${kind}: cleanup: ${describeError(err)}`));
    await removeKubeletDir(dir);
    await removePodLogDirs(CHURN_PREFIX);
    log(`${kind}: done; its log: ${logFile}`);
  }
}

function machine(): string[] {
  const git = (args: string[]) => {
    try {
      return execFileSync('git', args, { cwd: REPO, encoding: 'utf8' }).trim();
    } catch {
      return '?'; // not a git checkout: the report says so
    }
  };
  // The results being written are not a change to what ran.
  const dirty =
    git(['status', '--porcelain', '--', '.', ':!bench/results']) === '' ? '' : ' (uncommitted changes)';
  let containerd = '?';
  try {
    containerd = execFileSync('containerd', ['--version'], { encoding: 'utf8' }).trim().split(' ')[2] ?? '?';
  } catch {
    // left as '?': the report still names the rest
  }
  return [
    `- machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${release()}`,
    `- tskubelet ${git(['rev-parse', '--short', 'HEAD'])}${dirty}, Node.js ${process.version}; upstream kubelet 1.20.2 (${kubernetesBinary('kubelet')}); containerd ${containerd}`,
  ];
}

/** Seconds as minutes, at most one decimal ("3", "2.5"). */
function minutes(s: number): string {
  return String(Math.round(s / 6) / 10);
}

function render(runs: readonly ChurnRun[], final: boolean): { md: string; verdict: string[] } {
  const results = seriesResults(plan, runs);
  const verdict = verdictLines(
    results,
    runs.map((r) => r.kind),
  );
  const svgName = (key: string) => `${basename(STEM)}-${key}.svg`;
  const parts = [
    `# Churn: tskubelet vs upstream kubelet 1.20.2 — ${DATE}${quick ? ' (quick)' : ''}`,
    '',
    `Command: \`node bench/churn.ts${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}\` (under \`flock /tmp/tskubelet-bed.lock\`); ${final ? 'total' : 'so far'} ${((Date.now() - started) / 60_000).toFixed(1)} min. How it measures: bench/README.md ("Churn").`,
    '',
    ...machine(),
    `- workload: standalone static pods; every ${plan.intervalS} s ${CHURN_ROUND.length} new manifests (${[...new Set(CHURN_ROUND)].map((k) => `${CHURN_ROUND.filter((x) => x === k).length}× ${k}`).join(', ')}; bench/lib/churn-pods.ts) and the previous round's removed, ${plan.rounds} rounds (${minutes(plan.churnS)} min), then ${plan.drainS} s of drain with no pods`,
    `- samples every ${plan.intervalS} s, half-way between rounds; the trend is the least-squares slope over the churn after a ${plan.warmupS} s warm-up, per 10 min; "flat" = |trend| within the larger of an absolute amount and 5 % of the mean (CPU: 10 %) per 10 min (bench/lib/churn-report.ts)`,
    '',
    plan.churnS < 600 ? '## Verdict (indicative only: a short run)' : '## Verdict',
    '',
    ...(plan.churnS < 600
      ? [
          `A ${minutes(plan.churnS)}-minute run fits its trend over ${minutes(plan.churnS - plan.warmupS)} minutes and extrapolates it to 10 minutes: a once-a-minute sawtooth (the container GC: upstream's containers, sandboxes and both kubelets' log directories) or the heap's first minutes decide the slope. It checks the machinery; the 30-minute run judges.`,
          '',
        ]
      : []),
    ...verdict.map((v) => `- ${v}`),
    '',
    '## Summary',
    '',
    'idle before = before the first round; start / middle / end / max over the fitted window (churn after the warm-up); after drain = the last sample, ' +
      `${plan.drainS} s after the last manifests were removed.`,
    '',
    summaryTable(results),
    '',
    table2(runs),
    '',
    '## Plots',
    '',
    'Minutes since the first round; grey: the warm-up left out of the trend; dotted line: the last manifests removed.',
    '',
    ...SERIES.flatMap((d) => [`![${d.title}](${svgName(d.key)})`, '']),
    `Raw samples: [${basename(STEM)}.json](${basename(STEM)}.json).`,
    '',
  ];
  return { md: parts.join('\n'), verdict };
}

function table2(runs: readonly ChurnRun[]): string {
  const lines = runs.map((r) => {
    const errs = r.samples.reduce((a, s) => a + s.errors.length, 0);
    const slowest = Math.max(0, ...r.samples.map((s) => s.sampleMs));
    return `| ${r.kind} | ${r.podsCreated} | ${r.podsSeen} | ${r.lateRounds} | ${r.samples.length} | ${slowest} | ${errs} | ${r.error ?? '—'} |`;
  });
  return [
    '| kubelet | pods created | pods seen in containerd (lower bound of those started) | late rounds (> 1 s) | samples | slowest sample ms | sample errors | run error |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...lines,
  ].join('\n');
}

function write(runs: readonly ChurnRun[], final: boolean): string[] {
  mkdirSync(dirname(OUT), { recursive: true });
  const { md, verdict } = render(runs, final);
  writeFileSync(OUT, md);
  for (const def of SERIES) writeFileSync(`${STEM}-${def.key}.svg`, seriesChart(def, plan, runs));
  writeFileSync(
    `${STEM}.json`,
    `${JSON.stringify({ date: DATE, argv: process.argv.slice(2), plan, runs }, null, 1)}\n`,
  );
  return verdict;
}

mkdirSync(RUN_LOG_DIR, { recursive: true });
log(
  `churn: ${plan.rounds} rounds of ${CHURN_ROUND.length} pods every ${plan.intervalS} s, then ${plan.drainS} s drain; kubelets ${kubelets.join(', ')}; results to ${OUT}; logs in ${RUN_LOG_DIR}`,
);
const runs: ChurnRun[] = [];
try {
  if (kubelets.includes('upstream')) await ensureKubernetesBinaries(nullLogger);
  for (const kind of kubelets) {
    try {
      await churnRun(kind, runs);
    } catch (err) {
      log(`FAILED ${kind}: ${describeError(err)}`);
    }
    write(runs, false);
  }
} finally {
  await stopBenchContainerd(nullLogger);
}
const verdict = write(runs, true);
process.stdout.write(`\nChurn verdict (trend per 10 min over the churn after the warm-up):\n`);
for (const r of seriesResults(plan, runs)) {
  process.stdout.write(
    `  ${r.kind.padEnd(10)} ${r.def.key.padEnd(12)} ${fmt(r.summary.slopePer10Min, r.def.digits + 1).padStart(10)} ${r.def.unit} / 10 min (±${fmt(r.summary.allowedPer10Min, r.def.digits + 1)}): ${r.summary.verdict}\n`,
  );
}
for (const v of verdict) process.stdout.write(`${v}\n`);
log(`done in ${((Date.now() - started) / 60_000).toFixed(1)} min; written ${OUT} (+ svg, json)`);
