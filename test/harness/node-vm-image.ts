/**
 * The node VM's image (Debian 12, systemd, cgroup v2, containerd with the systemd cgroup driver),
 * built and cached by scripts/build-node-vm.sh. No upstream counterpart: upstream's node e2e tests
 * boot cloud images (kubernetes/kubernetes test/e2e_node/remote). The script decides whether the
 * cached image is current (a stamp hashing its recipe); this module only asks it and, when not,
 * runs the build in its own process group with its output appended to a log.
 */
import { spawn } from 'node:child_process';
import { mkdir, open, realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '../../src/util/logger.ts';
import { KubeletError, describeError } from '../../src/util/errors.ts';
import { abortReason } from '../../src/util/abort.ts';
import { logTail } from './cluster/daemon.ts';

/** Overridable like scripts/build-kubernetes.sh and scripts/build-node-vm.sh, which read the same variable. */
const CACHE = process.env.TSKUBELET_K8S_CACHE ?? '/var/cache/tskubelet-bed';

export const NODE_VM_PATHS = {
  cache: `${CACHE}/node-vm`,
  /** Link to the current `image-<recipe hash>` dir. */
  current: `${CACHE}/node-vm/current`,
  buildScript: new URL('../../scripts/build-node-vm.sh', import.meta.url).pathname,
  buildLog: '/var/log/tskubelet-bed/build-node-vm.log',
} as const;

/** A cold build (debootstrap, download included) took 7 minutes on a loaded 2-core machine. */
const BUILD_TIMEOUT_MS = 30 * 60_000;
const CHECK_TIMEOUT_MS = 30_000;

/** The files of one built image; never written (boots go through a copy-on-write overlay). */
export interface NodeVmImage {
  /** The `image-<recipe hash>` dir. */
  dir: string;
  /** Raw ext4 root filesystem. */
  disk: string;
  kernel: string;
  initrd: string;
  /** root's ssh private key (its public half is in the image's authorized_keys). */
  sshKey: string;
  /** Package versions inside (kernel, systemd, containerd, runc, glibc), one per line. */
  versions: string;
}

function imageAt(dir: string): NodeVmImage {
  return {
    dir,
    disk: join(dir, 'disk.img'),
    kernel: join(dir, 'vmlinuz'),
    initrd: join(dir, 'initrd.img'),
    sshKey: join(dir, 'id_ed25519'),
    versions: join(dir, 'versions.txt'),
  };
}

/**
 * Resolves with the current image, building it first when the script says the cache is missing or
 * stale (cold: a few minutes; the seconds are logged). Concurrent callers are serialised by the
 * script's lock. Aborting stops the build's whole process group (debootstrap included).
 */
export async function ensureNodeVmImage(
  logger: Logger,
  opts: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<NodeVmImage> {
  const check = await runBuildScript(['--check'], { timeoutMs: CHECK_TIMEOUT_MS, signal: opts.signal });
  if (check !== 0) {
    logger.info('building the node VM image (debootstrap; a few minutes the first time)', {
      log: NODE_VM_PATHS.buildLog,
    });
    const started = Date.now();
    const code = await runBuildScript([], {
      timeoutMs: opts.timeoutMs ?? BUILD_TIMEOUT_MS,
      signal: opts.signal,
      log: NODE_VM_PATHS.buildLog,
    });
    if (code !== 0) {
      throw new KubeletError(
        'Internal',
        'build the node VM image',
        `${NODE_VM_PATHS.buildScript} failed (exit ${code}); log: ${NODE_VM_PATHS.buildLog}\n${await logTail(NODE_VM_PATHS.buildLog, 30)}`,
      );
    }
    logger.info('built the node VM image', { seconds: Math.round((Date.now() - started) / 1000) });
  }
  return imageAt(await realpath(NODE_VM_PATHS.current));
}

/**
 * Runs the build script in its own process group (so an abort or the timeout stops debootstrap
 * too) and resolves with its exit code. Output goes to `log` when given, else nowhere.
 */
async function runBuildScript(
  args: readonly string[],
  opts: { timeoutMs: number; signal?: AbortSignal; log?: string },
): Promise<number> {
  const op = `run ${NODE_VM_PATHS.buildScript} ${args.join(' ')}`.trim();
  let logFd: number | 'ignore' = 'ignore';
  const logFile = opts.log === undefined ? undefined : await openLog(opts.log);
  if (logFile) logFd = logFile.fd;
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const stop = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  try {
    return await new Promise<number>((resolve, reject) => {
      if (stop.aborted) {
        reject(abortReason(stop));
        return;
      }
      const child = spawn('bash', [NODE_VM_PATHS.buildScript, ...args], {
        stdio: ['ignore', logFd, logFd],
        detached: true,
      });
      const onAbort = (): void => {
        if (child.pid === undefined) return;
        try {
          process.kill(-child.pid, 'SIGTERM');
        } catch (err) {
          // ESRCH: it already ended; the exit handler settles the promise.
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH')
            reject(new KubeletError('Internal', `stop ${op}`, describeError(err), { cause: err }));
        }
      };
      stop.addEventListener('abort', onAbort, { once: true });
      child.once('error', (err) => {
        stop.removeEventListener('abort', onAbort);
        reject(new KubeletError('Internal', op, `cannot run bash: ${err.message}`, { cause: err }));
      });
      child.once('exit', (code, sig) => {
        stop.removeEventListener('abort', onAbort);
        if (opts.signal?.aborted) reject(abortReason(opts.signal));
        else if (timeout.aborted)
          reject(new KubeletError('DeadlineExceeded', op, `stopped after ${opts.timeoutMs} ms`));
        else if (code === null) reject(new KubeletError('Internal', op, `killed by ${sig ?? 'a signal'}`));
        else resolve(code);
      });
    });
  } finally {
    await logFile?.close();
  }
}

async function openLog(path: string): Promise<Awaited<ReturnType<typeof open>>> {
  await mkdir(dirname(path), { recursive: true });
  const f = await open(path, 'a');
  await f.write(`\n===== ${new Date().toISOString()} node VM build started by pid ${process.pid} =====\n`);
  return f;
}
