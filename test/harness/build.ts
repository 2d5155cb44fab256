/**
 * Binaries the beds build from the Kubernetes source tree with a bash script (which holds the tree's
 * lock itself, so concurrent callers are serialised there): build only when one is missing, append
 * the script's output to a log, stop the whole process group on abort or timeout.
 */
import { spawn } from 'node:child_process';
import { access, constants, mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../../src/util/logger.ts';
import { KubeletError, describeError } from '../../src/util/errors.ts';
import { abortReason } from '../../src/util/abort.ts';
import { logTail } from './cluster/daemon.ts';

export interface ScriptBuild<T extends string> {
  /** What is built, for errors: `build <what>`. */
  what: string;
  /** The binaries the script leaves behind, and where. */
  binaries: readonly T[];
  pathOf(name: T): string;
  /** The script and its arguments, run with bash. */
  script: string;
  args?: readonly string[];
  /** The script's output is appended here. */
  log: string;
  timeoutMs: number;
  logger: Logger;
  /** Logged (with the missing binaries and the log path) before building, and after it. */
  starting: string;
  built: string;
  signal?: AbortSignal;
}

/** The binaries that are absent or not executable. */
export async function missingBinaries<T extends string>(
  binaries: readonly T[],
  pathOf: (name: T) => string,
): Promise<T[]> {
  const missing: T[] = [];
  for (const b of binaries) {
    try {
      await access(pathOf(b), constants.X_OK);
    } catch {
      // Absent or not executable: that is what this check is for.
      missing.push(b);
    }
  }
  return missing;
}

/**
 * Resolves once every binary is there, running the script when one is missing; with the seconds the
 * build took, or undefined when nothing was missing.
 */
export async function ensureBuilt<T extends string>(b: ScriptBuild<T>): Promise<number | undefined> {
  const missing = await missingBinaries(b.binaries, (n) => b.pathOf(n));
  if (missing.length === 0) return undefined;
  b.logger.info(b.starting, { missing, log: b.log });
  const started = Date.now();
  for (const dir of new Set([dirname(b.log), ...b.binaries.map((n) => dirname(b.pathOf(n)))])) {
    await mkdir(dir, { recursive: true });
  }
  const log = await open(b.log, 'a');
  try {
    await log.write(`\n===== ${new Date().toISOString()} build started by pid ${process.pid} =====\n`);
    await runScript(b, log.fd);
  } finally {
    await log.close();
  }
  const still = await missingBinaries(b.binaries, (n) => b.pathOf(n));
  if (still.length > 0) {
    throw new KubeletError('Internal', `build ${b.what}`, `build finished but ${still.join(', ')} missing`);
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  b.logger.info(b.built, { seconds });
  return seconds;
}

/**
 * Runs the script in its own process group, so an abort or the timeout stops make and go too. The
 * caller's abort rejects with its reason; the timeout with DeadlineExceeded and the log's tail.
 */
function runScript<T extends string>(b: ScriptBuild<T>, logFd: number): Promise<void> {
  const timeout = AbortSignal.timeout(b.timeoutMs);
  const stop = b.signal ? AbortSignal.any([b.signal, timeout]) : timeout;
  const op = `build ${b.what}`;
  return new Promise<void>((resolve, reject) => {
    if (stop.aborted) {
      reject(abortReason(stop));
      return;
    }
    const child = spawn('bash', [b.script, ...(b.args ?? [])], {
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
      if (code === 0) {
        resolve();
        return;
      }
      if (b.signal?.aborted) {
        reject(abortReason(b.signal));
        return;
      }
      const timedOut = timeout.aborted;
      void logTail(b.log, 30).then((tail) =>
        reject(
          new KubeletError(
            timedOut ? 'DeadlineExceeded' : 'Internal',
            op,
            `${b.script} ${timedOut ? `stopped after ${b.timeoutMs} ms` : 'failed'} (${sig ?? `exit ${code}`}); log: ${b.log}\n${tail}`,
          ),
        ),
      );
    });
  });
}
