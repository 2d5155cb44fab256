/**
 * Scenario "apiload" (issue 9): the kubelet API under load on a node with 30 pods, next to the same
 * node unloaded. Per kubelet, on one running kubelet (cluster mode, x509 client CA + Webhook authn/authz):
 *
 *  1. 30 "logger" pods (a line every 100 ms each) are created and run; 10 s settle.
 *  2. Unloaded window (`windowMs`): at a quarter of it a 10-pod batch is created through the API and
 *     timed (create → Running seen by a watch, as scenario 2), then deleted (grace 0).
 *  3. 10 s later, the loaded window, identical except that the load generator
 *     (bench/lib/apiload-client.ts, a worker thread) runs for all of it: 100 `logs -f` followers
 *     spread over the 30 pods and 50 exec/s, straight at the kubelet's HTTPS port with the API
 *     server's kubelet client certificate. When the batch outlasts the window, the load runs on
 *     until the batch is done.
 *  4. 10 s after each window: the kubelet's open fd count again (back to the count before the window?).
 *
 * Measured per window: the batch's startup percentiles, the kubelet's event-loop delay (tskubelet),
 * CPU and RSS (every second from /proc), its fd count (/proc/<pid>/fd: before, max, 10 s after),
 * containerd's CPU, the host's busy CPU and the bench process's own CPU (the load generator runs in it).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { ApiClient } from '../../src/api/client-types.ts';
import type { CriClient } from '../../src/runtime/cri/index.ts';
import { KubeletError } from '../../src/util/errors.ts';
import { sleep } from '../../src/util/abort.ts';
import type { FromWorker, LoadResult, LoadSpec, ToWorker } from './apiload-client.ts';
import { BENCH_PATHS } from './containerd.ts';
import { createPods, deletePods, watchPods, type PodWatch } from './cluster.ts';
import type { KubeletKind, RunningKubelet } from '../../test/kit/kubelets.ts';
import { apiPod, LOGGER_COMMAND } from './pods.ts';
import { CLK_TCK, fdCount, hostCpu, sampleProc, type ProcSampler, type UsageSummary } from './proc.ts';
import { cores, mib, msText, ratio, sec, summarize, table } from './stats.ts';

export const APILOAD = {
  pods: 30,
  batch: 10,
  followers: 100,
  /** The default; `--exec-rate` changes it. */
  execPerSec: 50,
  execTimeoutMs: 10_000,
  /** Execs in flight beyond this are errors, not a queue (50/s × the 10 s timeout). */
  maxInFlight: 500,
  /** A follower that received nothing for this long at the stop is stalled (pods print every 100 ms). */
  stallMs: 3_000,
  settleMs: 10_000,
  afterMs: 10_000,
  /** "fds back to baseline": at most this many more 10 s after the load than before it. */
  fdTolerance: 2,
} as const;
export const APILOAD_PREFIX = 'bk-al-';
const CONTAINER = 'main';

export interface EldReading {
  p50: number;
  p99: number;
  max: number;
}

export interface ApiLoadPhase {
  /** Per batch pod: create → Running with every container running (watch). */
  latencies: number[];
  batchFailed: number;
  /** First create → last Running. */
  batchMs: number;
  eld?: EldReading;
  usage: UsageSummary;
  containerd: UsageSummary;
  /** containerd, its shims and what they reaped (runc, the exec'd processes), in cores. */
  runtimeCpu: number;
  hostBusy: number;
  /** The bench process's CPU in the window (cores): the load generator, the watch, the samplers. */
  benchCpu: number;
  fd: { before: number; max: number; after: number };
  /** Batch pods whose sandbox was still ready when the fds were counted after the window. */
  batchLeft: number;
  load?: LoadResult;
  /** The bench process's own open fds before the load and after the generator finished. */
  generatorFds?: { before: number; after: number };
}

export interface ApiLoadRow {
  kubelet: KubeletKind;
  unloaded: ApiLoadPhase;
  loaded: ApiLoadPhase;
}

export interface ApiLoadOptions {
  kind: KubeletKind;
  kubelet: RunningKubelet;
  /** The kubelet API's HTTPS port. */
  port: number;
  containerdPid: number;
  cri: CriClient;
  admin: ApiClient;
  namespace: string;
  node: string;
  windowMs: number;
  execPerSec: number;
  /** Pods mount their service-account token (as scenario 2). */
  token: boolean;
  /** The API server's kubelet client certificate and key (PEM files). */
  clientCert: { cert: string; key: string };
  /** Starts a new event-loop-delay period and returns the one that ended (tskubelet only). */
  eldMark: () => Promise<EldReading | undefined>;
  log: (msg: string) => void;
}

/**
 * CPU seconds (utime + stime + reaped children's) of the benchmark containerd and each of its
 * shims, by pid. The shims reap runc and the processes exec'd in containers, so this is the
 * runtime's whole share; a shim that exits inside a window (a deleted batch pod's) takes its count
 * with it, a small underestimate.
 */
function runtimeCpuSec(containerdPid: number): Map<number, number> {
  const out = new Map<number, number>();
  const cpuOf = (pid: number): number | undefined => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLK_TCK;
    } catch {
      return undefined; // gone meanwhile
    }
  };
  const c = cpuOf(containerdPid);
  if (c !== undefined) out.set(containerdPid, c);
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!(argv[0] ?? '').includes('containerd-shim') || !argv.includes(BENCH_PATHS.socket)) continue;
    const v = cpuOf(Number(e));
    if (v !== undefined) out.set(Number(e), v);
  }
  return out;
}

function cpuDelta(a: ReadonlyMap<number, number>, b: ReadonlyMap<number, number>): number {
  let sum = 0;
  for (const [pid, v] of b) sum += v - (a.get(pid) ?? 0);
  return sum;
}

function sampleFds(pid: number, intervalMs: number) {
  const samples: { t: number; n: number }[] = [];
  const take = () => samples.push({ t: Date.now(), n: fdCount(pid) });
  take();
  const timer = setInterval(take, intervalMs);
  return {
    max: (since: number, until: number) =>
      Math.max(...samples.filter((s) => s.t >= since && s.t <= until && !Number.isNaN(s.n)).map((s) => s.n)),
    stop: () => clearInterval(timer),
  };
}

interface RunningLoad {
  /** Resolves when every follower has answered (or 10 s passed). */
  followersOpen: Promise<{ ok: number; failed: number }>;
  /** Stops the load; resolves with its result once the worker has closed every socket and exited. */
  stop(): Promise<LoadResult>;
}

function startLoad(spec: LoadSpec): RunningLoad {
  const worker = new Worker(new URL('./apiload-client.ts', import.meta.url), {
    workerData: { apiload: spec },
  });
  const opened = Promise.withResolvers<{ ok: number; failed: number }>();
  const result = Promise.withResolvers<LoadResult>();
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.on('message', (m: FromWorker) => {
    if (m.type === 'followers-open') opened.resolve({ ok: m.ok, failed: m.failed });
    else result.resolve(m.result);
  });
  worker.once('error', (err) => {
    opened.reject(err);
    result.reject(err);
  });
  void exited.then(() => {
    const gone = new KubeletError('Unavailable', 'api load', 'the load generator exited without a result');
    opened.reject(gone);
    result.reject(gone);
  });
  // Both settle at most once; rejections after a resolve are ignored, not unhandled.
  opened.promise.catch(() => undefined);
  result.promise.catch(() => undefined);
  return {
    followersOpen: opened.promise,
    async stop() {
      worker.postMessage({ type: 'stop' } satisfies ToWorker);
      // The worker bounds its own shutdown (execs time out, sockets get 5 s); this is a backstop.
      const timer = setTimeout(() => void worker.terminate(), spec.execTimeoutMs + 15_000);
      try {
        const r = await result.promise;
        await exited;
        return r;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

async function readyBatchSandboxes(cri: CriClient, prefix: string): Promise<number> {
  const sandboxes = await cri.runtime.listPodSandbox({ state: { state: 'SANDBOX_READY' } });
  return sandboxes.filter((s) => s.metadata.name.startsWith(prefix)).length;
}

async function sleepUntil(t: number): Promise<void> {
  const ms = t - Date.now();
  if (ms > 0) await sleep(ms);
}

async function timeBatch(o: ApiLoadOptions, watch: PodWatch, prefix: string) {
  const pods = Array.from({ length: APILOAD.batch }, (_, i) =>
    apiPod(`${prefix}${i}`, o.namespace, o.node, o.token),
  );
  const created = await createPods(o.admin, o.namespace, pods);
  const names = [...created.keys()];
  const t0 = Math.min(...created.values());
  await watch.until(() => names.every((n) => watch.running.has(n)), 60_000 + 2_000 * APILOAD.batch);
  const latencies: number[] = [];
  let last = NaN;
  for (const [name, c] of created) {
    const r = watch.running.get(name);
    if (r === undefined) continue;
    latencies.push(r - c);
    last = Number.isNaN(last) ? r : Math.max(last, r);
  }
  await deletePods(o.admin, o.namespace, names);
  return { latencies, batchFailed: APILOAD.batch - latencies.length, batchMs: last - t0 };
}

async function window(
  o: ApiLoadOptions,
  watch: PodWatch,
  samplers: { kubelet: ProcSampler; containerd: ProcSampler; fds: ReturnType<typeof sampleFds> },
  withLoad: boolean,
): Promise<ApiLoadPhase> {
  const pid = o.kubelet.pid;
  const prefix = `${APILOAD_PREFIX}b${withLoad ? 'l' : 'u'}-`;
  const fdBefore = fdCount(pid);
  const generatorBefore = fdCount('self');
  await o.eldMark();
  const h0 = hostCpu();
  const rt0 = runtimeCpuSec(o.containerdPid);
  const cpu0 = process.cpuUsage();
  const t0 = Date.now();
  const load = withLoad
    ? startLoad({
        host: '127.0.0.1',
        port: o.port,
        certFile: o.clientCert.cert,
        keyFile: o.clientCert.key,
        namespace: o.namespace,
        pods: Array.from({ length: APILOAD.pods }, (_, i) => `${APILOAD_PREFIX}${i}`),
        container: CONTAINER,
        followers: APILOAD.followers,
        execPerSec: o.execPerSec,
        execTimeoutMs: APILOAD.execTimeoutMs,
        maxInFlight: APILOAD.maxInFlight,
        stallMs: APILOAD.stallMs,
        maxMs: o.windowMs + 120_000,
      })
    : undefined;
  let result: LoadResult | undefined;
  try {
    if (load) {
      const f = await load.followersOpen;
      o.log(`${o.kind}: ${f.ok} of ${APILOAD.followers} followers streaming, ${f.failed} failed`);
    }
    await sleepUntil(t0 + o.windowMs / 4);
    const batch = await timeBatch(o, watch, prefix);
    await sleepUntil(t0 + o.windowMs);
    const t1 = Date.now();
    result = await load?.stop();
    const eld = await o.eldMark();
    const h1 = hostCpu();
    const rt1 = runtimeCpuSec(o.containerdPid);
    const cpu = process.cpuUsage(cpu0);
    const seconds = Math.max(0.001, (t1 - t0) / 1000);
    const generatorAfter = fdCount('self');
    await sleep(APILOAD.afterMs);
    return {
      ...batch,
      ...(eld ? { eld } : {}),
      usage: samplers.kubelet.summary(t0, t1),
      containerd: samplers.containerd.summary(t0, t1),
      runtimeCpu: cpuDelta(rt0, rt1) / seconds,
      hostBusy: (h1.busySec - h0.busySec) / Math.max(0.001, (h1.t - h0.t) / 1000),
      benchCpu: (cpu.user + cpu.system) / 1e6 / seconds,
      fd: { before: fdBefore, max: samplers.fds.max(t0, t1), after: fdCount(pid) },
      batchLeft: await readyBatchSandboxes(o.cri, prefix),
      ...(result ? { load: result, generatorFds: { before: generatorBefore, after: generatorAfter } } : {}),
    };
  } finally {
    if (load && !result) await load.stop().catch(() => undefined);
  }
}

/** Runs both windows against a kubelet that is up and Ready; creates its pods, leaves them for the caller. */
export async function measureApiLoad(o: ApiLoadOptions): Promise<ApiLoadRow> {
  const watch = await watchPods(o.admin, o.namespace, o.node, o.log);
  const samplers = {
    kubelet: sampleProc(o.kubelet.pid, 1_000),
    containerd: sampleProc(o.containerdPid, 1_000),
    fds: sampleFds(o.kubelet.pid, 1_000),
  };
  try {
    const pods = Array.from({ length: APILOAD.pods }, (_, i) =>
      apiPod(`${APILOAD_PREFIX}${i}`, o.namespace, o.node, o.token, LOGGER_COMMAND),
    );
    const names = pods.map((p) => p.metadata.name);
    await createPods(o.admin, o.namespace, pods);
    const ok = await watch.until(
      () => names.every((n) => watch.running.has(n)),
      60_000 + 2_000 * pods.length,
    );
    if (!ok) {
      const n = names.filter((p) => watch.running.has(p)).length;
      throw new KubeletError(
        'DeadlineExceeded',
        'api load',
        `only ${n} of ${pods.length} logger pods running`,
      );
    }
    await sleep(APILOAD.settleMs);
    o.log(`${o.kind}: unloaded window, ${o.windowMs / 1000} s`);
    const unloaded = await window(o, watch, samplers, false);
    o.log(`${o.kind}: loaded window, ${o.windowMs / 1000} s`);
    const loaded = await window(o, watch, samplers, true);
    return { kubelet: o.kind, unloaded, loaded };
  } finally {
    samplers.kubelet.stop();
    samplers.containerd.stop();
    samplers.fds.stop();
    await watch.stop();
  }
}

// ---------------------------------------------------------------- report

function errorsText(errors: Record<string, number>): string {
  const entries = Object.entries(errors).sort((a, b) => b[1] - a[1]);
  const total = entries.reduce((a, [, n]) => a + n, 0);
  if (total === 0) return '0';
  return `**${total}** (${entries.map(([k, n]) => `${k}: ${n}`).join(', ')})`;
}

function errorTotal(errors: Record<string, number>): number {
  return Object.values(errors).reduce((a, n) => a + n, 0);
}

export function apiloadReport(rows: readonly ApiLoadRow[]): string {
  const phaseRows: string[][] = [];
  for (const r of rows) {
    const u = summarize(r.unloaded.latencies);
    for (const [label, p] of [
      ['unloaded', r.unloaded],
      ['**API load**', r.loaded],
    ] as const) {
      const s = summarize(p.latencies);
      phaseRows.push([
        r.kubelet,
        label + (p.batchFailed > 0 ? ` (${p.batchFailed} not running)` : ''),
        sec(s.p50),
        sec(s.p99),
        sec(s.max),
        sec(p.batchMs),
        p === r.loaded ? ratio(s.p99, u.p99) : '—',
        p.eld ? `${msText(p.eld.p99)} / ${msText(p.eld.max)}` : '—',
        `${cores(p.usage.cpuSecTotal / p.usage.seconds)} / ${cores(p.usage.cpuP95)}`,
        mib(p.usage.rssMaxKiB),
        `${p.fd.before} / ${p.fd.max} / ${p.fd.after}${p.batchLeft > 0 ? ` (${p.batchLeft} batch pods left)` : ''}`,
        `${cores(p.containerd.cpuSecTotal / p.containerd.seconds)} / ${p.runtimeCpu.toFixed(2)}`,
        p.benchCpu.toFixed(2),
        p.hostBusy.toFixed(2),
      ]);
    }
  }
  const loadRows: string[][] = [];
  for (const r of rows) {
    const l = r.loaded.load;
    if (!l) continue;
    const fb = summarize(l.followers.firstByteMs);
    const ex = summarize(l.exec.latencyMs);
    const up = summarize(l.exec.upgradeMs);
    const s = l.durationMs / 1000;
    loadRows.push([
      r.kubelet,
      s.toFixed(0),
      `${l.followers.ok} / ${APILOAD.followers}`,
      errorsText(l.followers.errors),
      (l.followers.lines / s).toFixed(0),
      `${msText(fb.p50)} / ${msText(fb.p99)}`,
      `${l.exec.ok} / ${l.exec.started}`,
      errorsText(l.exec.errors),
      (l.exec.ok / s).toFixed(1),
      `${msText(ex.p50)} / ${msText(ex.p99)} / ${msText(ex.max)}`,
      `${msText(up.p50)} / ${msText(up.p99)}`,
      String(l.exec.maxInFlight),
      r.loaded.generatorFds
        ? `${r.loaded.generatorFds.before} / ${r.loaded.generatorFds.after}, ${l.socketsLeft} sockets left`
        : '—',
    ]);
  }
  return [
    table(
      [
        'kubelet',
        'window',
        'batch p50 s',
        'p99 s',
        'max s',
        'batch s',
        'p99 loaded:unloaded',
        'ELD p99 / max ms',
        'kubelet CPU mean / p95 cores',
        'RSS max MiB',
        'kubelet fds before / max / 10 s after',
        'containerd / + shims, runc cores',
        'bench CPU cores',
        'host busy cores',
      ],
      phaseRows,
    ),
    '',
    table(
      [
        'kubelet',
        'load s',
        'followers 200',
        'follower errors',
        'log lines/s received',
        'first bytes p50 / p99 ms',
        'execs ok / started',
        'exec errors',
        'exec/s ok',
        'exec p50 / p99 / max ms',
        '101 p50 / p99 ms',
        'max execs in flight',
        'generator fds before / after',
      ],
      loadRows,
    ),
  ].join('\n');
}

export function apiloadTargets(rows: readonly ApiLoadRow[]): string[] {
  const out: string[] = [];
  const check = (ok: boolean, text: string) => out.push(`- ${ok ? 'met' : '**missed**'}: ${text}`);
  for (const r of rows) {
    const l = r.loaded.load;
    if (l) {
      const errs = errorTotal(l.followers.errors) + errorTotal(l.exec.errors);
      check(errs === 0, `${r.kubelet}: no errors under API load (${errs})`);
    }
    const fd = r.loaded.fd;
    check(
      fd.after <= fd.before + APILOAD.fdTolerance,
      `${r.kubelet}: fd count back to baseline 10 s after the load (${fd.before} → ${fd.after}, max ${fd.max} during; tolerance ${APILOAD.fdTolerance})`,
    );
    const u = summarize(r.unloaded.latencies);
    const s = summarize(r.loaded.latencies);
    check(
      r.loaded.batchFailed === 0 && s.p99 <= 1.2 * u.p99,
      `${r.kubelet}: 10-pod batch p99 under load ≤ 1.2× unloaded (${sec(s.p99)} vs ${sec(u.p99)} s, ${ratio(s.p99, u.p99)})`,
    );
  }
  return out;
}
