/**
 * tskubelet against the upstream kubelet 1.20.2 on the same machine, in the same run (issue 4).
 * Every measurement runs alone, on a freshly restarted containerd of its own (bench/lib/containerd.ts)
 * with the images present; the kubelets run in turn, never at once. See bench/README.md.
 *
 *   node bench/run.ts [--quick] [--scenario floor,static,cluster,steady,apiload] [--n 1,10,30,90]
 *                     [--steady-pods 0,35,110] [--kubelets tskubelet,upstream] [--window 60]
 *                     [--exec-rate 50] [--no-token] [--no-qos-cgroups] [--cpu-prof DIR] [--base-tree DIR] [--out FILE]
 *
 * Results: printed, and written to bench/results/<YYYY-MM-DD>.md (-quick.md for --quick), with the
 * charts of how cost grows with the pod count beside it (<FILE>-<chart>.svg) when the run has more
 * than one N or pod count. Scenarios: bench/lib/scenario-*.ts; the report: bench/lib/report.ts.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApiClient } from '../src/api/client.ts';
import { describeError } from '../src/util/errors.ts';
import { nullLogger } from '../src/util/logger.ts';
import { ensureKubernetesBinaries, startCluster, kubernetesBinary } from '../test/harness/cluster/index.ts';
import { stopBenchContainerd } from './lib/containerd.ts';
import { KNOWN_KUBELETS, KUBELETS, kubeletArgv, type KubeletKind } from '../test/kit/kubelets.ts';
import { APILOAD } from './lib/apiload.ts';
import { createResults, pushRow } from './lib/bench-results.ts';
import { OBSERVE_MS, type BenchEnv, type ClusterCtx } from './lib/scenario-env.ts';
import { clusterRun, floorRun, staticRun } from './lib/scenario-startup.ts';
import { steadyRun } from './lib/scenario-steady.ts';
import { apiloadRun } from './lib/scenario-apiload.ts';
import { machineLines, renderReport } from './lib/report.ts';
import { scaleCharts, type ChartKey } from './lib/scale-report.ts';

const SCENARIOS = ['floor', 'static', 'cluster', 'steady', 'apiload'] as const;
type Scenario = (typeof SCENARIOS)[number];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    scenario: { type: 'string' },
    n: { type: 'string' },
    'steady-pods': { type: 'string' },
    kubelets: { type: 'string' },
    window: { type: 'string' },
    'exec-rate': { type: 'string' },
    'no-token': { type: 'boolean', default: false },
    'no-qos-cgroups': { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    out: { type: 'string' },
    // Kind tskubelet-base: bin/tskubelet of this tree (another commit's worktree), same flags.
    'base-tree': { type: 'string' },
  },
});
if (values['base-tree']) process.env.TSKUBELET_BASE_TREE = values['base-tree'];

/** "1,10,30" → [1, 10, 30]; every entry a non-negative integer (ascending when `sorted`). */
function intList(flag: string, text: string, sorted: boolean): number[] {
  const list = text.split(',').map((s) => {
    const v = Number(s);
    if (!Number.isInteger(v) || v < 0) throw new Error(`--${flag}: ${s} is not a non-negative integer`);
    return v;
  });
  return sorted ? [...new Set(list)].sort((a, b) => a - b) : list;
}

const quick = values.quick;
const scenarios = new Set<Scenario>(
  values.scenario
    ? values.scenario.split(',').map((s) => {
        if (!(SCENARIOS as readonly string[]).includes(s)) throw new Error(`unknown scenario ${s}`);
        return s as Scenario;
      })
    : SCENARIOS,
);
const NS_LIST = intList('n', values.n ?? (quick ? '10' : '1,10,30,90'), false);
const STEADY_PODS = intList('steady-pods', values['steady-pods'] ?? '0,35,110', true);
const kubelets: KubeletKind[] = values.kubelets
  ? values.kubelets.split(',').map((k) => {
      if (!(KNOWN_KUBELETS as readonly string[]).includes(k)) throw new Error(`unknown kubelet ${k}`);
      return k as KubeletKind;
    })
  : [...KUBELETS];
const WINDOW_MS = Number(values.window ?? (quick ? 20 : 60)) * 1000;
const EXEC_RATE = Number(values['exec-rate'] ?? APILOAD.execPerSec);
if (!(EXEC_RATE > 0)) throw new Error(`--exec-rate must be a positive number`);
const REPO = join(import.meta.dirname, '..');
const DATE = new Date().toISOString().slice(0, 10);
const OUT = values.out ?? join(REPO, 'bench', 'results', `${DATE}${quick ? '-quick' : ''}.md`);
/** Charts go beside the results file: <OUT without .md>-<chart>.svg. */
const STEM = OUT.replace(/\.md$/, '');

const started = Date.now();
function log(msg: string): void {
  const s = ((Date.now() - started) / 1000).toFixed(0).padStart(5);
  process.stderr.write(`[${s}s] ${msg}\n`);
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: REPO, encoding: 'utf8' }).trim();
  } catch {
    return '?';
  }
}

function containerdVersion(): string {
  try {
    return execFileSync('containerd', ['--version'], { encoding: 'utf8' })
      .trim()
      .split(' ')
      .slice(1, 3)
      .join(' ');
  } catch {
    return '?';
  }
}

/** The limits that many pods run into: inotify, pids, open files (this process's, which the kubelets inherit). */
function limits(): string {
  const read = (p: string) => {
    try {
      return readFileSync(p, 'utf8').trim();
    } catch {
      return '?';
    }
  };
  const nofile = /Max open files\s+(\S+)\s+(\S+)/.exec(read('/proc/self/limits'));
  return [
    `fs.inotify.max_user_instances ${read('/proc/sys/fs/inotify/max_user_instances')}`,
    `fs.inotify.max_user_watches ${read('/proc/sys/fs/inotify/max_user_watches')}`,
    `kernel.pid_max ${read('/proc/sys/kernel/pid_max')}`,
    `open files ${nofile ? `${nofile[1]} / ${nofile[2]}` : '?'} (soft / hard, inherited by containerd and the kubelets)`,
  ].join('; ');
}

const env: BenchEnv = {
  log,
  results: createResults(),
  runLogDir: join('/var/log/tskubelet-bench', new Date().toISOString().replace(/[:.]/g, '-')),
  nodeOptions: values['cpu-prof'] ? `--cpu-prof --cpu-prof-dir=${values['cpu-prof']}` : undefined,
  token: !values['no-token'],
  qosCgroups: !values['no-qos-cgroups'],
  windowMs: WINDOW_MS,
  execRate: EXEC_RATE,
  steadyPods: STEADY_PODS,
  checkpoint: async () => {
    await render();
  },
};
const { results } = env;

const MACHINE = machineLines({
  git,
  containerd: containerdVersion(),
  upstreamBinary: kubernetesBinary('kubelet'),
  ns: NS_LIST,
  steadyPods: STEADY_PODS,
  windowMs: WINDOW_MS,
  token: env.token,
  qosCgroups: env.qosCgroups,
  limits: limits(),
});

/** Writes the results file and its charts; returns the markdown. */
async function render(final = false): Promise<string> {
  const charts = scaleCharts(results);
  const files = new Map<ChartKey, string>(charts.map((c) => [c.key, `${basename(STEM)}-${c.key}.svg`]));
  const md = renderReport(results, {
    date: DATE,
    quick,
    argv: process.argv.slice(2),
    minutes: (Date.now() - started) / 60_000,
    final,
    ns: NS_LIST,
    steadyPods: STEADY_PODS,
    windowMs: WINDOW_MS,
    token: env.token,
    execRate: EXEC_RATE,
    observeMs: OBSERVE_MS,
    machine: MACHINE,
    charts: files,
  });
  await mkdir(join(OUT, '..'), { recursive: true });
  await writeFile(OUT, md);
  for (const c of charts) await writeFile(`${STEM}-${c.key}.svg`, c.svg);
  return md;
}

async function unit(label: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    const msg = `${label}: ${describeError(err)}`;
    log(`FAILED ${msg}`);
    results.failures.push(msg);
  }
  await render();
}

mkdirSync(env.runLogDir, { recursive: true });
log(`logs in ${env.runLogDir}; results to ${OUT}`);
log(
  `upstream: ${kubeletArgv({ kind: 'upstream', nodeName: 'NODE', endpoint: 'unix://SOCK', rootDir: 'ROOT', manifestDir: 'DIR', logFile: '', qosCgroups: env.qosCgroups }).args.join(' ')}`,
);
try {
  // The upstream kubelet is built with the control plane (once, ~8 min on a fresh machine).
  if (kubelets.includes('upstream')) await ensureKubernetesBinaries(nullLogger);
  for (const n of NS_LIST) {
    if (scenarios.has('floor')) {
      for (const c of [...new Set([1, 2, 4, n])].filter((c) => c <= n)) {
        await unit(`floor N=${n} c=${c}`, async () => pushRow(results.floor, n, await floorRun(env, n, c)));
      }
    }
    if (scenarios.has('static')) {
      for (const kind of kubelets) {
        await unit(`static ${kind} N=${n}`, async () =>
          pushRow(results.static, n, await staticRun(env, kind, n)),
        );
      }
    }
  }
  if (scenarios.has('cluster') || scenarios.has('steady') || scenarios.has('apiload')) {
    log('starting the cluster bed (etcd, kube-apiserver, controller-manager, scheduler)');
    const cluster = await startCluster({ logger: nullLogger });
    const admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
    const ctx: ClusterCtx = { cluster, admin };
    try {
      if (scenarios.has('cluster')) {
        for (const n of NS_LIST) {
          for (const kind of kubelets) {
            await unit(`cluster ${kind} N=${n}`, async () =>
              pushRow(results.cluster, n, await clusterRun(env, ctx, kind, n)),
            );
          }
        }
      }
      if (scenarios.has('steady')) {
        for (const kind of kubelets) await unit(`steady ${kind}`, () => steadyRun(env, ctx, kind));
      }
      if (scenarios.has('apiload')) {
        for (const kind of kubelets) await unit(`api load ${kind}`, () => apiloadRun(env, ctx, kind));
      }
    } finally {
      admin.close();
      await cluster.stop();
    }
  }
} finally {
  await stopBenchContainerd(nullLogger);
}
const md = await render(true);
process.stdout.write(`${md}\n`);
log(`done in ${((Date.now() - started) / 60_000).toFixed(1)} min; written ${OUT}`);
