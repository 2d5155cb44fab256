/**
 * Commands as another local user of the machine (`runuser -u <user> -- <cmd…>`), for the suites
 * that prove what such a user can and cannot reach. No upstream counterpart.
 */
import { execFile } from 'node:child_process';

export interface ShellResult {
  /** The exit code; -1 when the command was killed (its timeout) or could not start. */
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `cmd` as `user` (with `input` on its stdin): exit code and output, never rejecting. */
export function shellAs(
  user: string,
  cmd: readonly string[],
  opts: { input?: string; timeoutMs?: number } = {},
): Promise<ShellResult> {
  return new Promise((resolve) => {
    const child = execFile(
      'runuser',
      ['-u', user, '--', ...cmd],
      { timeout: opts.timeoutMs ?? 30_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(opts.input ?? '');
  });
}
