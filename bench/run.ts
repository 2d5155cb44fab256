/**
 * tskubelet against the upstream kubelet 1.20.2 on the same machine, in the same run (issue 4).
 * Every measurement runs alone, on a freshly restarted containerd of its own (bench/lib/containerd.ts)
 * with the images present; the kubelets run in turn, never at once. See bench/README.md.
 *
 *   node bench/run.ts [--quick] [--scenario floor,static,cluster,steady,apiload] [--n 1,10,30,90]
 *                     [--kubelets tskubelet,upstream] [--window 60] [--exec-rate 50] [--no-token]
 *                     [--cpu-prof DIR] [--out FILE]
 *
 * Results: printed, and written to bench/results/<YYYY-MM-DD>.md (-quick.md for --quick).
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem, release } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createCriClient, type CriClient } from '../src/runtime/cri/index.ts';
import { createApiClient } from '../src/api/client.ts';
import type { ApiClient } from '../src/api/client-types.ts';
import { describeError } from '../src/util/errors.ts';
import { nullLogger } from '../src/util/logger.ts';
import { sleep } from '../src/util/abort.ts';
import { BUSYBOX_IMAGE } from '../test/harness/images.ts';
import {
  ensureKubernetesBinaries,
  startCluster,
  type ClusterBed,
  kubernetesBinary,
} from '../test/harness/cluster/index.ts';
import {
  BENCH_PATHS,
  removeAllBenchPods,
  restartBenchContainerd,
  stopBenchContainerd,
  type BenchContainerd,
} from './lib/containerd.ts';
import {
  BENCH_UPSTREAM_PORT,
  KNOWN_KUBELETS,
  KUBELETS,
  isTskubelet,
  kubeletApiPort,
  kubeletArgv,
  removeKubeletDir,
  removePodLogDirs,
  startKubelet,
  type KubeletKind,
  type RunningKubelet,
} from './lib/kubelets.ts';
import { observeCri, type CriObserver } from './lib/observer.ts';
import { hostCpu, sampleProc, type UsageSummary } from './lib/proc.ts';
import { floorPod, runFloor } from './lib/floor.ts';
import { apiPod, staticManifest } from './lib/pods.ts';
import {
  createPods,
  deleteNode,
  deletePods,
  deletePodsOnNode,
  histogramDelta,
  histogramQuantile,
  scrapeHistogram,
  waitNodeReady,
  watchPods,
  type Histogram,
} from './lib/cluster.ts';
import { criRelistTimes, tskubeletRelistTimes } from './lib/relist.ts';
import {
  APILOAD_PREFIX,
  apiloadReport,
  apiloadTargets,
  APILOAD,
  measureApiLoad,
  type ApiLoadRow,
} from './lib/apiload.ts';
import { pkiPaths } from '../test/harness/cluster/control-plane.ts';
import { cores, mib, msText, ratio, sec, summarize, table, type Summary } from './lib/stats.ts';

const SCENARIOS = ['floor', 'static', 'cluster', 'steady', 'apiload'] as const;
type Scenario = (typeof SCENARIOS)[number];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    scenario: { type: 'string' },
    n: { type: 'string' },
    kubelets: { type: 'string' },
    window: { type: 'string' },
    'exec-rate': { type: 'string' },
    'no-token': { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    out: { type: 'string' },
  },
});
const quick = values.quick;
const scenarios = new Set<Scenario>(
  values.scenario
    ? values.scenario.split(',').map((s) => {
        if (!(SCENARIOS as readonly string[]).includes(s)) throw new Error(`unknown scenario ${s}`);
        return s as Scenario;
      })
    : SCENARIOS,
);
const NS_LIST = (values.n ?? (quick ? '10' : '1,10,30,90')).split(',').map(Number);
const kubelets: KubeletKind[] = values.kubelets
  ? values.kubelets.split(',').map((k) => {
      if (!(KNOWN_KUBELETS as readonly string[]).includes(k)) throw new Error(`unknown kubelet ${k}`);
      return k as KubeletKind;
    })
  : [...KUBELETS];
const WINDOW_MS = Number(values.window ?? (quick ? 20 : 60)) * 1000;
const TOKEN = !values['no-token'];
const EXEC_RATE = Number(values['exec-rate'] ?? APILOAD.execPerSec);
if (!(EXEC_RATE > 0)) throw new Error(`--exec-rate must be a positive number`);
const STEADY_PODS = [0, 35, 110];
const NAMESPACE = 'default';
const NODE: Record<KubeletKind, string> = {
  tskubelet: 'bench-tsk',
  'tskubelet-unpaced': 'bench-tsk-unpaced',
  upstream: 'bench-upstream',
};
const SETTLE_MS = 3_000;
/** How long teardown waits for every sandbox to be removed (upstream removes them in its 1-min GC). */
const REMOVAL_CAP_MS = 75_000;
const OBSERVE_MS = 200;
const REPO = join(import.meta.dirname, '..');
const DATE = new Date().toISOString().slice(0, 10);
const OUT = values.out ?? join(REPO, 'bench', 'results', `${DATE}${quick ? '-quick' : ''}.md`);
const RUN_LOG_DIR = join('/var/log/tskubelet-bench', new Date().toISOString().replace(/[:.]/g, '-'));

const started = Date.now();
function log(msg: string): void {
  const s = ((Date.now() - started) / 1000).toFixed(0).padStart(5);
  process.stderr.write(`[${s}s] ${msg}\n`);
}

// ---------------------------------------------------------------- results

interface Teardown {
  /** Per pod: delete → no ready sandbox and no running container. */
  stopped: number[];
  /** Per pod: delete → sandbox gone from the runtime (pods not removed within the cap are left out). */
  removed: number[];
  notRemoved: number;
}

interface StartupRow {
  runner: string;
  n: number;
  /** Per pod: created/written → running (static: CRI startedAt; cluster: Running seen by the watch). */
  latencies: number[];
  /** cluster only: created → CRI startedAt. */
  criLatencies?: number[];
  /** Per pod: created/written → its sandbox's CRI createdAt (the kubelet's reaction and queueing). */
  toSandbox?: number[];
  /** first write/create → last pod running. */
  batchMs: number;
  failed: number;
  usage?: UsageSummary;
  eld?: Eld;
  teardown?: Teardown;
  /** Machine-wide busy CPU (cores) during the batch: everything, this run included. */
  hostBusy?: number;
}

interface Eld {
  p50: number;
  p99: number;
  max: number;
  /** process.memoryUsage() at the end of the period, MiB. */
  heapUsed?: number;
  heapTotal?: number;
  external?: number;
}

interface SteadyRow {
  kubelet: KubeletKind;
  pods: number;
  usage: UsageSummary;
  containerd: UsageSummary;
  eld?: Eld;
  hostBusy: number;
}

interface RelistRow {
  what: string;
  stats: Summary | { p50: number; p99: number; n: number; max: number };
}

const results = {
  floor: new Map<number, StartupRow[]>(),
  static: new Map<number, StartupRow[]>(),
  cluster: new Map<number, StartupRow[]>(),
  steady: [] as SteadyRow[],
  relist: [] as RelistRow[],
  steadyTeardown: [] as StartupRow[],
  apiload: [] as ApiLoadRow[],
  failures: [] as string[],
  loads: [] as string[],
};

function push<K>(m: Map<K, StartupRow[]>, k: K, row: StartupRow): void {
  m.set(k, [...(m.get(k) ?? []), row]);
}

// ---------------------------------------------------------------- helpers

/** Runs `fn` on a freshly restarted containerd; removes every pod afterwards. */
async function withFreshContainerd<T>(
  label: string,
  fn: (bed: BenchContainerd, cri: CriClient) => Promise<T>,
): Promise<T> {
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  log(`${label} (load ${load})`);
  const bed = await restartBenchContainerd(nullLogger);
  await sleep(1_000);
  const cri = createCriClient({ endpoint: bed.endpoint });
  const h0 = hostCpu();
  try {
    return await fn(bed, cri);
  } finally {
    const h1 = hostCpu();
    const busy = (h1.busySec - h0.busySec) / ((h1.t - h0.t) / 1000);
    results.loads.push(
      `${label}: load ${load}; host CPU busy during the run ${busy.toFixed(2)} of ${cpus().length} cores (everything, this run included)`,
    );
    cri.close();
    await removeAllBenchPods(bed);
  }
}

function busyCores(h0: ReturnType<typeof hostCpu>): number {
  const h1 = hostCpu();
  return (h1.busySec - h0.busySec) / Math.max(0.001, (h1.t - h0.t) / 1000);
}

function countStarted(obs: CriObserver, prefix: string): number {
  return obs.matching(prefix).filter((p) => p.startedAt !== undefined).length;
}

function batchTimeout(n: number): number {
  return 60_000 + 2_000 * n;
}

async function eldMark(k: RunningKubelet, file: string | undefined): Promise<Eld | undefined> {
  if (!file || k.exited()) return undefined;
  const before = (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
  process.kill(k.pid, 'SIGUSR2');
  for (let i = 0; i < 50; i++) {
    const lines = (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);
    if (lines.length > before) {
      return JSON.parse(lines[lines.length - 1] ?? '{}') as Eld;
    }
    await sleep(20);
  }
  return undefined;
}

/** Waits until every pod has stopped, then (up to the cap) until every sandbox is removed. */
async function measureTeardown(obs: CriObserver, names: readonly string[], tDel: number): Promise<Teardown> {
  const obsOf = (n: string) => obs.pods.get(n);
  await obs.until(() => names.every((n) => obsOf(n)?.stoppedAt !== undefined), 120_000);
  await obs.until(
    () => names.every((n) => obsOf(n)?.removedAt !== undefined),
    REMOVAL_CAP_MS - (Date.now() - tDel),
  );
  const stopped: number[] = [];
  const removed: number[] = [];
  let notRemoved = 0;
  for (const n of names) {
    const o = obsOf(n);
    if (o?.stoppedAt !== undefined) stopped.push(o.stoppedAt - tDel);
    if (o?.removedAt !== undefined) removed.push(o.removedAt - tDel);
    else notRemoved++;
  }
  return { stopped, removed, notRemoved };
}

function kubeletDirs(unit: string, kind: KubeletKind) {
  const dir = join(BENCH_PATHS.kubeletRoot, `${unit}-${kind}`);
  return {
    dir,
    root: join(dir, 'root'),
    manifests: join(dir, 'manifests'),
    log: join(RUN_LOG_DIR, `${unit}-${kind}.log`),
    eld: isTskubelet(kind) ? join(RUN_LOG_DIR, `${unit}-${kind}.eld.jsonl`) : undefined,
  };
}

const nodeOptions = values['cpu-prof'] ? `--cpu-prof --cpu-prof-dir=${values['cpu-prof']}` : undefined;

// ---------------------------------------------------------------- the floor

async function floorRun(n: number, concurrency: number): Promise<StartupRow> {
  const prefix = `bk-f${n}c${concurrency}-`;
  return withFreshContainerd(`floor N=${n} concurrency ${concurrency}`, async (_bed, cri) => {
    const obs = observeCri(cri, { prefix, intervalMs: OBSERVE_MS, onError: log });
    try {
      const pods = Array.from({ length: n }, (_, i) => floorPod(`${prefix}${i}`, BUSYBOX_IMAGE));
      const h0 = hostCpu();
      const { t0 } = await runFloor(cri, pods, concurrency);
      await obs.until(() => countStarted(obs, prefix) >= n, batchTimeout(n));
      const hostBusy = busyCores(h0);
      const starts = obs.matching(prefix).flatMap((p) => (p.startedAt !== undefined ? [p.startedAt] : []));
      const toSandbox = obs
        .matching(prefix)
        .flatMap((p) => (p.sandboxCreatedAt !== undefined ? [p.sandboxCreatedAt - t0] : []));
      return {
        runner: `floor c=${concurrency === n && n > 1 ? 'all' : concurrency}`,
        n,
        latencies: starts.map((s) => s - t0),
        batchMs: Math.max(...starts) - t0,
        failed: n - starts.length,
        toSandbox,
        hostBusy,
      };
    } finally {
      await obs.stop();
      await removePodLogDirs(prefix);
    }
  });
}

// ---------------------------------------------------------------- scenario 1: static pods

async function staticRun(kind: KubeletKind, n: number): Promise<StartupRow> {
  const prefix = `bk-s${n}-`;
  const node = NODE[kind];
  const d = kubeletDirs(`static-n${n}`, kind);
  return withFreshContainerd(`static ${kind} N=${n}`, async (bed, cri) => {
    await removeKubeletDir(d.dir);
    await mkdir(d.manifests, { recursive: true });
    const k = await startKubelet({
      kind,
      nodeName: node,
      endpoint: bed.endpoint,
      rootDir: d.root,
      manifestDir: d.manifests,
      logFile: d.log,
      eldFile: d.eld,
      nodeOptions,
    });
    const obs = observeCri(cri, { prefix, intervalMs: OBSERVE_MS, onError: log });
    try {
      await k.ready(60_000);
      await sleep(SETTLE_MS);
      const sampler = sampleProc(k.pid, 250);
      await eldMark(k, d.eld);
      const h0 = hostCpu();
      const written = new Map<string, number>();
      const files: string[] = [];
      for (let i = 0; i < n; i++) {
        const name = `${prefix}${i}`;
        const file = join(d.manifests, `${name}.json`);
        writeFileSync(join(d.manifests, `.${name}.tmp`), JSON.stringify(staticManifest(name)));
        renameSync(join(d.manifests, `.${name}.tmp`), file);
        written.set(`${name}-${node}`, Date.now());
        files.push(file);
      }
      const t0 = Math.min(...written.values());
      await obs.until(() => countStarted(obs, prefix) >= n, batchTimeout(n));
      const tEnd = Date.now();
      const hostBusy = busyCores(h0);
      const eld = await eldMark(k, d.eld);
      const usage = sampler.summary(t0 - 300, tEnd);
      sampler.stop();
      const latencies: number[] = [];
      const toSandbox: number[] = [];
      let last = NaN;
      for (const [name, w] of written) {
        const sb = obs.pods.get(name)?.sandboxCreatedAt;
        if (sb !== undefined) toSandbox.push(sb - w);
        const s = obs.pods.get(name)?.startedAt;
        if (s === undefined) continue;
        latencies.push(s - w);
        last = Number.isNaN(last) ? s : Math.max(last, s);
      }
      await sleep(SETTLE_MS);
      const tDel = Date.now();
      for (const f of files) rmSync(f);
      const teardown = await measureTeardown(obs, [...written.keys()], tDel);
      return {
        runner: kind,
        n,
        latencies,
        batchMs: last - t0,
        failed: n - latencies.length,
        toSandbox,
        usage,
        eld,
        teardown,
        hostBusy,
      };
    } finally {
      await obs.stop();
      await k.stop();
      await removeKubeletDir(d.dir);
      await removePodLogDirs(prefix);
    }
  });
}

// ---------------------------------------------------------------- scenario 2: cluster pods

interface ClusterCtx {
  cluster: ClusterBed;
  admin: ApiClient;
}

async function startClusterKubelet(
  ctx: ClusterCtx,
  kind: KubeletKind,
  bed: BenchContainerd,
  d: ReturnType<typeof kubeletDirs>,
  secureApi = false,
): Promise<RunningKubelet> {
  const node = NODE[kind];
  await deletePodsOnNode(ctx.admin, NAMESPACE, node);
  await deleteNode(ctx.admin, node);
  await removeKubeletDir(d.dir);
  await mkdir(d.root, { recursive: true });
  const k = await startKubelet({
    kind,
    nodeName: node,
    endpoint: bed.endpoint,
    rootDir: d.root,
    kubeconfig: await ctx.cluster.kubeletKubeconfig(node),
    logFile: d.log,
    eldFile: d.eld,
    nodeOptions,
    ...(secureApi ? { clientCAFile: ctx.cluster.caFile } : {}),
  });
  try {
    await k.ready(60_000);
    await waitNodeReady(ctx.admin, node, 90_000);
  } catch (err) {
    await k.stop();
    throw err;
  }
  await sleep(SETTLE_MS);
  return k;
}

async function stopClusterKubelet(
  ctx: ClusterCtx,
  kind: KubeletKind,
  k: RunningKubelet,
  d: ReturnType<typeof kubeletDirs>,
  prefix: string,
): Promise<void> {
  await k.stop();
  await deletePodsOnNode(ctx.admin, NAMESPACE, NODE[kind]);
  await deleteNode(ctx.admin, NODE[kind]);
  await removeKubeletDir(d.dir);
  await removePodLogDirs(prefix);
}

async function clusterRun(ctx: ClusterCtx, kind: KubeletKind, n: number): Promise<StartupRow> {
  const prefix = `bk-c${n}-`;
  const d = kubeletDirs(`cluster-n${n}`, kind);
  return withFreshContainerd(`cluster ${kind} N=${n}`, async (bed, cri) => {
    const k = await startClusterKubelet(ctx, kind, bed, d);
    const obs = observeCri(cri, { prefix, intervalMs: OBSERVE_MS, onError: log });
    const watch = await watchPods(ctx.admin, NAMESPACE, NODE[kind], log);
    try {
      const sampler = sampleProc(k.pid, 250);
      await eldMark(k, d.eld);
      const h0 = hostCpu();
      const pods = Array.from({ length: n }, (_, i) => apiPod(`${prefix}${i}`, NAMESPACE, NODE[kind], TOKEN));
      const created = await createPods(ctx.admin, NAMESPACE, pods);
      const t0 = Math.min(...created.values());
      const names = [...created.keys()];
      await watch.until(() => names.every((p) => watch.running.has(p)), batchTimeout(n));
      const tEnd = Date.now();
      const hostBusy = busyCores(h0);
      const eld = await eldMark(k, d.eld);
      const usage = sampler.summary(t0 - 300, tEnd);
      sampler.stop();
      const latencies: number[] = [];
      const criLatencies: number[] = [];
      const toSandbox: number[] = [];
      let last = NaN;
      for (const [name, c] of created) {
        const sb = obs.pods.get(name)?.sandboxCreatedAt;
        if (sb !== undefined) toSandbox.push(sb - c);
        const r = watch.running.get(name);
        if (r !== undefined) {
          latencies.push(r - c);
          last = Number.isNaN(last) ? r : Math.max(last, r);
        }
        const s = obs.pods.get(name)?.startedAt;
        if (s !== undefined) criLatencies.push(s - c);
      }
      await sleep(SETTLE_MS);
      const tDel = Date.now();
      await deletePods(ctx.admin, NAMESPACE, names);
      const teardown = await measureTeardown(obs, names, tDel);
      return {
        runner: kind,
        n,
        latencies,
        criLatencies,
        batchMs: last - t0,
        failed: n - latencies.length,
        toSandbox,
        usage,
        eld,
        teardown,
        hostBusy,
      };
    } finally {
      await watch.stop();
      await obs.stop();
      await stopClusterKubelet(ctx, kind, k, d, prefix);
    }
  });
}

// ---------------------------------------------------------------- scenarios 3 + 4: steady state, relist

async function steadyRun(ctx: ClusterCtx, kind: KubeletKind): Promise<void> {
  const prefix = 'bk-ss-';
  const d = kubeletDirs('steady', kind);
  await withFreshContainerd(`steady state ${kind}`, async (bed, cri) => {
    const k = await startClusterKubelet(ctx, kind, bed, d);
    const watch = await watchPods(ctx.admin, NAMESPACE, NODE[kind], log);
    const kSampler = sampleProc(k.pid, 1_000);
    const cSampler = sampleProc(bed.pid, 1_000);
    let count = 0;
    let relistHist: Histogram | undefined;
    try {
      for (const target of STEADY_PODS) {
        if (target > count) {
          const pods = Array.from({ length: target - count }, (_, i) =>
            apiPod(`${prefix}${count + i}`, NAMESPACE, NODE[kind], TOKEN),
          );
          const names = pods.map((p) => p.metadata.name);
          await createPods(ctx.admin, NAMESPACE, pods);
          const ok = await watch.until(
            () => names.every((p) => watch.running.has(p)),
            batchTimeout(names.length),
          );
          if (!ok) results.failures.push(`steady ${kind}: not all of ${target} pods running`);
          count = target;
          await sleep(10_000);
        }
        log(`steady ${kind}: ${count} pods, ${WINDOW_MS / 1000} s window`);
        if (count === 0) await sleep(10_000); // the 0-pod window settles like the others
        const relist0 =
          kind === 'upstream' ? await scrapeHistogram(BENCH_UPSTREAM_PORT, RELIST_METRIC) : undefined;
        await eldMark(k, d.eld);
        const h0 = hostCpu();
        const t0 = Date.now();
        await sleep(WINDOW_MS);
        const t1 = Date.now();
        const hostBusy = busyCores(h0);
        const eld = await eldMark(k, d.eld);
        const relist1 =
          kind === 'upstream' ? await scrapeHistogram(BENCH_UPSTREAM_PORT, RELIST_METRIC) : undefined;
        if (relist0 && relist1) relistHist = histogramDelta(relist0, relist1);
        results.steady.push({
          kubelet: kind,
          pods: count,
          usage: kSampler.summary(t0, t1),
          containerd: cSampler.summary(t0, t1),
          eld,
          hostBusy,
        });
        await render();
      }
      if (kind === 'upstream') {
        const h = relistHist;
        results.relist.push({
          what: `upstream kubelet_pleg_relist_duration_seconds (${count} pods, its own ${WINDOW_MS / 1000} s window; bucket-interpolated)`,
          stats: h
            ? {
                n: h.count,
                p50: histogramQuantile(h, 0.5) * 1000,
                p99: histogramQuantile(h, 0.99) * 1000,
                max: NaN,
              }
            : { n: 0, p50: NaN, p99: NaN, max: NaN },
        });
      } else {
        log(`relist: ${count} pods`);
        results.relist.push({
          what: `CRI ListPodSandbox + ListContainers from the bench (${count} pods; proxy, tskubelet running)`,
          stats: summarize(await criRelistTimes(cri, 50, 100)),
        });
        results.relist.push({
          what: `tskubelet PLEG relist code, in the bench process (${count} pods, tskubelet running)`,
          stats: summarize(await tskubeletRelistTimes(cri, 50, 100)),
        });
      }
      // Scenario 5 with the 110 pods.
      const obs = observeCri(cri, { prefix, intervalMs: OBSERVE_MS, onError: log });
      const names = [...watch.running.keys()].filter((n) => n.startsWith(prefix));
      await obs.until(() => countStarted(obs, prefix) >= names.length, 60_000);
      const tDel = Date.now();
      await deletePods(ctx.admin, NAMESPACE, names);
      const teardown = await measureTeardown(obs, names, tDel);
      await obs.stop();
      results.steadyTeardown.push({
        runner: kind,
        n: names.length,
        latencies: [],
        batchMs: NaN,
        failed: 0,
        teardown,
      });
    } finally {
      kSampler.stop();
      cSampler.stop();
      await watch.stop();
      await stopClusterKubelet(ctx, kind, k, d, prefix);
    }
  });
}

const RELIST_METRIC = 'kubelet_pleg_relist_duration_seconds';

// ---------------------------------------------------------------- scenario 6: the kubelet API under load

async function apiloadRun(ctx: ClusterCtx, kind: KubeletKind): Promise<void> {
  const d = kubeletDirs('apiload', kind);
  await withFreshContainerd(`api load ${kind}`, async (bed, cri) => {
    const k = await startClusterKubelet(ctx, kind, bed, d, true);
    try {
      const client = pkiPaths().apiserverKubeletClient;
      results.apiload.push(
        await measureApiLoad({
          kind,
          kubelet: k,
          port: kubeletApiPort(kind),
          containerdPid: bed.pid,
          cri,
          admin: ctx.admin,
          namespace: NAMESPACE,
          node: NODE[kind],
          windowMs: WINDOW_MS,
          execPerSec: EXEC_RATE,
          token: TOKEN,
          clientCert: { cert: client.cert, key: client.key },
          eldMark: () => eldMark(k, d.eld),
          log,
        }),
      );
    } finally {
      await stopClusterKubelet(ctx, kind, k, d, APILOAD_PREFIX);
    }
  });
}

// ---------------------------------------------------------------- report

function floorBest(
  n: number,
): { p50: number; p90: number; p99: number; max: number; batch: number } | undefined {
  const rows = results.floor.get(n);
  if (!rows || rows.length === 0) return undefined;
  const s = rows.map((r) => summarize(r.latencies));
  const min = (f: (x: Summary) => number) => Math.min(...s.map(f));
  return {
    p50: min((x) => x.p50),
    p90: min((x) => x.p90),
    p99: min((x) => x.p99),
    max: min((x) => x.max),
    batch: Math.min(...rows.map((r) => r.batchMs)),
  };
}

function eldText(e: Eld | undefined): string {
  return e ? `${msText(e.p99)} / ${msText(e.max)}` : '—';
}

function startupTable(m: Map<number, StartupRow[]>, withFloor: boolean, cluster: boolean): string {
  const header = [
    'N',
    'runner',
    'p50 s',
    'p90 s',
    'p99 s',
    'max s',
    'batch s',
    'to sandbox p50 / p99 s',
    ...(cluster ? ['CRI start p50 / p99 s'] : []),
    'kubelet CPU s',
    'peak RSS MiB',
    'ELD p99 / max ms',
    'host busy cores',
  ];
  const rows: string[][] = [];
  for (const n of [...new Set([...results.floor.keys(), ...m.keys()])].sort((a, b) => a - b)) {
    const all = [...(withFloor ? (results.floor.get(n) ?? []) : []), ...(m.get(n) ?? [])];
    for (const r of all) {
      const s = summarize(r.latencies);
      const c = r.criLatencies ? summarize(r.criLatencies) : undefined;
      rows.push([
        String(n),
        r.runner + (r.failed > 0 ? ` (${r.failed} not running)` : ''),
        sec(s.p50),
        sec(s.p90),
        sec(s.p99),
        sec(s.max),
        sec(r.batchMs),
        r.toSandbox ? `${sec(summarize(r.toSandbox).p50)} / ${sec(summarize(r.toSandbox).p99)}` : '—',
        ...(cluster ? [c ? `${sec(c.p50)} / ${sec(c.p99)}` : '—'] : []),
        r.usage ? r.usage.cpuSecTotal.toFixed(2) : '—',
        r.usage ? mib(r.usage.rssMaxKiB) : '—',
        eldText(r.eld),
        r.hostBusy !== undefined ? r.hostBusy.toFixed(2) : '—',
      ]);
    }
    const best = floorBest(n);
    if (withFloor && best) {
      rows.push([
        String(n),
        '**floor (best of)**',
        sec(best.p50),
        sec(best.p90),
        sec(best.p99),
        sec(best.max),
        sec(best.batch),
        '—',
        '—',
        '—',
        '—',
        '—',
      ]);
    }
  }
  return table(header, rows);
}

function ratioTable(m: Map<number, StartupRow[]>): string {
  const rows: string[][] = [];
  for (const [n, rs] of [...m].sort((a, b) => a[0] - b[0])) {
    const t = rs.find((r) => r.runner === 'tskubelet');
    const u = rs.find((r) => r.runner === 'upstream');
    const ts = t ? summarize(t.latencies) : undefined;
    const us = u ? summarize(u.latencies) : undefined;
    const f = floorBest(n);
    rows.push([
      String(n),
      ratio(ts?.p50 ?? NaN, f?.p50 ?? NaN),
      ratio(ts?.p99 ?? NaN, f?.p99 ?? NaN),
      ratio(us?.p50 ?? NaN, f?.p50 ?? NaN),
      ratio(us?.p99 ?? NaN, f?.p99 ?? NaN),
      ratio(ts?.p50 ?? NaN, us?.p50 ?? NaN),
      ratio(ts?.p99 ?? NaN, us?.p99 ?? NaN),
      ratio(t?.usage?.rssMaxKiB ?? NaN, u?.usage?.rssMaxKiB ?? NaN),
      ratio(t?.usage?.cpuSecTotal ?? NaN, u?.usage?.cpuSecTotal ?? NaN),
    ]);
  }
  return table(
    [
      'N',
      'tsk:floor p50',
      'tsk:floor p99',
      'upstream:floor p50',
      'upstream:floor p99',
      'tsk:upstream p50',
      'tsk:upstream p99',
      'tsk:upstream peak RSS',
      'tsk:upstream CPU s',
    ],
    rows,
  );
}

function teardownTable(): string {
  const rows: string[][] = [];
  const add = (mode: string, r: StartupRow) => {
    const t = r.teardown;
    if (!t) return;
    const s = summarize(t.stopped);
    const rm = summarize(t.removed);
    rows.push([
      mode,
      String(r.n),
      r.runner,
      sec(s.p50),
      sec(s.p90),
      sec(s.p99),
      sec(s.max),
      t.notRemoved > 0 ? `> ${sec(REMOVAL_CAP_MS)} (${t.notRemoved} left)` : sec(rm.max),
    ]);
  };
  for (const [, rs] of [...results.static].sort((a, b) => a[0] - b[0])) for (const r of rs) add('static', r);
  for (const [, rs] of [...results.cluster].sort((a, b) => a[0] - b[0]))
    for (const r of rs) add('cluster', r);
  for (const r of results.steadyTeardown) add('cluster (steady)', r);
  return table(
    ['mode', 'N', 'kubelet', 'stopped p50 s', 'p90 s', 'p99 s', 'max s', 'all sandboxes removed s'],
    rows,
  );
}

function steadyTable(): string {
  return table(
    [
      'pods',
      'kubelet',
      'RSS max MiB',
      'CPU p50 cores',
      'CPU p95 cores',
      'CPU mean cores',
      'containerd CPU p50 / p95',
      'ELD p99 / max ms',
      'heap used / total MiB',
      'host busy cores',
    ],
    results.steady.map((r) => [
      String(r.pods),
      r.kubelet,
      mib(r.usage.rssMaxKiB),
      cores(r.usage.cpuP50),
      cores(r.usage.cpuP95),
      cores(r.usage.cpuSecTotal / r.usage.seconds),
      `${cores(r.containerd.cpuP50)} / ${cores(r.containerd.cpuP95)}`,
      eldText(r.eld),
      r.eld?.heapUsed !== undefined ? `${r.eld.heapUsed} / ${r.eld.heapTotal ?? '?'}` : '—',
      r.hostBusy.toFixed(2),
    ]),
  );
}

function relistTable(): string {
  return table(
    ['what', 'samples', 'p50 ms', 'p99 ms', 'max ms'],
    results.relist.map((r) => [
      r.what,
      String(r.stats.n),
      msText(r.stats.p50),
      msText(r.stats.p99),
      msText(r.stats.max),
    ]),
  );
}

function targets(): string[] {
  const out: string[] = [];
  const check = (ok: boolean | undefined, text: string) =>
    out.push(`- ${ok === undefined ? '?' : ok ? 'met' : '**missed**'}: ${text}`);
  for (const [n, rs] of [...results.static].sort((a, b) => a[0] - b[0])) {
    const t = rs.find((r) => r.runner === 'tskubelet');
    const u = rs.find((r) => r.runner === 'upstream');
    const f = floorBest(n);
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
  for (const [n, rs] of [...results.cluster].sort((a, b) => a[0] - b[0])) {
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

function machine(): string {
  const git = (args: string[]) => {
    try {
      return execFileSync('git', args, { cwd: REPO, encoding: 'utf8' }).trim();
    } catch {
      return '?';
    }
  };
  const dirty = git(['status', '--porcelain']) === '' ? '' : ' (uncommitted changes)';
  let containerd = '?';
  try {
    containerd = execFileSync('containerd', ['--version'], { encoding: 'utf8' })
      .trim()
      .split(' ')
      .slice(1, 3)
      .join(' ');
  } catch {
    // left as '?'
  }
  return [
    `- machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${release()}`,
    `- tskubelet ${git(['rev-parse', '--short', 'HEAD'])}${dirty}, Node.js ${process.version}; upstream kubelet 1.20.2 (${kubernetesBinary('kubelet')}); containerd ${containerd}`,
    `- settings: N = ${NS_LIST.join(', ')}; steady-state window ${WINDOW_MS / 1000} s; cluster pods ${TOKEN ? 'mount their service-account token (secret volume, the default)' : 'with automountServiceAccountToken: false'}; kubelet process sampled every 250 ms (batches) / 1 s (steady state)`,
  ].join('\n');
}

async function render(final = false): Promise<string> {
  const parts: string[] = [
    `# tskubelet vs upstream kubelet 1.20.2 — ${DATE}${quick ? ' (quick)' : ''}`,
    '',
    `Command: \`node bench/run.ts${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}\`; ${final ? 'total' : 'so far'} ${((Date.now() - started) / 60_000).toFixed(1)} min. How it measures: bench/README.md.`,
    '',
    machine(),
    '',
  ];
  if (results.static.size > 0 || results.floor.size > 0) {
    parts.push(
      '## Scenario 1: static-pod batch startup (manifest written → container running, CRI startedAt)',
      '',
      "floor = the same pods straight over CRI (no kubelet) at the given concurrency; latency from the batch start. \"best of\" takes each column's minimum over the concurrency levels. to sandbox = written/created → the sandbox's CRI createdAt (when containerd began RunPodSandbox: the kubelet's reaction and queueing); the rest is sandbox, container create and start. host busy = machine-wide busy CPU during the batch (kubelet, containerd, runc, the bench, and any other work on the machine).",
      '',
      startupTable(results.static, true, false),
      '',
      ratioTable(results.static),
      '',
    );
  }
  if (results.cluster.size > 0) {
    parts.push(
      '## Scenario 2: cluster batch startup (API create → Running with all containers started, seen by a watch)',
      '',
      "CRI start = create → container startedAt (what the kubelet did before reporting). Ratios to the floor use scenario 1's floor at the same N.",
      '',
      startupTable(results.cluster, false, true),
      '',
      ratioTable(results.cluster),
      '',
    );
  }
  if (results.steady.length > 0) {
    parts.push(
      `## Scenario 3: steady state (cluster mode, ${WINDOW_MS / 1000} s window per row, sampled each second from /proc)`,
      '',
      "ELD = tskubelet's event-loop delay (perf_hooks histogram preloaded with --import, bench/lib/eld-probe.ts); heap = its V8 heap at the end of the window (process.memoryUsage()); host busy = machine-wide busy CPU in the window.",
      '',
      steadyTable(),
      '',
    );
  }
  if (results.relist.length > 0) {
    parts.push('## Scenario 4: relist cost', '', relistTable(), '');
  }
  if (results.static.size > 0 || results.cluster.size > 0 || results.steadyTeardown.length > 0) {
    parts.push(
      '## Scenario 5: teardown (static: manifests removed; cluster: deleted with grace 0)',
      '',
      `stopped = no ready sandbox and no running container (per pod, from the delete; ${OBSERVE_MS} ms poll resolution); removed = the last sandbox gone from containerd (waited up to ${REMOVAL_CAP_MS / 1000} s: the upstream kubelet removes sandboxes in its once-a-minute container GC).`,
      '',
      teardownTable(),
      '',
    );
  }
  if (results.apiload.length > 0) {
    parts.push(
      `## Scenario 6: the kubelet API under load (30 logging pods; ${WINDOW_MS / 1000} s window unloaded, then the same under load)`,
      '',
      `Load, straight at the kubelet's HTTPS port with the API server's kubelet client certificate: 100 \`containerLogs?follow=true\` streams over the 30 pods (each prints a line every 100 ms) for the whole window, and ${EXEC_RATE} exec/s (SPDY/3.1 remotecommand v4, \`echo hiN\`, a new TLS connection each, open loop). Batch = 10 pods created through the API at a quarter of each window (create → Running seen by a watch), then deleted. fds = the kubelet's /proc/<pid>/fd before the window / max during it / 10 s after it. bench CPU = this process (the load generator runs in a worker thread of it). ELD = tskubelet's event-loop delay over the window. See bench/README.md.`,
      '',
      apiloadReport(results.apiload),
      '',
    );
  }
  const t = targets();
  if (t.length > 0) parts.push('## Against the targets of issue 4', '', ...t, '');
  const t9 = apiloadTargets(results.apiload);
  if (t9.length > 0) parts.push('## Against the targets of issue 9 (API load)', '', ...t9, '');
  if (results.failures.length > 0)
    parts.push('## Failures', '', ...results.failures.map((f) => `- ${f}`), '');
  parts.push(
    '## Machine load per run (load average 1/5/15 min at the start)',
    '',
    ...results.loads.map((l) => `- ${l}`),
    '',
  );
  const md = parts.join('\n');
  await mkdir(join(OUT, '..'), { recursive: true });
  await writeFile(OUT, md);
  return md;
}

// ---------------------------------------------------------------- main

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

mkdirSync(RUN_LOG_DIR, { recursive: true });
log(`logs in ${RUN_LOG_DIR}; results to ${OUT}`);
log(
  `upstream: ${kubeletArgv({ kind: 'upstream', nodeName: 'NODE', endpoint: 'unix://SOCK', rootDir: 'ROOT', manifestDir: 'DIR', logFile: '' }).args.join(' ')}`,
);
try {
  // The upstream kubelet is built with the control plane (once, ~8 min on a fresh machine).
  if (kubelets.includes('upstream')) await ensureKubernetesBinaries(nullLogger);
  for (const n of NS_LIST) {
    if (scenarios.has('floor')) {
      for (const c of [...new Set([1, 2, 4, n])].filter((c) => c <= n)) {
        await unit(`floor N=${n} c=${c}`, async () => push(results.floor, n, await floorRun(n, c)));
      }
    }
    if (scenarios.has('static')) {
      for (const kind of kubelets) {
        await unit(`static ${kind} N=${n}`, async () => push(results.static, n, await staticRun(kind, n)));
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
              push(results.cluster, n, await clusterRun(ctx, kind, n)),
            );
          }
        }
      }
      if (scenarios.has('steady')) {
        for (const kind of kubelets) await unit(`steady ${kind}`, () => steadyRun(ctx, kind));
      }
      if (scenarios.has('apiload')) {
        for (const kind of kubelets) await unit(`api load ${kind}`, () => apiloadRun(ctx, kind));
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
