/**
 * What every scenario of bench/run.ts shares: the run's settings and results (`BenchEnv`), a fresh
 * containerd per measurement, the kubelet's directories, timeouts that grow with the pod count,
 * event-loop-delay marks, the teardown measurement, and a cluster-mode kubelet's start and stop.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { createCriClient, type CriClient } from '../../src/runtime/cri/index.ts';
import type { ApiClient } from '../../src/api/client-types.ts';
import { nullLogger } from '../../src/util/logger.ts';
import { sleep } from '../../src/util/abort.ts';
import type { ClusterBed } from '../../test/harness/cluster/index.ts';
import {
  BENCH_PATHS,
  removeAllBenchPods,
  restartBenchContainerd,
  type BenchContainerd,
} from './containerd.ts';
import {
  isTskubelet,
  removeKubeletDir,
  removePodLogDirs,
  startKubelet,
  type KubeletKind,
  type RunningKubelet,
} from '../../test/kit/kubelets.ts';
import type { CriObserver } from './observer.ts';
import { hostCpu } from './proc.ts';
import { deleteNode, deletePodsOnNode, waitNodeReady } from './cluster.ts';
import type { BenchResults, Eld, Teardown } from './bench-results.ts';

/** The run's settings and its results, handed to every scenario. */
export interface BenchEnv {
  log: (msg: string) => void;
  results: BenchResults;
  /** Each kubelet's log and tskubelet's event-loop-delay samples go here. */
  runLogDir: string;
  /** tskubelet only: extra NODE_OPTIONS (e.g. --cpu-prof). */
  nodeOptions?: string;
  /** Cluster pods mount their service-account token. */
  token: boolean;
  /** Both kubelets with pod cgroups per QoS class (their default; `--no-qos-cgroups`: without). */
  qosCgroups: boolean;
  /** Steady-state and API-load window. */
  windowMs: number;
  /** API load: execs per second. */
  execRate: number;
  /** Steady state: the pod counts held in turn, ascending. */
  steadyPods: readonly number[];
  /** Writes what is known so far (after each measurement). */
  checkpoint: () => Promise<void>;
}

export const NAMESPACE = 'default';
export const NODE: Record<KubeletKind, string> = {
  tskubelet: 'bench-tsk',
  'tskubelet-unpaced': 'bench-tsk-unpaced',
  'tskubelet-base': 'bench-tsk-base',
  upstream: 'bench-upstream',
};
export const SETTLE_MS = 3_000;
export const OBSERVE_MS = 200;

/** How long a batch of `n` pods may take to be running. */
export function batchTimeout(n: number): number {
  return 60_000 + 2_000 * n;
}

/**
 * How long teardown waits for every sandbox to be removed, from the delete: 75 s up to 125 pods
 * (upstream removes dead sandboxes only in its once-a-minute container GC), 0.6 s per pod beyond.
 */
export function removalCapMs(n: number): number {
  return Math.max(75_000, 600 * n);
}

/** How long teardown waits for every pod to stop: 2 min, or longer for large batches. */
export function stopCapMs(n: number): number {
  return Math.max(120_000, batchTimeout(n));
}

/** Runs `fn` on a freshly restarted containerd; removes every pod afterwards. */
export async function withFreshContainerd<T>(
  env: BenchEnv,
  label: string,
  fn: (bed: BenchContainerd, cri: CriClient) => Promise<T>,
): Promise<T> {
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  env.log(`${label} (load ${load})`);
  const bed = await restartBenchContainerd(nullLogger);
  await sleep(1_000);
  const cri = createCriClient({ endpoint: bed.endpoint });
  // A run killed midway leaves its pods in the benchmark's containerd (a restart keeps them):
  // they would weigh on this measurement, so they go first.
  const leftover = (await cri.runtime.listPodSandbox()).length;
  if (leftover > 0) {
    env.log(`${label}: removing ${leftover} pod sandboxes left by an earlier run`);
    await removeAllBenchPods(bed);
  }
  const h0 = hostCpu();
  try {
    return await fn(bed, cri);
  } finally {
    const busy = busyCores(h0);
    env.results.loads.push(
      `${label}: load ${load}; host CPU busy during the run ${busy.toFixed(2)} of ${cpus().length} cores (everything, this run included)`,
    );
    cri.close();
    await removeAllBenchPods(bed);
  }
}

/** Machine-wide busy cores since `h0`. */
export function busyCores(h0: ReturnType<typeof hostCpu>): number {
  const h1 = hostCpu();
  return (h1.busySec - h0.busySec) / Math.max(0.001, (h1.t - h0.t) / 1000);
}

export function countStarted(obs: CriObserver, prefix: string): number {
  return obs.matching(prefix).filter((p) => p.startedAt !== undefined).length;
}

/** Ends tskubelet's current event-loop-delay period (SIGUSR2 to the probe) and returns it. */
export async function eldMark(k: RunningKubelet, file: string | undefined): Promise<Eld | undefined> {
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
export async function measureTeardown(
  obs: CriObserver,
  names: readonly string[],
  tDel: number,
): Promise<Teardown> {
  const capMs = removalCapMs(names.length);
  const obsOf = (n: string) => obs.pods.get(n);
  await obs.until(() => names.every((n) => obsOf(n)?.stoppedAt !== undefined), stopCapMs(names.length));
  await obs.until(() => names.every((n) => obsOf(n)?.removedAt !== undefined), capMs - (Date.now() - tDel));
  const stopped: number[] = [];
  const removed: number[] = [];
  let notRemoved = 0;
  for (const n of names) {
    const o = obsOf(n);
    if (o?.stoppedAt !== undefined) stopped.push(o.stoppedAt - tDel);
    if (o?.removedAt !== undefined) removed.push(o.removedAt - tDel);
    else notRemoved++;
  }
  return { stopped, removed, notRemoved, capMs };
}

export interface KubeletDirs {
  dir: string;
  root: string;
  manifests: string;
  log: string;
  eld: string | undefined;
}

export function kubeletDirs(env: BenchEnv, unit: string, kind: KubeletKind): KubeletDirs {
  const dir = join(BENCH_PATHS.kubeletRoot, `${unit}-${kind}`);
  return {
    dir,
    root: join(dir, 'root'),
    manifests: join(dir, 'manifests'),
    log: join(env.runLogDir, `${unit}-${kind}.log`),
    eld: isTskubelet(kind) ? join(env.runLogDir, `${unit}-${kind}.eld.jsonl`) : undefined,
  };
}

export interface ClusterCtx {
  cluster: ClusterBed;
  admin: ApiClient;
}

/** Starts a kubelet that registers its own fresh node and waits until the node is Ready. */
export async function startClusterKubelet(
  env: BenchEnv,
  ctx: ClusterCtx,
  kind: KubeletKind,
  bed: BenchContainerd,
  d: KubeletDirs,
  opts: { maxPods: number; secureApi?: boolean; readOnlyPort?: number },
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
    nodeOptions: env.nodeOptions,
    maxPods: opts.maxPods,
    qosCgroups: env.qosCgroups,
    ...(opts.secureApi ? { clientCAFile: ctx.cluster.caFile } : {}),
    ...(opts.readOnlyPort ? { readOnlyPort: opts.readOnlyPort } : {}),
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

export async function stopClusterKubelet(
  ctx: ClusterCtx,
  kind: KubeletKind,
  k: RunningKubelet,
  d: KubeletDirs,
  prefix: string,
): Promise<void> {
  await k.stop();
  await deletePodsOnNode(ctx.admin, NAMESPACE, NODE[kind]);
  await deleteNode(ctx.admin, NODE[kind]);
  await removeKubeletDir(d.dir);
  await removePodLogDirs(prefix);
}
