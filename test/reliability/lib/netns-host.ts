/**
 * Host resources a netns node leaves behind when it is not cleaned up, found by name: processes whose
 * command line names one of our directories, cgroups under our cgroup roots, mounts under our
 * directories. Each finder has a remover; every remover tolerates what is already gone.
 */
import { lstat, mkdir, readFile, readdir, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../../../src/util/abort.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import type { Logger } from '../../../src/util/logger.ts';
import { run } from '../../harness/exec.ts';

const CGROUP_FS = '/sys/fs/cgroup';

export interface HostProcess {
  pid: number;
  cmdline: string;
}

/** Processes whose command line contains `needle` (never this process). */
export async function processesMatching(needle: string): Promise<HostProcess[]> {
  const out: HostProcess[] = [];
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const raw = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    const cmdline = raw.split('\0').join(' ').trim();
    if (cmdline.includes(needle)) out.push({ pid, cmdline });
  }
  return out;
}

/** Whether process `pid` exists (signal 0). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    // ESRCH (gone) — EPERM cannot happen as root.
    return false;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/** SIGTERM each pid, SIGKILL whatever still runs after `graceMs`; resolves when all are gone. */
export async function terminatePids(pids: readonly number[], graceMs: number, logger: Logger): Promise<void> {
  for (const pid of pids) signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (pids.some(alive) && Date.now() < deadline) await sleep(100);
  const left = pids.filter(alive);
  if (left.length > 0) {
    logger.info('processes still alive after SIGTERM; killing them', { pids: left, graceMs });
    for (const pid of left) signal(pid, 'SIGKILL');
  }
  const killDeadline = Date.now() + 5_000;
  while (pids.some(alive)) {
    if (Date.now() > killDeadline) {
      throw new KubeletError(
        'DeadlineExceeded',
        'terminate processes',
        `still alive: ${pids.filter(alive).join(', ')}`,
      );
    }
    await sleep(50);
  }
}

/** The v1 hierarchies and the hybrid cgroup2 mount (real directories with cgroup.procs). */
export async function cgroupHierarchies(): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(CGROUP_FS)).sort()) {
    const dir = join(CGROUP_FS, name);
    const st = await lstat(dir).catch(() => undefined);
    if (!st?.isDirectory()) continue; // `cpu` → `cpu,cpuacct` symlinks
    if ((await lstat(join(dir, 'cgroup.procs')).catch(() => undefined)) === undefined) continue;
    out.push(dir);
  }
  return out;
}

/**
 * Makes cgroup `/name` in every hierarchy (what `--cgroup-root` requires), with the root's cpuset
 * values copied in (a new v1 cpuset cgroup has none and cannot take tasks).
 */
export async function createCgroupRoot(name: string): Promise<void> {
  for (const h of await cgroupHierarchies()) {
    const dir = join(h, name);
    await mkdir(dir, { recursive: true });
    if (h.includes('cpuset')) {
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        const v = (await readFile(join(h, f), 'utf8')).trim();
        if ((await readFile(join(dir, f), 'utf8')).trim() === '') await writeFile(join(dir, f), v);
      }
    }
  }
}

/** Directories of cgroup `/name` (and below) in every hierarchy, deepest first. */
async function cgroupTree(name: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory()) await walk(join(dir, e.name));
    out.push(dir);
  };
  for (const h of await cgroupHierarchies()) {
    const dir = join(h, name);
    if ((await lstat(dir).catch(() => undefined)) !== undefined) await walk(dir);
  }
  return out.sort((a, b) => b.length - a.length);
}

/** Cgroup directories named `/<prefix>…` at the top of any hierarchy. */
export async function cgroupRootsWithPrefix(prefix: string): Promise<string[]> {
  const out: string[] = [];
  for (const h of await cgroupHierarchies()) {
    for (const e of await readdir(h, { withFileTypes: true })) {
      if (e.isDirectory() && e.name.startsWith(prefix)) out.push(join(h, e.name));
    }
  }
  return out;
}

/** Kills every process left in cgroup `/name`'s tree (they are its containers), then removes the tree. */
export async function removeCgroupRoot(name: string, logger: Logger): Promise<void> {
  const dirs = await cgroupTree(name);
  const pids = new Set<number>();
  for (const d of dirs) {
    const procs = await readFile(join(d, 'cgroup.procs'), 'utf8').catch(() => '');
    for (const p of procs.split('\n')) if (p.trim() !== '') pids.add(Number(p));
  }
  if (pids.size > 0) {
    logger.warn('processes left in a node cgroup; killing them', { cgroup: name, pids: [...pids] });
    for (const pid of pids) signal(pid, 'SIGKILL');
  }
  const failures: string[] = [];
  for (const d of dirs) {
    for (let attempt = 0; ; attempt++) {
      try {
        await rmdir(d);
        break;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') break;
        if (code === 'EBUSY' && attempt < 50) {
          await sleep(100);
          continue;
        }
        failures.push(`${d}: ${describeError(err)}`);
        break;
      }
    }
  }
  if (failures.length > 0) throw new KubeletError('Internal', `remove cgroup ${name}`, failures.join('; '));
}

/** Mount points at or below `dir` in this mount namespace, deepest first. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const base = dir.replace(/\/$/, '');
  return (await readFile('/proc/self/mounts', 'utf8'))
    .split('\n')
    .map((l) => (l.split(' ')[1] ?? '').replace(/\\040/g, ' '))
    .filter((m) => m === base || m.startsWith(`${base}/`))
    .sort((a, b) => b.length - a.length);
}

/** Lazily unmounts everything at or below `dir`. */
export async function unmountAll(dir: string): Promise<void> {
  for (const m of await mountsUnder(dir)) {
    await run('umount', ['-l', m]).catch((err: unknown) => {
      // Already gone (a parent's lazy unmount took it along) is fine; anything else is not.
      if (!/not mounted|no mount point/i.test(describeError(err))) throw err;
    });
  }
}
