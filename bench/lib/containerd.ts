/**
 * The benchmark's own containerd: the test bed's configuration (test/harness/containerd.ts) with its
 * own root, state, socket and CNI network (bridge tskbench0 on 10.89.0.0/16), so a benchmark can
 * restart it between runs and remove every pod without disturbing tests that share the bed, and
 * their pods never weigh on its measurements. Images are imported from the bed's image cache.
 */
import { spawn } from 'node:child_process';
import { mkdir, open, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import type { Logger } from '../../src/util/logger.ts';
import { KubeletError } from '../../src/util/errors.ts';
import { sleep } from '../../src/util/abort.ts';
import { createCriClient } from '../../src/runtime/cri/index.ts';
import {
  cniConflist,
  containerdConfig,
  criAnswers,
  ensureNetnsMountPoint,
  terminate,
} from '../../test/harness/containerd.ts';
import { ensureImages } from '../../test/harness/images.ts';
import { removeAllPods, type ContainerdBed } from '../../test/harness/index.ts';

export const BENCH_PATHS = {
  socket: '/run/tskubelet-bench/containerd.sock',
  pidFile: '/run/tskubelet-bench/containerd.pid',
  config: '/etc/tskubelet-bench/containerd/config.toml',
  cniConfFile: '/etc/tskubelet-bench/cni/net.d/10-tskubelet-bench.conflist',
  log: '/var/log/tskubelet-bench/containerd.log',
  /** Root of everything the benchmark's kubelets write (one sub-directory per run). */
  kubeletRoot: '/var/lib/tskubelet-bench/kubelet',
  stateDirs: [
    '/var/lib/tskubelet-bench/containerd',
    '/run/tskubelet-bench/containerd',
    '/run/tskubelet-bench/cni/networks',
    '/var/lib/tskubelet-bench/opt',
    '/etc/tskubelet-bench/containerd',
    '/etc/tskubelet-bench/cni/net.d',
    '/var/log/tskubelet-bench',
  ],
} as const;

export const BENCH_POD_SUBNET = '10.89.0.0/16';

/** The bed's text with every bed path, the bridge and the subnet swapped for the benchmark's. */
function rebase(text: string): string {
  const out = text
    .replaceAll('tskubelet-bed', 'tskubelet-bench')
    .replaceAll('tskbed0', 'tskbench0')
    .replaceAll('10.88.0.0/16', BENCH_POD_SUBNET);
  if (out.includes('tskubelet-bed') || out.includes('10.88.')) {
    throw new KubeletError('Internal', 'bench containerd config', 'a bed path survived the rebase');
  }
  return out;
}

const START_TIMEOUT_MS = 30_000;

async function pidOf(): Promise<number | undefined> {
  const raw = await readFile(BENCH_PATHS.pidFile, 'utf8').catch(() => '');
  const pid = Number.parseInt(raw.trim(), 10);
  if (!Number.isInteger(pid) || pid <= 1) return undefined;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return cmdline.split('\0').includes(BENCH_PATHS.config) ? pid : undefined;
}

export interface BenchContainerd extends ContainerdBed {
  /** containerd's pid (for CPU and memory sampling). */
  pid: number;
}

/** Stops the benchmark's containerd if it runs. */
export async function stopBenchContainerd(logger: Logger): Promise<void> {
  const pid = await pidOf();
  if (pid === undefined) return;
  await terminate(pid, logger);
  await unlink(BENCH_PATHS.pidFile).catch(() => undefined);
}

/** (Re)starts the benchmark's containerd: stops a running one, starts a fresh one, imports the images. */
export async function restartBenchContainerd(logger: Logger): Promise<BenchContainerd> {
  await stopBenchContainerd(logger);
  await ensureNetnsMountPoint(logger);
  for (const d of BENCH_PATHS.stateDirs) await mkdir(d, { recursive: true });
  await writeFile(BENCH_PATHS.config, rebase(containerdConfig()));
  await writeFile(BENCH_PATHS.cniConfFile, rebase(cniConflist()));
  for (const p of [BENCH_PATHS.socket, `${BENCH_PATHS.socket}.ttrpc`]) await rm(p, { force: true });
  const log = await open(BENCH_PATHS.log, 'a');
  let pid: number | undefined;
  try {
    await log.write(`\n===== ${new Date().toISOString()} bench: starting containerd =====\n`);
    const child = spawn('containerd', ['--config', BENCH_PATHS.config], {
      detached: true,
      stdio: ['ignore', log.fd, log.fd],
    });
    child.unref();
    pid = child.pid;
  } finally {
    await log.close();
  }
  if (pid === undefined) throw new KubeletError('NotFound', 'start bench containerd', 'spawn failed');
  await writeFile(`${BENCH_PATHS.pidFile}.tmp`, `${pid}\n`);
  await rename(`${BENCH_PATHS.pidFile}.tmp`, BENCH_PATHS.pidFile);
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await criAnswers(BENCH_PATHS.socket, 1_000))) {
    if (Date.now() > deadline) {
      throw new KubeletError(
        'Unavailable',
        'start bench containerd',
        `no CRI answer; log ${BENCH_PATHS.log}`,
      );
    }
    await sleep(100);
  }
  await ensureImages(BENCH_PATHS.socket, logger);
  const started = pid;
  return {
    pid: started,
    socket: BENCH_PATHS.socket,
    endpoint: `unix://${BENCH_PATHS.socket}`,
    podSubnet: BENCH_POD_SUBNET,
    stop: () => stopBenchContainerd(logger),
  };
}

/**
 * Removes every pod sandbox (stop + remove, which takes its containers along) `concurrency` at a
 * time, then checks with the bed's sequential cleanup that nothing is left.
 */
export async function removeAllBenchPods(bed: ContainerdBed, concurrency = 4): Promise<void> {
  const cri = createCriClient({ endpoint: bed.endpoint, timeoutMs: 60_000 });
  try {
    const sandboxes = await cri.runtime.listPodSandbox();
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < sandboxes.length; i = next++) {
        const id = sandboxes[i]?.id ?? '';
        await cri.runtime.stopPodSandbox(id);
        await cri.runtime.removePodSandbox(id);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    cri.close();
  }
  await removeAllPods(bed);
}
