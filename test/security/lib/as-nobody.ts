/**
 * Runs the prober (prober.ts) as another user of the node: `runuser -u nobody -- node prober.ts`,
 * the actions on its stdin, the results on its stdout. No upstream counterpart.
 */
import { execFile, spawn } from 'node:child_process';
import { chmod, chown, copyFile, mkdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import type { Action, ActionResult, ClientCert } from './prober.ts';

const PROBER = join(import.meta.dirname, 'prober.ts');
/** The user every "any local user" probe runs as. */
export const OTHER_USER = 'nobody';

/** Runs `actions` as `user`; rejects when the prober itself fails (its stderr in the message). */
export function runAs(
  user: string,
  actions: readonly Action[],
  timeoutMs = 120_000,
): Promise<ActionResult[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('runuser', ['-u', user, '--', process.execPath, PROBER], {
      stdio: ['pipe', 'pipe', 'pipe'],
      // runuser keeps the environment; a HOME root cannot be written by nobody anyway.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) {
        reject(new Error(`prober as ${user} exited ${code ?? signal}: ${err.slice(0, 2000)}`));
        return;
      }
      try {
        resolve(JSON.parse(out) as ActionResult[]);
      } catch (e) {
        reject(new Error(`prober as ${user}: unreadable output ${out.slice(0, 200)}: ${String(e)}`));
      }
    });
    child.stdin.end(JSON.stringify(actions));
  });
}

/**
 * Copies a client certificate and key where `user` can read them (the probes' own test
 * identities: handing them to the other user is the point).
 */
export async function handOver(pair: ClientCert, dir: string, user = OTHER_USER): Promise<ClientCert> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  const { uid, gid } = await userIds(user);
  const out = { cert: join(dir, basename(pair.cert)), key: join(dir, basename(pair.key)) };
  for (const [from, to] of [
    [pair.cert, out.cert],
    [pair.key, out.key],
  ] as const) {
    await copyFile(from, to);
    await chown(to, uid, gid);
    await chmod(to, 0o600);
  }
  return out;
}

export async function userIds(user: string): Promise<{ uid: number; gid: number }> {
  const { stdout } = await promisify(execFile)('id', ['-u', user]);
  const { stdout: g } = await promisify(execFile)('id', ['-g', user]);
  return { uid: Number(stdout.trim()), gid: Number(g.trim()) };
}
