/**
 * The evented PLEG against the relist alone (issue 15 part 4), in one run: tskubelet standalone
 * (static pods) on a freshly restarted benchmark containerd, once with `--evented-pleg false` (the
 * 1 s relist) and once with `--evented-pleg true` (containerd events, 30 s relist while they flow),
 * alternating with --repeat.
 *
 *   flock /tmp/tskubelet-bed.lock node bench/pleg-events.ts [--quick] [--restarts 30] [--pods 110]
 *       [--window 60] [--repeat 1] [--out FILE.md]
 *
 * Per run:
 * - `--restarts` pods written at once, each container exiting (code 1) once, a few seconds after
 *   its first start, staggered by 0.37 s per pod so exits fall anywhere in the relist's second
 *   (restartPolicy Always: the first restart is immediate, no back-off). Measured per pod:
 *   create → Running (manifest written → the container's CRI startedAt; and → the kubelet's `/pods`
 *   on its read-only port shows it running, polled every 100 ms) and exit → restarted (the first
 *   container's CRI finishedAt → the second's startedAt; and → `/pods` shows restartCount 1 running).
 * - then idle pods up to `--pods`, 10 s to settle, and the kubelet's CPU (utime + stime, /proc)
 *   and containerd's over `--window` seconds with no observer polling.
 * --quick: 10 restarts, 30 pods, 30 s window. Results are printed and written to --out if given.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createCriClient, type CriClient } from '../src/runtime/cri/index.ts';
import { LABEL_POD_NAME } from '../src/config/defaults.ts';
import { nullLogger } from '../src/util/logger.ts';
import { sleep } from '../src/util/abort.ts';
import { describeError } from '../src/util/errors.ts';
import { BUSYBOX_IMAGE } from '../test/harness/images.ts';
import { removeAllBenchPods, restartBenchContainerd, stopBenchContainerd } from './lib/containerd.ts';
import {
  BENCH_READONLY_PORT,
  removeKubeletDir,
  removePodLogDirs,
  startKubelet,
} from '../test/kit/kubelets.ts';
import { sampleProc } from './lib/proc.ts';
import { staticManifest } from './lib/pods.ts';
import { cores, summarize, table } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    restarts: { type: 'string' },
    pods: { type: 'string' },
    window: { type: 'string' },
    repeat: { type: 'string', default: '1' },
    out: { type: 'string' },
  },
});
const QUICK = values.quick;
const RESTARTS = Number(values.restarts ?? (QUICK ? 10 : 30));
const PODS = Math.max(RESTARTS, Number(values.pods ?? (QUICK ? 30 : 110)));
const WINDOW_MS = Number(values.window ?? (QUICK ? 30 : 60)) * 1000;
const REPEAT = Number(values.repeat);
const NODE = 'bench-tsk';
const PREFIX = 'pe-';
const POLL_MS = 100;
const SETTLE_MS = 10_000;
const LOG_DIR = join(
  '/var/log/tskubelet-bench',
  `pleg-events-${new Date().toISOString().replace(/[:.]/g, '-')}`,
);

type Variant = 'events-off' | 'events-on';

interface PodTimes {
  writtenAt: number;
  started0?: number;
  finished0?: number;
  started1?: number;
  reportedRunning?: number;
  reportedRestarted?: number;
}

interface RunResult {
  variant: Variant;
  createCri: number[];
  createReported: number[];
  restartCri: number[];
  restartReported: number[];
  kubeletCores: number;
  kubeletP95: number;
  containerdCores: number;
  missing: number;
}

const log = (msg: string) => process.stdout.write(`[${new Date().toISOString()}] ${msg}\n`);

function restartingManifest(name: string, exitAfterSec: number): Record<string, unknown> {
  // Exits once: the marker in the emptyDir survives the container's restart.
  const script =
    "trap 'exit 0' TERM; if [ -f /data/ran ]; then sleep 3600 & wait; fi; " +
    `touch /data/ran; sleep ${exitAfterSec.toFixed(2)}; exit 1`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: 'data', emptyDir: {} }],
      containers: [
        {
          name: 'main',
          image: BUSYBOX_IMAGE,
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', script],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
    },
  };
}

function writeManifest(dir: string, name: string, body: Record<string, unknown>): void {
  const tmp = join(dir, `.${name}.tmp`);
  writeFileSync(tmp, JSON.stringify(body));
  renameSync(tmp, join(dir, `${name}.json`));
}

interface ReportedPod {
  metadata?: { name?: string };
  status?: { containerStatuses?: { restartCount?: number; state?: { running?: unknown } }[] };
}

/** One poll: CRI (attempts, exact stamps) and the kubelet's /pods (what it reports). */
async function poll(cri: CriClient, times: Map<string, PodTimes>, asked: Set<string>): Promise<void> {
  const now = Date.now();
  const containers = await cri.runtime.listContainers();
  await Promise.all(
    containers.map(async (c) => {
      const pod = (c.labels?.[LABEL_POD_NAME] ?? '').replace(`-${NODE}`, '');
      const t = times.get(pod);
      if (!t) return;
      const key = `${c.id}:${c.state}`;
      if (asked.has(key) || c.state === 'CONTAINER_CREATED') return;
      asked.add(key);
      const st = await cri.runtime.containerStatus(c.id);
      const attempt = st.metadata.attempt;
      if (attempt === 0 && st.startedAt > 0) t.started0 ??= st.startedAt / 1e6;
      if (attempt === 0 && st.finishedAt > 0) t.finished0 ??= st.finishedAt / 1e6;
      if (attempt === 1 && st.startedAt > 0) t.started1 ??= st.startedAt / 1e6;
    }),
  );
  const res = await fetch(`http://127.0.0.1:${BENCH_READONLY_PORT}/pods`, {
    signal: AbortSignal.timeout(2_000),
  });
  const list = (await res.json()) as { items?: ReportedPod[] };
  for (const p of list.items ?? []) {
    const t = times.get((p.metadata?.name ?? '').replace(`-${NODE}`, ''));
    const cs = p.status?.containerStatuses?.[0];
    if (!t || !cs?.state?.running) continue;
    if ((cs.restartCount ?? 0) === 0) t.reportedRunning ??= now;
    else t.reportedRestarted ??= now;
  }
}

async function runOnce(variant: Variant, index: number): Promise<RunResult> {
  log(`${variant} #${index + 1}: restarting the benchmark containerd`);
  const bed = await restartBenchContainerd(nullLogger);
  const cri = createCriClient({ endpoint: bed.endpoint });
  if ((await cri.runtime.listPodSandbox()).length > 0) await removeAllBenchPods(bed);
  const work = await mkdtemp(join(tmpdir(), 'pleg-events-'));
  const manifests = join(work, 'manifests');
  mkdirSync(manifests, { recursive: true });
  const k = await startKubelet({
    kind: 'tskubelet',
    nodeName: NODE,
    endpoint: bed.endpoint,
    rootDir: join(work, 'root'),
    manifestDir: manifests,
    // `/pods` without credentials (the healthz port serves /healthz only), as the churn benchmark.
    readOnlyPort: BENCH_READONLY_PORT,
    logFile: join(LOG_DIR, `${variant}-${index + 1}.log`),
    extraArgs: ['--evented-pleg', variant === 'events-on' ? 'true' : 'false'],
  });
  try {
    await k.ready(60_000);
    await sleep(2_000);
    const times = new Map<string, PodTimes>();
    for (let i = 0; i < RESTARTS; i++) {
      const name = `${PREFIX}r${i}`;
      times.set(name, { writtenAt: Date.now() });
      writeManifest(manifests, name, restartingManifest(name, 4 + i * 0.37));
    }
    const asked = new Set<string>();
    const done = () =>
      [...times.values()].every((t) => t.started1 !== undefined && t.reportedRestarted !== undefined);
    const deadline = Date.now() + 60_000 + RESTARTS * 1_000;
    while (!done() && Date.now() < deadline) {
      await poll(cri, times, asked).catch((err: unknown) => log(`poll failed: ${describeError(err)}`));
      await sleep(POLL_MS);
    }
    const all = [...times.values()];
    const missing = all.filter((t) => t.started1 === undefined || t.reportedRestarted === undefined).length;
    if (missing > 0) log(`${variant}: ${missing} of ${RESTARTS} pods not seen restarted in time`);
    const diff = (a: number | undefined, b: number | undefined) =>
      a !== undefined && b !== undefined ? a - b : NaN;
    const finite = (xs: number[]) => xs.filter(Number.isFinite);

    // Idle pods up to PODS, then the CPU window with nobody polling.
    for (let i = RESTARTS; i < PODS; i++)
      writeManifest(manifests, `${PREFIX}i${i}`, staticManifest(`${PREFIX}i${i}`));
    const idleDeadline = Date.now() + 60_000 + PODS * 1_000;
    for (;;) {
      const running = (await cri.runtime.listContainers()).filter(
        (c) => c.state === 'CONTAINER_RUNNING' && (c.labels?.[LABEL_POD_NAME] ?? '').startsWith(PREFIX),
      ).length;
      if (running >= PODS) break;
      if (Date.now() > idleDeadline) throw new Error(`${variant}: only ${running} of ${PODS} pods running`);
      await sleep(500);
    }
    await sleep(SETTLE_MS);
    const kSampler = sampleProc(k.pid, 1_000);
    const cSampler = sampleProc(bed.pid, 1_000);
    await sleep(WINDOW_MS);
    const ks = kSampler.summary();
    const cs = cSampler.summary();
    kSampler.stop();
    cSampler.stop();
    return {
      variant,
      createCri: finite(all.map((t) => diff(t.started0, t.writtenAt))),
      createReported: finite(all.map((t) => diff(t.reportedRunning, t.writtenAt))),
      restartCri: finite(all.map((t) => diff(t.started1, t.finished0))),
      restartReported: finite(all.map((t) => diff(t.reportedRestarted, t.finished0))),
      kubeletCores: ks.cpuSecTotal / ks.seconds,
      kubeletP95: ks.cpuP95,
      containerdCores: cs.cpuSecTotal / cs.seconds,
      missing,
    };
  } finally {
    await k.stop();
    cri.close();
    await removeAllBenchPods(bed);
    await removeKubeletDir(work);
    await removePodLogDirs(PREFIX);
  }
}

function latencyRows(results: RunResult[], pick: (r: RunResult) => number[]): string[][] {
  const variants: Variant[] = ['events-off', 'events-on'];
  return variants.map((v) => {
    const s = summarize(results.filter((r) => r.variant === v).flatMap(pick));
    const ms = (x: number) => (Number.isFinite(x) ? String(Math.round(x)) : '—');
    return [v, String(s.n), ms(s.p50), ms(s.p90), ms(s.p99), ms(s.max)];
  });
}

function report(results: RunResult[]): string {
  const head = ['PLEG', 'n', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'];
  const cpu = results.map((r, i) => [
    `${r.variant} #${Math.floor(i / 2) + 1}`,
    cores(r.kubeletCores),
    cores(r.kubeletP95),
    cores(r.containerdCores),
    String(r.missing),
  ]);
  return [
    `# PLEG: containerd events vs the 1 s relist${QUICK ? ' (quick run)' : ''}`,
    '',
    `${RESTARTS} restarting pods, ${PODS} pods for the CPU window of ${WINDOW_MS / 1000} s, ${REPEAT} run(s) per variant, alternating.`,
    '',
    "## Exit → restarted (CRI: finishedAt → the new container's startedAt)",
    table(
      head,
      latencyRows(results, (r) => r.restartCri),
    ),
    '',
    '## Exit → restarted as the kubelet reports it (`/pods`, 100 ms poll)',
    table(
      head,
      latencyRows(results, (r) => r.restartReported),
    ),
    '',
    '## Create → Running (manifest written → CRI startedAt)',
    table(
      head,
      latencyRows(results, (r) => r.createCri),
    ),
    '',
    '## Create → Running as the kubelet reports it (`/pods`, 100 ms poll)',
    table(
      head,
      latencyRows(results, (r) => r.createReported),
    ),
    '',
    `## CPU with ${PODS} idle pods (cores, mean over the window; kubelet p95 of 1 s samples)`,
    table(['run', 'kubelet mean', 'kubelet p95', 'containerd mean', 'pods not seen restarted'], cpu),
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  mkdirSync(LOG_DIR, { recursive: true });
  const results: RunResult[] = [];
  try {
    for (let i = 0; i < REPEAT; i++) {
      for (const v of ['events-off', 'events-on'] as const) results.push(await runOnce(v, i));
    }
  } finally {
    await stopBenchContainerd(nullLogger);
  }
  const text = report(results);
  process.stdout.write(`\n${text}\nkubelet logs: ${LOG_DIR}\n`);
  if (values.out) writeFileSync(values.out, text);
}

await main();
