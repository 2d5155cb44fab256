/**
 * A standalone tskubelet process (static pods only) on the bed's containerd, which a scenario can
 * SIGKILL and start again on the same root dir, plus what it may leave behind: pod directories,
 * mounts under its root dir, pod cgroups.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { startStandaloneKubelet, type TskubeletProcess } from '../../kit/process.ts';
import type { Env } from '../../kit/bed.ts';

export interface StandaloneNode {
  readonly nodeName: string;
  /** The running process (replaced by each start). */
  readonly proc: TskubeletProcess;
  /** Starts a new process on the same root dir (after a kill). */
  start(): void;
  /** SIGKILL, and resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM, as an init system stops it. */
  stop(): Promise<void>;
}

export function standaloneNode(
  env: Env,
  opts: { nodeName: string; port: number; extraArgs?: string[] },
): StandaloneNode {
  let proc: TskubeletProcess | undefined;
  const spawnOne = () =>
    startStandaloneKubelet(env, { node: opts.nodeName, port: opts.port, extraArgs: opts.extraArgs });
  const node: StandaloneNode = {
    nodeName: opts.nodeName,
    get proc() {
      if (!proc) throw new Error('standalone node not started');
      return proc;
    },
    start() {
      proc = spawnOne();
    },
    async kill() {
      const p = proc;
      if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
      const gone = new Promise((r) => p.child.once('exit', r));
      p.child.kill('SIGKILL');
      await gone;
    },
    async stop() {
      await proc?.stop();
    },
  };
  return node;
}

/** Pod directories left under `<rootDir>/pods`. */
export async function podDirs(rootDir: string): Promise<string[]> {
  return readdir(join(rootDir, 'pods')).catch(() => []);
}

/** Mount points at or below `dir`. */
export async function mountsBelow(dir: string): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  return text
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m === dir || m.startsWith(`${dir}/`));
}

/** Pod cgroups (`pod<uid>` under kubepods, in the memory and pids hierarchies) of these UIDs. */
export async function podCgroups(uids: Iterable<string>): Promise<string[]> {
  const want = new Set([...uids].map((u) => `pod${u}`));
  const found: string[] = [];
  for (const ctrl of ['memory', 'pids']) {
    const base = join('/sys/fs/cgroup', ctrl, 'kubepods');
    for (const dir of [base, join(base, 'burstable'), join(base, 'besteffort')]) {
      for (const e of await readdir(dir).catch(() => [] as string[])) {
        if (want.has(e)) found.push(join(dir, e));
      }
    }
  }
  return found;
}
