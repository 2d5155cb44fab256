/**
 * Where tskubelet's resident memory goes, idle and with N pods (issue 14, "a lean process"): the
 * steady-state scenario's setup (cluster mode, a fresh benchmark containerd, the pods of
 * scenario 3) for one or more builds of tskubelet in turn, each read in detail — VmRSS (max over
 * the window), its anonymous and file-backed parts (/proc/<pid>/smaps_rollup), the V8 heap from
 * the preloaded probe — and optionally a heap snapshot at the end of each window.
 *
 *   flock /tmp/tskubelet-bed.lock node bench/lean.ts [--variant LABEL=BIN[;NODE_FLAGS]]...
 *       [--pods 110] [--window 20] [--repeat 1] [--snapshots DIR] [--out FILE.md]
 *
 * A variant is a `bin/tskubelet` (another worktree's, to compare commits in one run) and optionally
 * the node flags it runs with (`TSKUBELET_NODE_FLAGS`); default: this tree's, its own flags.
 * Variants alternate (A B A B with --repeat 2). With --snapshots, RSS is read before each snapshot,
 * but the idle snapshot weighs on the later reading: compare RSS from runs without snapshots.
 * Summaries of the snapshots: `node bench/heap-top.ts FILE.heapsnapshot`. With --trim-probe, after
 * each window gdb makes the kubelet call glibc's malloc_trim(0), and the RSS after it is reported:
 * how much of the resident memory is free memory malloc kept (diagnostic only; needs gdb).
 */
import { readFileSync, writeFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApiClient } from '../src/api/client.ts';
import { nullLogger } from '../src/util/logger.ts';
import { sleep } from '../src/util/abort.ts';
import { startCluster } from '../test/harness/cluster/index.ts';
import {
  BENCH_PATHS,
  removeAllBenchPods,
  restartBenchContainerd,
  stopBenchContainerd,
} from './lib/containerd.ts';
import {
  removeKubeletDir,
  removePodLogDirs,
  startKubelet,
  type RunningKubelet,
} from '../test/kit/kubelets.ts';
import { sampleProc } from './lib/proc.ts';
import { apiPod } from './lib/pods.ts';
import {
  createPods,
  deleteNode,
  deletePods,
  deletePodsOnNode,
  waitNodeReady,
  watchPods,
} from './lib/cluster.ts';
import { mib, table } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    variant: { type: 'string', multiple: true },
    pods: { type: 'string', default: '110' },
    window: { type: 'string', default: '20' },
    repeat: { type: 'string', default: '1' },
    snapshots: { type: 'string' },
    'trim-probe': { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});

const PODS = Number(values.pods);
const WINDOW_MS = Number(values.window) * 1000;
const REPEAT = Number(values.repeat);
const NODE = 'bench-tsk';
const NAMESPACE = 'default';
const PREFIX = 'bk-lean-';
const SNAP_SIGNAL = 'SIGTTIN';
const RUN_LOG_DIR = join(
  '/var/log/tskubelet-bench',
  `lean-${new Date().toISOString().replace(/[:.]/g, '-')}`,
);

interface Variant {
  label: string;
  bin?: string;
  nodeFlags?: string;
}
const variants: Variant[] = (values.variant ?? ['this']).map((v) => {
  const [label = v, rest] = v.includes('=') ? [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)] : [v];
  if (rest === undefined) return { label };
  const [bin, flags] = rest.split(';');
  return { label, ...(bin ? { bin } : {}), ...(flags !== undefined ? { nodeFlags: flags } : {}) };
});

const started = Date.now();
function log(msg: string): void {
  process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(5)}s] ${msg}\n`);
}

/** KiB fields of /proc/<pid>/smaps_rollup. */
function smaps(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').split('\n')) {
    const m = /^(\w+):\s+(\d+) kB/.exec(line);
    if (m?.[1] && m[2]) out[m[1]] = Number(m[2]);
  }
  return out;
}

/** The probe's process.memoryUsage() (MiB), via SIGUSR2 (bench/lib/eld-probe.ts). */
async function heap(k: RunningKubelet, file: string): Promise<Record<string, number>> {
  const count = (): string[] => {
    try {
      return readFileSync(file, 'utf8').split('\n').filter(Boolean);
    } catch {
      return [];
    }
  };
  const before = count().length;
  process.kill(k.pid, 'SIGUSR2');
  for (let i = 0; i < 100; i++) {
    const lines = count();
    if (lines.length > before) return JSON.parse(lines[lines.length - 1] ?? '{}') as Record<string, number>;
    await sleep(20);
  }
  return {};
}

/** Makes the process call malloc_trim(0) (gdb, a few hundred ms stopped); its VmRSS after. */
function mallocTrim(pid: number): number | undefined {
  try {
    execFileSync('gdb', ['-p', String(pid), '-batch', '-ex', 'call (int)malloc_trim(0)'], {
      stdio: 'ignore',
      timeout: 30_000,
    });
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

async function snapshot(k: RunningKubelet, dir: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(k.pid, SNAP_SIGNAL);
  for (let i = 0; i < 600; i++) {
    await sleep(500);
    const f = readdirSync(dir).find((n) => !before.has(n) && n.endsWith('.heapsnapshot'));
    if (f) {
      // Written in one go; wait for its size to settle.
      let size = -1;
      for (;;) {
        const s = statSync(join(dir, f)).size;
        if (s === size) return join(dir, f);
        size = s;
        await sleep(1_000);
      }
    }
  }
  throw new Error('no heap snapshot within 5 min');
}

interface Row {
  variant: string;
  run: number;
  pods: number;
  rssMaxKiB: number;
  cpuP50: number;
  cpuP95: number;
  cpuMean: number;
  anonKiB: number;
  fileKiB: number;
  heap: Record<string, number>;
  snapshot?: string;
  /** VmRSS after malloc_trim(0) (--trim-probe). */
  trimmedKiB?: number;
}
const rows: Row[] = [];

async function measure(
  v: Variant,
  run: number,
  admin: Awaited<ReturnType<typeof createApiClient>>,
  kubeconfig: string,
) {
  const dir = join(BENCH_PATHS.kubeletRoot, 'lean-tskubelet');
  const eld = join(RUN_LOG_DIR, `${v.label}-${run}.eld.jsonl`);
  const snapDir = values.snapshots ? join(values.snapshots, `${v.label}-${run}`) : undefined;
  if (snapDir) mkdirSync(snapDir, { recursive: true });
  const bed = await restartBenchContainerd(nullLogger);
  await deletePodsOnNode(admin, NAMESPACE, NODE);
  await deleteNode(admin, NODE);
  await removeKubeletDir(dir);
  mkdirSync(join(dir, 'root'), { recursive: true });
  const k = await startKubelet({
    kind: 'tskubelet',
    nodeName: NODE,
    endpoint: bed.endpoint,
    rootDir: join(dir, 'root'),
    kubeconfig,
    logFile: join(RUN_LOG_DIR, `${v.label}-${run}.log`),
    eldFile: eld,
    ...(v.bin ? { bin: v.bin } : {}),
    ...(v.nodeFlags !== undefined ? { nodeFlags: v.nodeFlags } : {}),
    ...(snapDir ? { nodeOptions: `--heapsnapshot-signal=${SNAP_SIGNAL} --diagnostic-dir=${snapDir}` } : {}),
  });
  const sampler = sampleProc(k.pid, 1_000);
  const watch = await watchPods(admin, NAMESPACE, NODE, log);
  try {
    await k.ready(60_000);
    await waitNodeReady(admin, NODE, 90_000);
    const window = async (pods: number): Promise<void> => {
      await sleep(10_000);
      const t0 = Date.now();
      await sleep(WINDOW_MS);
      const u = sampler.summary(t0, Date.now());
      const sm = smaps(k.pid);
      const row: Row = {
        variant: v.label,
        run,
        pods,
        rssMaxKiB: u.rssMaxKiB,
        cpuP50: u.cpuP50,
        cpuP95: u.cpuP95,
        cpuMean: u.cpuSecTotal / Math.max(1, u.seconds),
        anonKiB: sm.Anonymous ?? 0,
        fileKiB: (sm.Rss ?? 0) - (sm.Anonymous ?? 0),
        heap: await heap(k, eld),
      };
      if (values['trim-probe']) row.trimmedKiB = mallocTrim(k.pid);
      if (snapDir) row.snapshot = await snapshot(k, snapDir);
      rows.push(row);
      log(`${v.label} #${run} ${pods} pods: RSS max ${mib(u.rssMaxKiB)} MiB ${JSON.stringify(row.heap)}`);
    };
    await window(0);
    const pods = Array.from({ length: PODS }, (_, i) => apiPod(`${PREFIX}${i}`, NAMESPACE, NODE, true));
    const names = pods.map((p) => p.metadata.name);
    await createPods(admin, NAMESPACE, pods);
    if (!(await watch.until(() => names.every((p) => watch.running.has(p)), 60_000 + 2_000 * PODS))) {
      log(`${v.label} #${run}: not all ${PODS} pods running`);
    }
    await window(PODS);
    await deletePods(admin, NAMESPACE, names);
  } finally {
    sampler.stop();
    await watch.stop();
    await k.stop();
    await deletePodsOnNode(admin, NAMESPACE, NODE);
    await deleteNode(admin, NODE);
    await removeKubeletDir(dir);
    await removePodLogDirs(PREFIX);
    await removeAllBenchPods(bed);
  }
}

function render(): string {
  const r1 = (kib: number) => (kib / 1024).toFixed(1);
  return table(
    [
      'variant',
      'run',
      'pods',
      'RSS max MiB',
      'anon MiB',
      'file MiB',
      'heap used / total MiB',
      'external / arrayBuffers MiB',
      'CPU p50 / p95 / mean cores',
      'RSS after malloc_trim MiB',
    ],
    rows.map((r) => [
      r.variant,
      String(r.run),
      String(r.pods),
      r1(r.rssMaxKiB),
      r1(r.anonKiB),
      r1(r.fileKiB),
      `${r.heap.heapUsed ?? '?'} / ${r.heap.heapTotal ?? '?'}`,
      `${r.heap.external ?? '?'} / ${r.heap.arrayBuffers ?? '?'}`,
      `${r.cpuP50.toFixed(3)} / ${r.cpuP95.toFixed(3)} / ${r.cpuMean.toFixed(3)}`,
      r.trimmedKiB !== undefined ? r1(r.trimmedKiB) : '—',
    ]),
  );
}

mkdirSync(RUN_LOG_DIR, { recursive: true });
log(`logs in ${RUN_LOG_DIR}`);
const cluster = await startCluster({ logger: nullLogger });
const admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
try {
  const kubeconfig = await cluster.kubeletKubeconfig(NODE);
  for (let run = 1; run <= REPEAT; run++) {
    for (const v of variants) {
      try {
        await measure(v, run, admin, kubeconfig);
      } catch (err) {
        log(`${v.label} #${run} failed: ${String(err)}`);
      }
      if (values.out) writeFileSync(values.out, `${render()}\n`);
    }
  }
} finally {
  admin.close();
  await cluster.stop();
  await stopBenchContainerd(nullLogger);
}
process.stdout.write(`${render()}\n`);
