/**
 * The batch-startup scenarios of bench/run.ts: the floor (the same pods straight over CRI), scenario 1
 * (N static pods written at once) and scenario 2 (N pods created at once through the API server),
 * each followed by its teardown (scenario 5). See bench/README.md.
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../../src/util/abort.ts';
import { BUSYBOX_IMAGE } from '../../test/harness/images.ts';
import {
  isTskubelet,
  maxPodsFor,
  removeKubeletDir,
  removePodLogDirs,
  startKubelet,
  type KubeletKind,
} from '../../test/kit/kubelets.ts';
import { observeCri } from './observer.ts';
import { hostCpu, sampleProc } from './proc.ts';
import { floorPod, runFloor } from './floor.ts';
import { apiPod, staticManifest } from './pods.ts';
import { createPods, deletePods, watchPods } from './cluster.ts';
import type { StartupRow } from './bench-results.ts';
import { breakdown, fetchTimelines } from './timeline-breakdown.ts';
import {
  NAMESPACE,
  NODE,
  OBSERVE_MS,
  SETTLE_MS,
  batchTimeout,
  busyCores,
  countStarted,
  eldMark,
  kubeletDirs,
  measureTeardown,
  startClusterKubelet,
  stopClusterKubelet,
  withFreshContainerd,
  type BenchEnv,
  type ClusterCtx,
} from './scenario-env.ts';

/** N pods straight over CRI at the given concurrency; latency from the batch start. */
export async function floorRun(env: BenchEnv, n: number, concurrency: number): Promise<StartupRow> {
  const prefix = `bk-f${n}c${concurrency}-`;
  return withFreshContainerd(env, `floor N=${n} concurrency ${concurrency}`, async (_bed, cri) => {
    const obs = observeCri(cri, { prefix, intervalMs: OBSERVE_MS, onError: env.log });
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

/** Scenario 1: N static pod manifests written at once (write + rename each); then all removed. */
export async function staticRun(env: BenchEnv, kind: KubeletKind, n: number): Promise<StartupRow> {
  const prefix = `bk-s${n}-`;
  const node = NODE[kind];
  const d = kubeletDirs(env, `static-n${n}`, kind);
  return withFreshContainerd(env, `static ${kind} N=${n}`, async (bed, cri) => {
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
      nodeOptions: env.nodeOptions,
      maxPods: maxPodsFor(n),
      qosCgroups: env.qosCgroups,
    });
    const obs = observeCri(cri, { prefix, intervalMs: OBSERVE_MS, onError: env.log });
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
      // After the batch's numbers are taken: outside the timed path.
      const steps = isTskubelet(kind)
        ? await stepBreakdown(d.root, 'default', [...written.keys()])
        : undefined;
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
        ...steps,
      };
    } finally {
      await obs.stop();
      await k.stop();
      await removeKubeletDir(d.dir);
      await removePodLogDirs(prefix);
    }
  });
}

/** Scenario 2: N pods with spec.nodeName created at once through the API; then deleted with grace 0. */
export async function clusterRun(
  env: BenchEnv,
  ctx: ClusterCtx,
  kind: KubeletKind,
  n: number,
): Promise<StartupRow> {
  const prefix = `bk-c${n}-`;
  const d = kubeletDirs(env, `cluster-n${n}`, kind);
  return withFreshContainerd(env, `cluster ${kind} N=${n}`, async (bed, cri) => {
    const k = await startClusterKubelet(env, ctx, kind, bed, d, { maxPods: maxPodsFor(n) });
    const obs = observeCri(cri, { prefix, intervalMs: OBSERVE_MS, onError: env.log });
    const watch = await watchPods(ctx.admin, NAMESPACE, NODE[kind], env.log);
    try {
      const sampler = sampleProc(k.pid, 250);
      await eldMark(k, d.eld);
      const h0 = hostCpu();
      const pods = Array.from({ length: n }, (_, i) =>
        apiPod(`${prefix}${i}`, NAMESPACE, NODE[kind], env.token),
      );
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
      // After the batch's numbers are taken: outside the timed path.
      const steps = isTskubelet(kind)
        ? await stepBreakdown(d.root, NAMESPACE, names, watch.running)
        : undefined;
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
        ...steps,
      };
    } finally {
      await watch.stop();
      await obs.stop();
      await stopClusterKubelet(ctx, kind, k, d, prefix);
    }
  });
}

/** The batch's per-step breakdown from tskubelet's timelines (its local socket), after the batch. */
async function stepBreakdown(
  rootDir: string,
  namespace: string,
  names: readonly string[],
  runningSeenAt?: ReadonlyMap<string, number>,
): Promise<Pick<StartupRow, 'steps' | 'stepsMissing'>> {
  const socket = join(rootDir, 'tskubelet.sock');
  const { timelines, missing } = await fetchTimelines(socket, namespace, names);
  return {
    steps: breakdown(timelines, runningSeenAt),
    ...(missing.length > 0 ? { stepsMissing: missing } : {}),
  };
}
