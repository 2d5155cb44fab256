/**
 * Scenarios 3 and 4 of bench/run.ts (cluster mode): the kubelet holds 0, 35, 110 … pods in turn, each
 * for a window sampled from /proc, and the relist cost is measured at every pod count; then the pods
 * are deleted and timed (scenario 5). See bench/README.md.
 */
import { sleep } from '../../src/util/abort.ts';
import type { CriClient } from '../../src/runtime/cri/index.ts';
import { BENCH_UPSTREAM_PORT, maxPodsFor, type KubeletKind } from '../../test/kit/kubelets.ts';
import { observeCri } from './observer.ts';
import { fdCount, hostCpu, sampleProc } from './proc.ts';
import { apiPod } from './pods.ts';
import {
  createPods,
  deletePods,
  histogramDelta,
  histogramQuantile,
  scrapeHistogram,
  watchPods,
  type Histogram,
} from './cluster.ts';
import { criRelistTimes, tskubeletRelistTimes } from './relist.ts';
import { summarize } from './stats.ts';
import type { RelistRow } from './bench-results.ts';
import {
  NAMESPACE,
  NODE,
  OBSERVE_MS,
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

export const RELIST_METRIC = 'kubelet_pleg_relist_duration_seconds';
/** Relists timed from the bench at each pod count (tskubelet), 100 ms apart. */
const RELIST_SAMPLES = 50;
const RELIST_GAP_MS = 100;

/** Upstream's own relist histogram over one window, as a relist row. */
function upstreamRelistRow(h: Histogram | undefined, pods: number, windowMs: number): RelistRow {
  return {
    what: `upstream kubelet_pleg_relist_duration_seconds (${pods} pods, its own ${windowMs / 1000} s window; bucket-interpolated)`,
    kubelet: 'upstream',
    pods,
    source: 'metric',
    stats: h
      ? {
          n: h.count,
          p50: histogramQuantile(h, 0.5) * 1000,
          p99: histogramQuantile(h, 0.99) * 1000,
          max: NaN,
        }
      : { n: 0, p50: NaN, p99: NaN, max: NaN },
  };
}

/** tskubelet exposes no relist metric: the CRI calls of a relist and its PLEG code, timed from the bench. */
async function tskubeletRelistRows(cri: CriClient, kind: KubeletKind, pods: number): Promise<RelistRow[]> {
  const cs = summarize(await criRelistTimes(cri, RELIST_SAMPLES, RELIST_GAP_MS));
  const ps = summarize(await tskubeletRelistTimes(cri, RELIST_SAMPLES, RELIST_GAP_MS));
  return [
    {
      what: `CRI ListPodSandbox + ListContainers from the bench (${pods} pods; proxy, ${kind} running)`,
      kubelet: kind,
      pods,
      source: 'cri',
      stats: cs,
    },
    {
      what: `tskubelet PLEG relist code, in the bench process (${pods} pods, ${kind} running)`,
      kubelet: kind,
      pods,
      source: 'pleg',
      stats: ps,
    },
  ];
}

/** Scenarios 3 + 4 (+ 5 with the last pod count) for one kubelet. */
export async function steadyRun(env: BenchEnv, ctx: ClusterCtx, kind: KubeletKind): Promise<void> {
  const prefix = 'bk-ss-';
  const d = kubeletDirs(env, 'steady', kind);
  const { results, windowMs } = env;
  const maxPods = maxPodsFor(Math.max(0, ...env.steadyPods));
  await withFreshContainerd(env, `steady state ${kind}`, async (bed, cri) => {
    const k = await startClusterKubelet(env, ctx, kind, bed, d, { maxPods });
    const watch = await watchPods(ctx.admin, NAMESPACE, NODE[kind], env.log);
    const kSampler = sampleProc(k.pid, 1_000);
    const cSampler = sampleProc(bed.pid, 1_000);
    let count = 0;
    try {
      for (const target of env.steadyPods) {
        if (target > count) {
          const pods = Array.from({ length: target - count }, (_, i) =>
            apiPod(`${prefix}${count + i}`, NAMESPACE, NODE[kind], env.token),
          );
          const names = pods.map((p) => p.metadata.name);
          const tCreate = Date.now();
          await createPods(ctx.admin, NAMESPACE, pods);
          const ok = await watch.until(
            () => names.every((p) => watch.running.has(p)),
            batchTimeout(names.length),
          );
          if (!ok) results.failures.push(`steady ${kind}: not all of ${target} pods running`);
          env.log(
            `steady ${kind}: ${count} → ${target} pods in ${((Date.now() - tCreate) / 1000).toFixed(1)} s`,
          );
          count = target;
          await sleep(10_000);
        }
        env.log(`steady ${kind}: ${count} pods, ${windowMs / 1000} s window`);
        if (count === 0) await sleep(10_000); // the 0-pod window settles like the others
        const relist0 =
          kind === 'upstream' ? await scrapeHistogram(BENCH_UPSTREAM_PORT, RELIST_METRIC) : undefined;
        await eldMark(k, d.eld);
        const h0 = hostCpu();
        const t0 = Date.now();
        await sleep(windowMs);
        const t1 = Date.now();
        const hostBusy = busyCores(h0);
        const eld = await eldMark(k, d.eld);
        const fds = { kubelet: fdCount(k.pid), containerd: fdCount(bed.pid) };
        results.steady.push({
          kubelet: kind,
          pods: count,
          usage: kSampler.summary(t0, t1),
          containerd: cSampler.summary(t0, t1),
          eld,
          hostBusy,
          fds,
        });
        if (kind === 'upstream') {
          const relist1 = await scrapeHistogram(BENCH_UPSTREAM_PORT, RELIST_METRIC);
          const h = relist0 && relist1 ? histogramDelta(relist0, relist1) : undefined;
          results.relist.push(upstreamRelistRow(h, count, windowMs));
        } else {
          // After the window, so the bench's relists never weigh on the kubelet's window.
          env.log(`relist: ${count} pods`);
          results.relist.push(...(await tskubeletRelistRows(cri, kind, count)));
        }
        await env.checkpoint();
      }
      // Scenario 5 with the last pod count.
      const obs = observeCri(cri, { prefix, intervalMs: OBSERVE_MS, onError: env.log });
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
