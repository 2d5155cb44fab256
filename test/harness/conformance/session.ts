/**
 * One kubelet's turn: wait until the bed is ours alone, clear stale Nodes, start the kubelet as
 * the only node, run every pass, stop it and clean up after it. A watchdog voids the attempt when
 * the bed stops being ours (another kubelet or test run starts, another Node registers, the API
 * server goes away): the scheduler would place the suite's pods on the other node, so the
 * results would not be this kubelet's. A void attempt is kept as `<dir>-void`, and the turn starts
 * over once the bed is free again.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { abortReason } from '../../../src/util/abort.ts';
import type { ContainerdBed } from '../index.ts';
import type { ClusterBed } from '../cluster/index.ts';
import { listPodSandboxes, removePodSandbox, stopPodSandbox } from '../cri-mini.ts';
import { summaryMarkdown, type RunResults } from './junit.ts';
import {
  cleanClusterObjects,
  hostIp,
  kubectl,
  otherKubelets,
  removeKubeletDir,
  startKubelet,
  waitForIdleBed,
  waitNodeReady,
  type KubeletKind,
} from './kubelet.ts';
import type { Pass } from './passes.ts';
import { CONFORMANCE_PATHS } from './paths.ts';
import { ensureSharedMount, SHARED_KUBELET_DIR } from './host-mounts.ts';
import { SELECTION_FILE } from './report.ts';
import { runSuite, selectedSpecs, type SuiteEnv } from './suite.ts';
import { startVmKubelet, VM_NODE_IP } from './vm-kubelet.ts';

const WATCH_INTERVAL_MS = 20_000;
/** Consecutive failed API calls (one per interval) before the watchdog gives up on the API server. */
const API_FAILURES = 3;

export interface SessionOptions {
  passes: readonly Pass[];
  nodes: number;
  timeoutMs: number;
  resultsRoot: string;
  waitMs: number;
  /** How long the bed must have been free (no other kubelet or test run) before a run starts. */
  quietMs: number;
  /** How many void attempts to start over from. */
  retries: number;
  kubeletArgs: readonly string[];
  nodeIp: string | undefined;
  /** Run the kubelet in the node VM (vm-kubelet.ts) instead of on the host. */
  nodeVm: boolean;
  logger: Logger;
  print: (line: string) => void;
  /** The harness is stopping (SIGINT/SIGTERM). */
  signal: AbortSignal;
}

export interface Bed {
  containerd: ContainerdBed;
  cluster: ClusterBed;
  env: SuiteEnv;
}

export interface KubeletRun {
  kind: KubeletKind;
  dir: string;
  results: Map<string, RunResults>;
}

export function stamp(): string {
  return new Date().toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');
}

/**
 * Polls until the bed stops being ours alone; aborts its signal with the reason. With `processes`
 * false (the kubelet under test runs in the node VM, sharing only the API server with the host),
 * only another Node counts, not another kubelet or test process on the host.
 */
function watchBed(admin: string, kubeletPid: number, nodeName: string, logger: Logger, processes: boolean) {
  const ac = new AbortController();
  let failures = 0;
  let busy = false;
  const check = async (): Promise<void> => {
    if (busy || ac.signal.aborted) return;
    busy = true;
    try {
      const others = processes ? await otherKubelets([kubeletPid], false) : [];
      if (others.length > 0) {
        ac.abort(
          new KubeletError(
            'Canceled',
            'watch the bed',
            `another kubelet or test run started: ${others.join('; ')}`,
          ),
        );
        return;
      }
      const nodes = (await kubectl(admin, ['get', 'nodes', '-o', 'name'], 15_000))
        .split('\n')
        .filter((n) => n !== '');
      failures = 0;
      const foreign = nodes.filter((n) => n !== `node/${nodeName}`);
      if (foreign.length > 0)
        ac.abort(
          new KubeletError('Canceled', 'watch the bed', `another Node registered: ${foreign.join(', ')}`),
        );
    } catch (err) {
      logger.warn('bed watchdog: API call failed', { err: describeError(err) });
      if (++failures >= API_FAILURES)
        ac.abort(new KubeletError('Canceled', 'watch the bed', 'the API server stopped answering'));
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void check(), WATCH_INTERVAL_MS);
  return { signal: ac.signal, stop: () => clearInterval(timer) };
}

/** Removes the pod sandboxes that appeared in containerd while the kubelet under test ran. */
async function removeNewSandboxes(
  socket: string,
  before: ReadonlySet<string>,
  logger: Logger,
): Promise<void> {
  for (const sb of await listPodSandboxes(socket)) {
    if (before.has(sb.id)) continue;
    try {
      await stopPodSandbox(socket, sb.id);
      await removePodSandbox(socket, sb.id);
    } catch (err) {
      logger.warn('cannot remove a sandbox the run left', {
        pod: `${sb.namespace}/${sb.name}`,
        err: describeError(err),
      });
    }
  }
}

/** One attempt; `void` says why the bed stopped being ours, if it did. */
async function attempt(
  kind: KubeletKind,
  dir: string,
  opts: SessionOptions,
  bed: Bed,
): Promise<{ results: Map<string, RunResults>; void?: string }> {
  const { logger, print } = opts;
  const admin = bed.cluster.adminKubeconfig;
  await cleanClusterObjects(admin, logger);
  const nodeName = `conformance-${kind}`;
  const rootDir = join(CONFORMANCE_PATHS.kubeletRoot, kind);
  await removeKubeletDir(rootDir, logger);
  await mkdir(rootDir, { recursive: true });
  const before = new Set((await listPodSandboxes(bed.containerd.socket)).map((s) => s.id));
  const spec = {
    kind,
    nodeName,
    kubeconfig: await bed.cluster.kubeletKubeconfig(nodeName),
    caFile: bed.cluster.caFile,
    endpoint: bed.containerd.endpoint,
    nodeIp: opts.nodeVm ? VM_NODE_IP : (opts.nodeIp ?? (await hostIp())),
    rootDir,
    logFile: join(dir, 'kubelet.log'),
    extraArgs: opts.kubeletArgs,
  };
  if (!opts.nodeVm) await ensureSharedMount(SHARED_KUBELET_DIR, logger);
  const kubelet = opts.nodeVm ? await startVmKubelet(spec, logger, opts.signal) : startKubelet(spec, logger);
  const watch = watchBed(admin, kubelet.pid, nodeName, logger, !opts.nodeVm);
  const signal = AbortSignal.any([opts.signal, watch.signal]);
  const results = new Map<string, RunResults>();
  try {
    // In the VM, Node compiles tskubelet under emulation (TCG) and reads it over 9p: minutes, not seconds.
    await waitNodeReady(admin, kubelet, opts.nodeVm ? 600_000 : 180_000);
    print(`== ${kind}: node ${nodeName} (${spec.nodeIp}) Ready; results in ${dir}`);
    for (const pass of opts.passes) {
      const selected = await selectedSpecs(bed.env, pass);
      print(
        `== ${kind} · ${pass.name}: ${selected.length} specs, ${opts.nodes} ginkgo nodes, timeout ${opts.timeoutMs / 60_000} min`,
      );
      const passDir = join(dir, pass.name);
      await mkdir(passDir, { recursive: true });
      await writeFile(join(passDir, SELECTION_FILE), JSON.stringify({ ...pass, selected }, null, 1));
      const r = await runSuite(bed.env, pass, {
        dir: passDir,
        nodes: opts.nodes,
        timeoutMs: opts.timeoutMs,
        selected,
        logger,
        print,
        signal,
      });
      results.set(pass.name, r.results);
      const md = summaryMarkdown(`${kind} · ${pass.name} (${r.seconds} s, ginkgo ${r.ended})`, r.results);
      await writeFile(join(passDir, 'summary.md'), md);
      if (watch.signal.aborted) break; // void: the summary would be about someone else's bed
      print(`\n${md}`);
      if (signal.aborted) break;
      if (kubelet.exit() !== undefined) {
        print(`!! ${kind} exited during the run (${kubelet.exit()}); see ${spec.logFile}`);
        break;
      }
    }
  } finally {
    watch.stop();
    await kubelet.stop();
    await kubectl(admin, ['delete', 'node', nodeName, '--ignore-not-found']).catch((err: unknown) =>
      logger.warn('cannot delete the node object', { err: describeError(err) }),
    );
    await removeNewSandboxes(bed.containerd.socket, before, logger);
    await removeKubeletDir(rootDir, logger);
  }
  if (opts.signal.aborted) throw abortReason(opts.signal);
  return watch.signal.aborted ? { results, void: describeError(abortReason(watch.signal)) } : { results };
}

/** The kubelet's turn, started over (up to `retries` times) when an attempt is void. */
export async function runKubelet(kind: KubeletKind, opts: SessionOptions, bed: Bed): Promise<KubeletRun> {
  for (let n = 0; ; n++) {
    await waitForIdleBed(opts.logger, { timeoutMs: opts.waitMs, quietMs: opts.quietMs }, opts.signal);
    const dir = join(opts.resultsRoot, `${stamp()}-${kind}${opts.nodeVm ? '-node-vm' : ''}`);
    await mkdir(dir, { recursive: true });
    const a = await attempt(kind, dir, opts, bed);
    if (a.void === undefined) return { kind, dir, results: a.results };
    await writeFile(join(dir, 'VOID'), `${a.void}\n`);
    await rename(dir, `${dir}-void`);
    if (n >= opts.retries) {
      throw new KubeletError('Canceled', `${kind} run`, `void after ${n + 1} attempts: ${a.void}`);
    }
    opts.print(
      `!! ${kind}: the run is void (${a.void}); kept as ${dir}-void. Starting over when the bed is free.`,
    );
  }
}
