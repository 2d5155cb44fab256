/**
 * The host-path fixture driver run as a child process (main.ts), for the tests that need a real
 * driver crash: `kill` sends SIGKILL, which leaves the sockets behind with no listener, exactly as a
 * crashed driver and registrar do; `start` again is the restart (the registration socket is made
 * anew and the kubelet registers the driver again). No upstream counterpart.
 */
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { spawnLogged, type LoggedProcess } from '../process.ts';
import { eventually } from '../poll.ts';
import type { DriverCall, HostPathDriverOptions } from './driver.ts';

const MAIN = path.join(import.meta.dirname, 'main.ts');

export interface HostPathDriverProcess {
  readonly options: HostPathDriverOptions;
  /** Every call of every run so far, in order (read from the calls file). */
  calls(): Promise<DriverCall[]>;
  /** Starts the driver (again); resolves once it serves. */
  start(): Promise<void>;
  /** SIGKILL: the driver dies mid-whatever, its socket files stay. */
  kill(): Promise<void>;
  /** SIGTERM: the driver closes and removes its sockets. */
  stop(): Promise<void>;
}

/** A driver process with `options` (no `onCall`: the calls file stands for it), logging to `logFile`. */
export function hostPathDriverProcess(
  options: Omit<HostPathDriverOptions, 'onCall'>,
  files: { callsFile: string; logFile: string },
): HostPathDriverProcess {
  let proc: LoggedProcess | undefined;
  const ready = `${files.callsFile}.ready`;
  return {
    options,
    async calls() {
      const text = await readFile(files.callsFile, 'utf8').catch((err: unknown) => {
        if ((err as { code?: string }).code === 'ENOENT') return '';
        throw err;
      });
      return text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as DriverCall);
    },
    async start() {
      if (proc && !proc.exited()) throw new Error('the fixture driver process is running');
      await rm(ready, { force: true });
      const p = spawnLogged(process.execPath, [MAIN, JSON.stringify(options), files.callsFile], {
        logFile: files.logFile,
      });
      proc = p;
      await eventually(
        'the fixture driver process serving',
        async () => {
          await p.assertRunning();
          return existsSync(ready) ? true : undefined;
        },
        30_000,
      );
    },
    async kill() {
      const p = proc;
      if (!p || p.exited()) return;
      const gone = new Promise<void>((r) => p.child.once('exit', () => r()));
      p.child.kill('SIGKILL');
      await gone;
    },
    async stop() {
      await proc?.stop(5_000);
    },
  };
}
