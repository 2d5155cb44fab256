/**
 * One cgroup across all the mounted hierarchies, by absolute cgroupfs name: created (with its
 * values) in every hierarchy, as runc's Apply does, so a cgroup_parent we create is one runc
 * accepts and extends; listed, emptied of processes and removed children first.
 */
import path from 'node:path';
import { KubeletError, describeError } from '../util/errors.ts';
import { sleep } from '../util/abort.ts';
import type { Logger } from '../util/logger.ts';
import { isRequired, type CgroupLayout, type Hierarchy } from './cgroup-layout.ts';
import { createCgroupDirs, writeResources } from './cgroup-setup.ts';
import { errnoCode } from '../util/errors.ts';
import { fsError, readCgroupFile, type CgroupFsOps } from './cgroupfs-ops.ts';
import type { ResourceConfig } from './resources.ts';
import { backoffSteps } from '../util/backoff.ts';

/** Operations on cgroups by absolute cgroupfs name (e.g. `/kubepods/burstable`). */
export interface Cgroups {
  readonly layout: CgroupLayout;
  /** The cgroup's directory exists in every required hierarchy. */
  exists(name: string): Promise<boolean>;
  /** The cgroup's directory exists in at least one hierarchy. */
  existsAnywhere(name: string): Promise<boolean>;
  /**
   * Creates whatever is missing of the cgroup (and its ancestors) in every hierarchy, then writes
   * `resources`. Idempotent; also the way to update an existing cgroup.
   */
  apply(name: string, resources: ResourceConfig, signal?: AbortSignal): Promise<void>;
  /** Names of the child directories of a cgroup, across hierarchies. */
  children(name: string): Promise<string[]>;
  /** PIDs in the cgroup or any cgroup below it, in any hierarchy. */
  pids(name: string): Promise<number[]>;
  /** SIGKILLs every process in the cgroup and below (upstream tryKillingCgroupProcesses). */
  killAll(name: string): Promise<void>;
  /**
   * Kills (SIGKILL) every process left in the cgroup and below, then removes its directories
   * (children first) in every hierarchy. A cgroup that does not exist is not an error.
   */
  destroy(name: string, signal?: AbortSignal): Promise<void>;
}

/** Tries of a kill round / an rmdir that finds the cgroup busy (runc RemovePath retries 5 times). */
const KILL_ATTEMPTS = 5;
const RMDIR_ATTEMPTS = 6;
const RMDIR_FIRST_DELAY_MS = 10;

export function createCgroups(layout: CgroupLayout, ops: CgroupFsOps, log: Logger): Cgroups {
  function dirOf(h: Hierarchy, name: string): string {
    return path.join(h.dir, name);
  }

  async function subdirs(dir: string): Promise<string[]> {
    try {
      return (await ops.readdir(dir)).filter((e) => e.isDirectory).map((e) => e.name);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return [];
      throw fsError(err, `list ${dir}`);
    }
  }

  /** The directory and every cgroup below it, deepest first. */
  async function tree(dir: string): Promise<string[]> {
    const out: string[] = [];
    for (const child of await subdirs(dir)) out.push(...(await tree(path.join(dir, child))));
    out.push(dir);
    return out;
  }

  async function procsOf(dir: string): Promise<number[]> {
    const text = await readCgroupFile(ops, path.join(dir, 'cgroup.procs'));
    return text
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((n) => Number.isInteger(n) && n > 0);
  }

  async function pids(name: string): Promise<number[]> {
    const found = new Set<number>();
    for (const h of layout.hierarchies) {
      const dir = dirOf(h, name);
      if (!(await ops.exists(dir))) continue;
      for (const d of await tree(dir)) for (const pid of await procsOf(d)) found.add(pid);
    }
    return [...found].sort((a, b) => a - b);
  }

  /** Upstream tryKillingCgroupProcesses: SIGKILL each pid, up to five rounds until all are gone. */
  async function killAll(name: string): Promise<void> {
    let remaining = await pids(name);
    for (let attempt = 1; remaining.length > 0; attempt++) {
      const failed: number[] = [];
      let lastError: unknown;
      for (const pid of remaining) {
        if (pid <= 1 || pid === process.pid) {
          throw new KubeletError('FailedPrecondition', `empty cgroup ${name}`, `refusing to kill pid ${pid}`);
        }
        log.debug('killing a process left in a pod cgroup', { cgroup: name, pid });
        try {
          ops.kill(pid, 'SIGKILL');
        } catch (err) {
          if (errnoCode(err) === 'ESRCH') continue; // already gone
          failed.push(pid);
          lastError = err;
        }
      }
      if (failed.length > 0 && attempt >= KILL_ATTEMPTS) {
        throw new KubeletError(
          'Internal',
          `empty cgroup ${name}`,
          `could not kill pids ${failed.join(', ')}: ${describeError(lastError)}`,
          { cause: lastError },
        );
      }
      remaining = failed;
    }
  }

  async function removeDir(dir: string, signal?: AbortSignal): Promise<void> {
    const delays = backoffSteps({ initialMs: RMDIR_FIRST_DELAY_MS });
    for (let attempt = 1; ; attempt++) {
      try {
        await ops.rmdir(dir);
        return;
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'ENOENT') return;
        // Killed tasks take a moment to leave the cgroup.
        if ((code !== 'EBUSY' && code !== 'ENOTEMPTY') || attempt >= RMDIR_ATTEMPTS) {
          throw fsError(err, `remove cgroup ${dir}`);
        }
      }
      await sleep(delays.step(), signal);
    }
  }

  return {
    layout,
    async exists(name) {
      for (const h of layout.hierarchies) {
        if (isRequired(h) && !(await ops.exists(dirOf(h, name)))) return false;
      }
      return true;
    },
    async existsAnywhere(name) {
      for (const h of layout.hierarchies) if (await ops.exists(dirOf(h, name))) return true;
      return false;
    },
    async apply(name, resources, signal) {
      for (const h of layout.hierarchies) {
        signal?.throwIfAborted();
        await createCgroupDirs(ops, log, h, name);
        await writeResources(ops, h, name, resources);
      }
    },
    async children(name) {
      const out = new Set<string>();
      for (const h of layout.hierarchies) for (const c of await subdirs(dirOf(h, name))) out.add(c);
      return [...out].sort();
    },
    pids,
    killAll,
    async destroy(name, signal) {
      if (name.split('/').filter((p) => p !== '').length === 0) {
        throw new KubeletError('InvalidArgument', 'destroy cgroup', 'refusing to remove a hierarchy root');
      }
      await killAll(name);
      const failures: KubeletError[] = [];
      for (const h of layout.hierarchies) {
        signal?.throwIfAborted();
        try {
          for (const dir of await tree(dirOf(h, name))) await removeDir(dir, signal);
        } catch (err) {
          if (signal?.aborted) throw err;
          failures.push(fsError(err, `remove cgroup ${dirOf(h, name)}`));
        }
      }
      if (failures.length > 0) {
        throw new KubeletError(
          failures[0]?.code ?? 'Internal',
          `destroy cgroup ${name}`,
          failures.map((f) => f.message).join('; '),
          { cause: failures[0] },
        );
      }
    },
  };
}
