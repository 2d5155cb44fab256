/**
 * The Kubernetes 1.20.2 binaries the cluster bed runs, built once by scripts/build-kubernetes.sh
 * from Debian's source package and cached outside the repo. Building takes ~8 minutes on 2 cores;
 * it happens only when a binary is missing.
 */
import { spawn } from 'node:child_process';
import { access, constants, mkdir, open } from 'node:fs/promises';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError } from '../../../src/util/errors.ts';
import { abortReason } from '../../../src/util/abort.ts';
import { CLUSTER_PATHS } from './paths.ts';
import { logTail } from './daemon.ts';

export const KUBERNETES_BINARIES = [
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
] as const;
export type KubernetesBinary = (typeof KUBERNETES_BINARIES)[number];

const BUILD_TIMEOUT_MS = 45 * 60_000;

/** Absolute path of a cached binary (it may not exist yet: see `ensureKubernetesBinaries`). */
export function kubernetesBinary(name: KubernetesBinary): string {
  return `${CLUSTER_PATHS.binDir}/${name}`;
}

async function missingBinaries(): Promise<KubernetesBinary[]> {
  const missing: KubernetesBinary[] = [];
  for (const b of KUBERNETES_BINARIES) {
    try {
      await access(kubernetesBinary(b), constants.X_OK);
    } catch {
      // Absent or not executable: that is what this check is for.
      missing.push(b);
    }
  }
  return missing;
}

/**
 * Resolves once every binary is in the cache, running the build script (output appended to
 * `CLUSTER_PATHS.buildLog`) when one is missing. Concurrent callers are serialised by the script's lock.
 */
export async function ensureKubernetesBinaries(logger: Logger, signal?: AbortSignal): Promise<void> {
  const missing = await missingBinaries();
  if (missing.length === 0) return;
  logger.info('building Kubernetes binaries from source (about 8 minutes on 2 cores)', {
    missing,
    log: CLUSTER_PATHS.buildLog,
  });
  await mkdir(CLUSTER_PATHS.logDir, { recursive: true });
  const log = await open(CLUSTER_PATHS.buildLog, 'a');
  const started = Date.now();
  try {
    await log.write(`\n===== ${new Date().toISOString()} build started by pid ${process.pid} =====\n`);
    await runBuild(log.fd, signal);
  } finally {
    await log.close();
  }
  const still = await missingBinaries();
  if (still.length > 0) {
    throw new KubeletError('Internal', 'build kubernetes', `build finished but ${still.join(', ')} missing`);
  }
  logger.info('built Kubernetes binaries', { seconds: Math.round((Date.now() - started) / 1000) });
}

/** Runs the build script in its own process group, so an abort or timeout stops make and go too. */
function runBuild(logFd: number, signal?: AbortSignal): Promise<void> {
  const stop = signal
    ? AbortSignal.any([signal, AbortSignal.timeout(BUILD_TIMEOUT_MS)])
    : AbortSignal.timeout(BUILD_TIMEOUT_MS);
  return new Promise<void>((resolve, reject) => {
    if (stop.aborted) {
      reject(abortReason(stop));
      return;
    }
    const child = spawn('bash', [CLUSTER_PATHS.buildScript], {
      stdio: ['ignore', logFd, logFd],
      detached: true,
    });
    const onAbort = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch (err) {
        // ESRCH: the build already ended; its exit handler settles the promise.
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') {
          reject(
            new KubeletError('Internal', 'stop kubernetes build', (err as Error).message, { cause: err }),
          );
        }
      }
    };
    stop.addEventListener('abort', onAbort, { once: true });
    child.once('error', (err) => {
      stop.removeEventListener('abort', onAbort);
      reject(
        new KubeletError('Internal', 'build kubernetes', `cannot run the build: ${err.message}`, {
          cause: err,
        }),
      );
    });
    child.once('exit', (code, sig) => {
      stop.removeEventListener('abort', onAbort);
      if (code === 0) {
        resolve();
        return;
      }
      if (stop.aborted) {
        reject(abortReason(stop));
        return;
      }
      void logTail(CLUSTER_PATHS.buildLog, 30).then((tail) =>
        reject(
          new KubeletError(
            'Internal',
            'build kubernetes',
            `${CLUSTER_PATHS.buildScript} failed (${sig ?? `exit ${code}`}); log: ${CLUSTER_PATHS.buildLog}\n${tail}`,
          ),
        ),
      );
    });
  });
}
