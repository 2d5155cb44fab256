/**
 * One sample of the churn benchmark: what the runtime holds (CRI ListContainers / ListPodSandbox
 * through the project's client), what the kubelet keeps on disk (its root dir, the benchmark's pod
 * log directories, mounts under the root dir), the kubelet process (VmRSS, CPU since the previous
 * sample, open fds, its managed heap: bench/lib/heap.ts) and what it reports on its read-only `/pods`.
 */
import { readdir, lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CriClient } from '../../src/runtime/cri/index.ts';
import { LABEL_POD_NAME } from '../../src/config/defaults.ts';
import { describeError } from '../../src/util/errors.ts';
import { readProc, type ProcSample } from './proc.ts';
import type { HeapReading } from './heap.ts';

export type ChurnPhase = 'baseline' | 'churn' | 'drain';

export interface ChurnSample {
  /** Seconds since the first round. */
  t: number;
  phase: ChurnPhase;
  containers: number;
  containersRunning: number;
  sandboxes: number;
  sandboxesReady: number;
  /** Regular files' apparent size under the root dir, and every entry (files, dirs, links). */
  rootBytes: number;
  rootFiles: number;
  /** The same under the benchmark's pod log directories (`/var/log/pods/<ns>_<prefix…>_<uid>`). */
  logBytes: number;
  logFiles: number;
  /** Mount points at or under the root dir (emptyDir tmpfs, …). */
  rootMounts: number;
  rssKiB: number;
  /** Cores used since the previous sample (NaN for the first). */
  cpuCores: number;
  fds: number;
  /** tskubelet: V8 heapUsed / heapTotal; upstream: Go heap_alloc / heap_inuse (MiB). */
  heapUsedMiB: number;
  heapTotalMiB: number;
  /** Items of the kubelet's read-only `/pods` (NaN when it did not answer). */
  pods: number;
  /** How long taking the sample took (ms). */
  sampleMs: number;
  /** Names of the pods whose sandbox the runtime held at this sample. */
  podNames: string[];
  errors: string[];
}

export interface DirUsage {
  bytes: number;
  files: number;
}

function isEnoent(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

/**
 * Apparent size of the regular files under `dir` and the number of entries (not counting `dir`),
 * symlinks not followed. Entries that vanish during the walk (pods being torn down) are skipped;
 * a missing `dir` is empty.
 */
export async function dirUsage(dir: string): Promise<DirUsage> {
  const total: DirUsage = { bytes: 0, files: 0 };
  const walk = async (d: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch (err) {
      if (isEnoent(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return;
      throw err;
    }
    for (const e of entries) {
      total.files++;
      const p = join(d, e.name);
      if (e.isDirectory()) {
        await walk(p);
      } else if (e.isFile()) {
        try {
          total.bytes += (await lstat(p)).size;
        } catch (err) {
          if (!isEnoent(err)) throw err;
        }
      }
    }
  };
  await walk(dir);
  return total;
}

/** Usage of the pod log directories `<ns>_<name>_<uid>` whose pod name starts with `prefix`. */
export async function podLogUsage(logsDir: string, prefix: string): Promise<DirUsage> {
  const entries = await readdir(logsDir).catch((err: unknown) => {
    if (isEnoent(err)) return [] as string[];
    throw err;
  });
  const total: DirUsage = { bytes: 0, files: 0 };
  for (const e of entries) {
    if (!(e.split('_')[1] ?? '').startsWith(prefix)) continue;
    const u = await dirUsage(join(logsDir, e));
    total.bytes += u.bytes;
    total.files += u.files + 1;
  }
  return total;
}

/** Mount points at or below `dir` in this process's mount namespace (the kubelet's too). */
export function countMountsUnder(mountinfo: string, dir: string): number {
  return mountinfo
    .split('\n')
    .map((l) => (l.split(' ')[4] ?? '').replace(/\\040/g, ' '))
    .filter((p) => p === dir || p.startsWith(`${dir}/`)).length;
}

/** Items in the kubelet's `/pods` (a PodList), NaN on any failure. */
export async function countKubeletPods(url: string): Promise<number> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
  const body = (await res.json()) as { items?: unknown[] | null };
  return body.items?.length ?? 0;
}

export interface SamplerTarget {
  cri: CriClient;
  pid: number;
  rootDir: string;
  logsDir: string;
  podPrefix: string;
  podsUrl: string;
  /** The kubelet's heap; read after everything else (a scrape's connection must not count as an fd). */
  heap: () => Promise<HeapReading>;
}

export interface ChurnSampler {
  take(t: number, phase: ChurnPhase): Promise<ChurnSample>;
}

export function createChurnSampler(target: SamplerTarget): ChurnSampler {
  let prev: ProcSample | undefined = readProc(target.pid);
  return {
    async take(t, phase) {
      const t0 = Date.now();
      const errors: string[] = [];
      const attempt = async <T>(what: string, fn: () => Promise<T>, fallback: T): Promise<T> => {
        try {
          return await fn();
        } catch (err) {
          errors.push(`${what}: ${describeError(err)}`);
          return fallback;
        }
      };
      const proc = readProc(target.pid);
      const [containers, sandboxes, root, logs, mountinfo, fds, pods] = await Promise.all([
        attempt(
          'ListContainers',
          () => target.cri.runtime.listContainers(undefined, { timeoutMs: 10_000 }),
          null,
        ),
        attempt(
          'ListPodSandbox',
          () => target.cri.runtime.listPodSandbox(undefined, { timeoutMs: 10_000 }),
          null,
        ),
        attempt('root dir', () => dirUsage(target.rootDir), { bytes: NaN, files: NaN }),
        attempt('pod logs', () => podLogUsage(target.logsDir, target.podPrefix), { bytes: NaN, files: NaN }),
        attempt('mountinfo', () => readFile('/proc/self/mountinfo', 'utf8'), ''),
        attempt('fds', async () => (await readdir(`/proc/${target.pid}/fd`)).length, NaN),
        attempt('/pods', () => countKubeletPods(target.podsUrl), NaN),
      ]);
      const heap = await attempt('heap', target.heap, { usedMiB: NaN, totalMiB: NaN });
      const cpuCores =
        proc && prev && proc.t > prev.t ? (proc.cpuSec - prev.cpuSec) / ((proc.t - prev.t) / 1000) : NaN;
      if (proc) prev = proc;
      else errors.push('the kubelet process is gone');
      return {
        t,
        phase,
        containers: containers?.length ?? NaN,
        containersRunning: containers?.filter((c) => c.state === 'CONTAINER_RUNNING').length ?? NaN,
        sandboxes: sandboxes?.length ?? NaN,
        sandboxesReady: sandboxes?.filter((s) => s.state === 'SANDBOX_READY').length ?? NaN,
        rootBytes: root.bytes,
        rootFiles: root.files,
        logBytes: logs.bytes,
        logFiles: logs.files,
        rootMounts: mountinfo ? countMountsUnder(mountinfo, target.rootDir) : NaN,
        rssKiB: proc?.rssKiB ?? NaN,
        cpuCores,
        fds,
        heapUsedMiB: heap.usedMiB,
        heapTotalMiB: heap.totalMiB,
        pods,
        sampleMs: Date.now() - t0,
        podNames: [
          ...new Set((sandboxes ?? []).map((s) => s.labels[LABEL_POD_NAME] ?? s.metadata.name)),
        ].sort(),
        errors,
      };
    },
  };
}
