/**
 * Commands in the node VM over ssh (root, the image's own key, the port QEMU forwards). No upstream
 * counterpart in the kubelet; upstream's node e2e runner does the same with `gcloud compute ssh`
 * (kubernetes/kubernetes test/e2e_node/remote/ssh.go). One multiplexed connection (ControlMaster)
 * carries every command: a fresh handshake costs about a second under TCG.
 */
import { spawn } from 'node:child_process';
import { KubeletError, describeError } from '../../src/util/errors.ts';
import { abortReason } from '../../src/util/abort.ts';

/** What a guest command printed and how it ended; `code` 255 is ssh's own failure. */
export interface GuestResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface GuestRunOptions {
  /** Kills the ssh client after this long (the command in the guest may keep running); default 60 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Written to the command's stdin, which is then closed. */
  input?: string | Buffer;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;
export const SSH_FAILED = 255;

/** The ssh client's options for the VM: key login only, no host key memory, one shared connection. */
export function sshOptions(p: { port: number; key: string; controlPath: string }): string[] {
  return [
    '-i',
    p.key,
    '-p',
    String(p.port),
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'BatchMode=yes',
    // Every image has its own host keys, every boot the same port range: remembering them is noise.
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'LogLevel=ERROR',
    '-o',
    'ConnectTimeout=15',
    '-o',
    'ServerAliveInterval=5',
    '-o',
    'ServerAliveCountMax=12',
    '-o',
    'ControlMaster=auto',
    '-o',
    `ControlPath=${p.controlPath}`,
    '-o',
    'ControlPersist=120',
    'root@127.0.0.1',
  ];
}

/**
 * Runs `command` (a shell command line, run by root's shell in the guest) and resolves with its exit
 * code and output, whatever the code. Rejects only when it cannot run it: the timeout
 * (DeadlineExceeded, with the output so far), the caller's abort (its reason), or no ssh client.
 */
export function sshExec(
  ssh: readonly string[],
  command: string,
  opts: GuestRunOptions = {},
): Promise<GuestResult> {
  const op = `guest: ${command.length > 120 ? `${command.slice(0, 117)}...` : command}`;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise<GuestResult>((resolve, reject) => {
    if (opts.signal?.aborted) {
      reject(abortReason(opts.signal));
      return;
    }
    const child = spawn('ssh', [...ssh, '--', command], {
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let bytes = 0;
    let ended: 'timeout' | 'abort' | 'overflow' | undefined;
    const kill = (why: 'timeout' | 'abort' | 'overflow'): void => {
      ended ??= why;
      child.kill('SIGKILL');
    };
    const collect =
      (into: Buffer[]) =>
      (b: Buffer): void => {
        bytes += b.length;
        if (bytes > MAX_OUTPUT_BYTES) kill('overflow');
        else into.push(b);
      };
    child.stdout?.on('data', collect(out));
    child.stderr?.on('data', collect(err));
    const timer = setTimeout(() => kill('timeout'), timeoutMs);
    const onAbort = (): void => kill('abort');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.input !== undefined && child.stdin) {
      child.stdin.on('error', (e) => {
        // EPIPE: the command ended without reading all of its input; its exit code says how it went.
        if ((e as NodeJS.ErrnoException).code !== 'EPIPE') kill('abort');
      });
      child.stdin.end(opts.input);
    }
    child.once('error', (e) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      reject(new KubeletError('NotFound', op, `cannot run ssh: ${describeError(e)}`, { cause: e }));
    });
    child.once('close', (code, sig) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      const tail = lastLines(`${stdout}\n${stderr}`, 15);
      if (ended === 'abort') reject(abortReason(opts.signal));
      else if (ended === 'timeout')
        reject(new KubeletError('DeadlineExceeded', op, `no answer after ${timeoutMs} ms\n${tail}`));
      else if (ended === 'overflow')
        reject(new KubeletError('ResourceExhausted', op, `more than ${MAX_OUTPUT_BYTES} bytes of output`));
      else if (code === null) reject(new KubeletError('Internal', op, `ssh killed by ${sig ?? 'a signal'}`));
      else resolve({ code, stdout, stderr });
    });
  });
}

/** Like `sshExec`, but a non-zero exit rejects (Unavailable when ssh itself failed). */
export async function sshRun(
  ssh: readonly string[],
  command: string,
  opts: GuestRunOptions = {},
): Promise<GuestResult> {
  const r = await sshExec(ssh, command, opts);
  if (r.code === 0) return r;
  const op = `guest: ${command.length > 120 ? `${command.slice(0, 117)}...` : command}`;
  throw new KubeletError(
    r.code === SSH_FAILED ? 'Unavailable' : 'Internal',
    op,
    `exit ${r.code}: ${lastLines(`${r.stdout}\n${r.stderr}`, 15)}`,
  );
}

function lastLines(text: string, n: number): string {
  return text.trim().split('\n').slice(-n).join('\n');
}
