/**
 * Detached daemons for the cluster bed: spawned in their own session (own process group) with
 * output appended to a log file, so they outlive the process that started them; found again by
 * pid file or, when that is stale or gone, by scanning /proc for the bed's own command line.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { mkdir, open, readFile, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { sleep } from '../../../src/util/abort.ts';
import { run } from '../exec.ts';

const STOP_GRACE_MS = 10_000;
const LOG_ROTATE_BYTES = 20 * 1024 * 1024;

export interface DaemonSpec {
  /** e.g. `kube-apiserver`; names log lines and errors. */
  name: string;
  /** Absolute path of the program. */
  binary: string;
  args: readonly string[];
  pidFile: string;
  log: string;
  /** One argument only the bed's instance passes (e.g. its data dir): how its process is recognised. */
  marker: string;
  /** How long SIGTERM may take before SIGKILL (default 10 s). */
  stopGraceMs?: number;
  /** Its environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

export interface RunningDaemon {
  pid: number;
  /** The command line it runs with (argv[1..]), to tell whether its flags are still the wanted ones. */
  args: string[];
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return true;
}

/** Alive and not a zombie (a daemon this process spawned lingers as one until reaped). */
export async function running(pid: number): Promise<boolean> {
  if (!isAlive(pid)) return false;
  const st = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return !/\)\s+Z\s/.test(st);
}

/** How long ago `pid` started (from /proc; assumes the usual 100 clock ticks per second). */
export async function processAgeMs(pid: number): Promise<number | undefined> {
  const [st, uptime] = await Promise.all([
    readFile(`/proc/${pid}/stat`, 'utf8').catch(() => ''),
    readFile('/proc/uptime', 'utf8').catch(() => ''),
  ]);
  // Fields after the parenthesised comm: state is field 3, starttime field 22.
  const fields = st.slice(st.lastIndexOf(')') + 2).split(' ');
  const startTicks = Number(fields[19]);
  const up = Number.parseFloat(uptime);
  if (!Number.isFinite(startTicks) || !Number.isFinite(up)) return undefined;
  return Math.max(0, up * 1000 - startTicks * 10);
}

async function argvOf(pid: number): Promise<string[] | undefined> {
  const raw = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (raw === '') return undefined;
  return raw.replace(/\0$/, '').split('\0');
}

function isOurs(spec: DaemonSpec, argv: readonly string[] | undefined): argv is string[] {
  return (
    argv !== undefined && basename(argv[0] ?? '') === basename(spec.binary) && argv.includes(spec.marker)
  );
}

/** The bed's running instance of `spec`, if any: via its pid file, else by scanning /proc. */
export async function findDaemon(spec: DaemonSpec): Promise<RunningDaemon | undefined> {
  const fromFile = Number.parseInt((await readFile(spec.pidFile, 'utf8').catch(() => '')).trim(), 10);
  const candidates: number[] = Number.isInteger(fromFile) && fromFile > 1 ? [fromFile] : [];
  for (const pass of [0, 1]) {
    if (pass === 1) {
      // The pid file is missing or names another process (a pid reused after a crash): look everywhere.
      const entries = await readdir('/proc');
      candidates.length = 0;
      for (const e of entries) if (/^\d+$/.test(e) && Number(e) !== process.pid) candidates.push(Number(e));
    }
    for (const pid of candidates) {
      const argv = await argvOf(pid);
      if (isOurs(spec, argv) && (await running(pid))) {
        if (pass === 1) {
          await mkdir(dirname(spec.pidFile), { recursive: true });
          await writeFile(spec.pidFile, `${pid}\n`);
        }
        return { pid, args: argv.slice(1) };
      }
    }
  }
  return undefined;
}

/** SIGTERM, SIGKILL after `graceMs`; resolves once the process is gone. */
export async function terminate(
  pid: number,
  name: string,
  logger: Logger,
  graceMs = STOP_GRACE_MS,
): Promise<void> {
  const signal = (sig: NodeJS.Signals): void => {
    try {
      process.kill(pid, sig);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      logger.debug('process already gone', { name, pid, signal: sig });
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!(await running(pid))) return;
    await sleep(50);
  }
  logger.info(`${name} still runs ${graceMs} ms after SIGTERM; killing it`, { pid, graceMs });
  signal('SIGKILL');
  const killDeadline = Date.now() + 5_000;
  while (Date.now() < killDeadline) {
    if (!(await running(pid))) return;
    await sleep(50);
  }
  throw new KubeletError('DeadlineExceeded', `stop ${name}`, `pid ${pid} still alive after SIGKILL`);
}

/** Stops the bed's instance of `spec` if one runs; returns its pid, or undefined when none ran. */
export async function stopDaemon(spec: DaemonSpec, logger: Logger): Promise<number | undefined> {
  const found = await findDaemon(spec);
  if (found !== undefined) {
    await terminate(found.pid, spec.name, logger, spec.stopGraceMs);
    logger.info(`stopped ${spec.name}`, { pid: found.pid });
  }
  await unlink(spec.pidFile).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  });
  return found?.pid;
}

async function rotateLog(log: string): Promise<void> {
  const st = await stat(log).catch(() => undefined);
  if (st && st.size > LOG_ROTATE_BYTES) await rename(log, `${log}.1`);
}

/** Starts `spec` detached (own session), output appended to its log; writes the pid file. */
export async function spawnDaemon(spec: DaemonSpec, logger: Logger): Promise<number> {
  await mkdir(dirname(spec.pidFile), { recursive: true });
  await mkdir(dirname(spec.log), { recursive: true });
  await rotateLog(spec.log);
  const log = await open(spec.log, 'a');
  let pid: number | undefined;
  try {
    await log.write(`\n===== ${new Date().toISOString()} tskubelet bed: starting ${spec.name} =====\n`);
    const child = spawn(spec.binary, spec.args, {
      detached: true,
      stdio: ['ignore', log.fd, log.fd],
      ...(spec.env !== undefined ? { env: spec.env } : {}),
    });
    const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
    child.unref();
    pid = child.pid;
    if (pid === undefined) {
      const err = await spawnError;
      throw new KubeletError(
        'NotFound',
        `start ${spec.name}`,
        `cannot run ${spec.binary}: ${describeError(err)}`,
        {
          cause: err,
        },
      );
    }
  } finally {
    await log.close();
  }
  await writeFile(spec.pidFile, `${pid}\n`);
  logger.info(`started ${spec.name}`, { pid, log: spec.log });
  return pid;
}

export async function logTail(log: string, lines = 25): Promise<string> {
  const text = await readFile(log, 'utf8').catch(() => '');
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export function portInUse(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ port, host });
    sock.setTimeout(1_000);
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('timeout', () => {
      sock.destroy();
      resolve(true); // something holds it but does not accept: still in use
    });
    sock.once('error', () => resolve(false));
  });
}

/** `ss`'s description of who listens on `port` (for error messages); empty when unknown. */
export async function portOwner(port: number): Promise<string> {
  try {
    const { stdout } = await run('ss', ['-Hltnp', `sport = :${port}`], { timeoutMs: 5_000 });
    return stdout.trim();
  } catch (err) {
    return `(ss failed: ${describeError(err)})`;
  }
}
