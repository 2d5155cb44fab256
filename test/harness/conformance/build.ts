/**
 * The suite's binaries (e2e.test, ginkgo, agnhost, nnp), built once from the cluster bed's source
 * tree by build-e2e.sh and cached beside the control-plane binaries. The control plane comes first:
 * its build unpacks the tree and generates the code e2e.test needs.
 */
import { spawn } from 'node:child_process';
import { access, constants, mkdir, open } from 'node:fs/promises';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { ensureKubernetesBinaries } from '../cluster/index.ts';
import { logTail } from '../cluster/daemon.ts';
import {
  CONFORMANCE_BINARIES,
  CONFORMANCE_PATHS,
  conformanceBinary,
  type ConformanceBinary,
} from './paths.ts';

/** e2e.test alone takes ~3 min on 2 cores with a warm cache; a cold one, and waiting for the lock, more. */
const BUILD_TIMEOUT_MS = 60 * 60_000;

async function missing(): Promise<ConformanceBinary[]> {
  const out: ConformanceBinary[] = [];
  for (const b of CONFORMANCE_BINARIES) {
    try {
      await access(conformanceBinary(b), constants.X_OK);
    } catch {
      // Absent or not executable: that is what this check is for.
      out.push(b);
    }
  }
  return out;
}

export interface BuildReport {
  /** Seconds each build step took; empty when everything was cached. */
  controlPlaneSeconds?: number;
  suiteSeconds?: number;
}

/** Builds what is missing; resolves when every binary is in the cache. */
export async function ensureConformanceBinaries(logger: Logger, signal?: AbortSignal): Promise<BuildReport> {
  const report: BuildReport = {};
  let t = Date.now();
  await ensureKubernetesBinaries(logger, signal);
  if (Date.now() - t > 5_000) report.controlPlaneSeconds = Math.round((Date.now() - t) / 1000);
  const absent = await missing();
  if (absent.length === 0) return report;
  logger.info('building the conformance suite from the Kubernetes source tree (a few minutes)', {
    missing: absent,
    log: CONFORMANCE_PATHS.buildLog,
  });
  t = Date.now();
  await mkdir(CONFORMANCE_PATHS.binDir, { recursive: true });
  const log = await open(CONFORMANCE_PATHS.buildLog, 'a');
  try {
    await log.write(`\n===== ${new Date().toISOString()} build started by pid ${process.pid} =====\n`);
    await runScript(log.fd, signal);
  } finally {
    await log.close();
  }
  const still = await missing();
  if (still.length > 0) {
    throw new KubeletError(
      'Internal',
      'build conformance suite',
      `build finished but ${still.join(', ')} missing`,
    );
  }
  report.suiteSeconds = Math.round((Date.now() - t) / 1000);
  logger.info('built the conformance suite', { seconds: report.suiteSeconds });
  return report;
}

/** Runs build-e2e.sh in its own process group, so an abort or the timeout stops make and go too. */
function runScript(logFd: number, signal?: AbortSignal): Promise<void> {
  const stop = AbortSignal.any([...(signal ? [signal] : []), AbortSignal.timeout(BUILD_TIMEOUT_MS)]);
  const { srcDir, binDir, buildLock, buildScript, buildLog } = CONFORMANCE_PATHS;
  return new Promise<void>((resolve, reject) => {
    const child = spawn('bash', [buildScript, srcDir, binDir, buildLock], {
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
          reject(new KubeletError('Internal', 'stop conformance build', describeError(err), { cause: err }));
      }
    };
    stop.addEventListener('abort', onAbort, { once: true });
    child.once('error', (err) => {
      stop.removeEventListener('abort', onAbort);
      reject(
        new KubeletError('Internal', 'build conformance suite', `cannot run bash: ${err.message}`, {
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
      void logTail(buildLog, 30).then((tail) =>
        reject(
          new KubeletError(
            stop.aborted ? 'DeadlineExceeded' : 'Internal',
            'build conformance suite',
            `${buildScript} ${stop.aborted ? 'stopped' : 'failed'} (${sig ?? `exit ${code}`}); log: ${buildLog}\n${tail}`,
          ),
        ),
      );
    });
  });
}
