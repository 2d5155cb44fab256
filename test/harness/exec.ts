import { execFile } from 'node:child_process';
import { KubeletError } from '../../src/util/errors.ts';

export interface RunOptions {
  /** Kills the command after this long; default 60 s. */
  timeoutMs?: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

/**
 * Runs a program with an argument vector (never through a shell) and resolves with its output.
 * A non-zero exit, a timeout or a missing program rejects with a `KubeletError` whose message
 * carries the command line and the tail of stderr.
 */
export function run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const op = `${cmd} ${args.join(' ')}`;
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      {
        timeout: opts.timeoutMs ?? 60_000,
        killSignal: 'SIGKILL',
        maxBuffer: 64 * 1024 * 1024,
        cwd: opts.cwd,
        env: opts.env,
        signal: opts.signal,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        if (!err) {
          resolve({ stdout, stderr });
          return;
        }
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: string | number | null };
        const tail = stderr.trim().split('\n').slice(-15).join('\n');
        if (e.code === 'ENOENT') {
          reject(
            new KubeletError('NotFound', op, `${cmd} is not installed (run scripts/setup.sh)`, {
              cause: err,
            }),
          );
        } else if (e.killed) {
          reject(
            new KubeletError('DeadlineExceeded', op, `killed after ${opts.timeoutMs ?? 60_000} ms\n${tail}`, {
              cause: err,
            }),
          );
        } else {
          reject(
            new KubeletError('Internal', op, `exit ${String(e.code)}: ${tail || e.message}`, { cause: err }),
          );
        }
      },
    );
  });
}
