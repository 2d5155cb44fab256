/**
 * The cgroupfs side: finds the mounted hierarchies under a root (normally /sys/fs/cgroup) and
 * creates, configures, empties and removes one cgroup in all of them, the way runc's cgroupfs
 * manager lays them out, so a cgroup_parent we create is one runc accepts and extends.
 *
 * - cgroup v1: one directory per mounted hierarchy (`cpu`, `cpu,cpuacct`, `memory`, `systemd`
 *   for name=systemd, …); the cgroup is created in every one of them, as runc's Apply does. In
 *   hybrid mode the cgroup2 mount at `<root>/unified` (no v1 controllers to set) gets the directory
 *   too, since runc joins containers there.
 * - cgroup v2: one tree at the root; controllers are enabled through `cgroup.subtree_control` on
 *   the way down, values go to `cpu.weight`, `cpu.max`, `memory.max`, `pids.max`.
 */
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { KubeletError, describeError, type ErrorCode } from '../util/errors.ts';
import { sleep } from '../util/abort.ts';
import type { Logger } from '../util/logger.ts';
import { cpuMaxValue, cpuSharesToWeight, limitValue, type ResourceConfig } from './resources.ts';

/** The file operations this module needs; tests substitute a fake cgroupfs (testing.ts). */
export interface CgroupFsOps {
  readFile(file: string): Promise<string>;
  /** One write of the whole value, as cgroup files require. */
  writeFile(file: string, data: string): Promise<void>;
  /** Creates one directory; resolves false when it already existed. */
  mkdir(dir: string): Promise<boolean>;
  rmdir(dir: string): Promise<void>;
  /** Entries of a directory, with whether each is a (real, not symlinked) directory. */
  readdir(dir: string): Promise<{ name: string; isDirectory: boolean }[]>;
  exists(file: string): Promise<boolean>;
  kill(pid: number, signal: NodeJS.Signals): void;
}

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** The real file system. */
export const nodeCgroupFs: CgroupFsOps = {
  readFile: (file) => fsp.readFile(file, 'utf8'),
  writeFile: (file, data) => fsp.writeFile(file, data),
  async mkdir(dir) {
    try {
      await fsp.mkdir(dir);
      return true;
    } catch (err) {
      if (errnoCode(err) === 'EEXIST') return false;
      throw err;
    }
  },
  rmdir: (dir) => fsp.rmdir(dir),
  async readdir(dir) {
    const entries = await fsp.readdir(dir, { withFileTypes: true });
    return entries.map((e) => ({ name: e.name, isDirectory: e.isDirectory() }));
  },
  async exists(file) {
    try {
      await fsp.stat(file);
      return true;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return false;
      throw err;
    }
  },
  kill: (pid, signal) => process.kill(pid, signal),
};

/** One mounted hierarchy. */
export type Hierarchy =
  | {
      kind: 'v1';
      /** Absolute path of the mount, e.g. /sys/fs/cgroup/cpu,cpuacct. */
      dir: string;
      /** Controller names from the mount's directory name (`systemd` for name=systemd). */
      controllers: ReadonlySet<string>;
    }
  | {
      kind: 'v2';
      dir: string;
      /** Controllers available at the root of this hierarchy (its cgroup.controllers). */
      controllers: ReadonlySet<string>;
      /** The cgroup2 mount of a hybrid system (beside v1 hierarchies): directories only. */
      hybrid: boolean;
    };

export interface CgroupLayout {
  mode: 'v1' | 'hybrid' | 'v2';
  hierarchies: readonly Hierarchy[];
}

/**
 * Controllers whose directory must exist for a cgroup to count as existing (upstream cgroupV1impl
 * Validate allowlist; hugetlb only when mounted).
 */
const V1_REQUIRED = ['cpu', 'cpuacct', 'cpuset', 'memory', 'systemd', 'pids', 'hugetlb'];

/** Controllers whose values we write; on v2 they must be enabled down the tree. */
const V2_NEEDED = ['cpu', 'memory', 'pids'];

function fsError(err: unknown, op: string): KubeletError {
  if (err instanceof KubeletError) return err;
  const codes: Record<string, ErrorCode> = {
    ENOENT: 'NotFound',
    EACCES: 'PermissionDenied',
    EPERM: 'PermissionDenied',
    EROFS: 'PermissionDenied',
    EBUSY: 'FailedPrecondition',
    ENOTEMPTY: 'FailedPrecondition',
    EINVAL: 'InvalidArgument',
  };
  return new KubeletError(codes[errnoCode(err) ?? ''] ?? 'Internal', op, describeError(err), { cause: err });
}

async function readControllers(ops: CgroupFsOps, dir: string): Promise<Set<string>> {
  const text = await ops.readFile(path.join(dir, 'cgroup.controllers'));
  return new Set(text.split(/\s+/).filter((c) => c !== ''));
}

/**
 * Finds the hierarchies under `root`: pure v2 when the root itself is a cgroup2 mount (it has
 * cgroup.controllers); otherwise every real directory below it that is a cgroup (has cgroup.procs)
 * is a v1 mount, except a cgroup2 one (hybrid mode). Symlinks (`cpu` → `cpu,cpuacct`) are skipped.
 */
export async function detectLayout(root: string, ops: CgroupFsOps = nodeCgroupFs): Promise<CgroupLayout> {
  const op = `detect cgroup hierarchies under ${root}`;
  try {
    if (await ops.exists(path.join(root, 'cgroup.controllers'))) {
      return {
        mode: 'v2',
        hierarchies: [
          { kind: 'v2', dir: root, controllers: await readControllers(ops, root), hybrid: false },
        ],
      };
    }
    const hierarchies: Hierarchy[] = [];
    const entries = (await ops.readdir(root))
      .filter((e) => e.isDirectory)
      .sort((a, b) => a.name.localeCompare(b.name));
    for (const e of entries) {
      const dir = path.join(root, e.name);
      if (!(await ops.exists(path.join(dir, 'cgroup.procs')))) continue;
      if (await ops.exists(path.join(dir, 'cgroup.controllers'))) {
        hierarchies.push({ kind: 'v2', dir, controllers: await readControllers(ops, dir), hybrid: true });
      } else {
        const controllers = new Set(e.name.split(',').map((c) => c.replace(/^name=/, '')));
        hierarchies.push({ kind: 'v1', dir, controllers });
      }
    }
    if (hierarchies.length === 0) {
      throw new KubeletError('FailedPrecondition', op, 'no cgroup hierarchy is mounted there');
    }
    const hybrid = hierarchies.some((h) => h.kind === 'v2');
    return { mode: hybrid ? 'hybrid' : 'v1', hierarchies };
  } catch (err) {
    throw fsError(err, op);
  }
}

/** Every controller a layout offers for writing values (the hybrid cgroup2 mount offers none). */
export function settableControllers(layout: CgroupLayout): Set<string> {
  const out = new Set<string>();
  for (const h of layout.hierarchies) {
    if (h.kind === 'v2' && h.hybrid) continue;
    for (const c of h.controllers) out.add(c);
  }
  return out;
}

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

  function isRequired(h: Hierarchy): boolean {
    if (h.kind === 'v2') return !h.hybrid;
    return [...h.controllers].some((c) => V1_REQUIRED.includes(c));
  }

  async function write(file: string, value: string): Promise<void> {
    try {
      await ops.writeFile(file, value);
    } catch (err) {
      throw fsError(err, `write ${JSON.stringify(value)} to ${file}`);
    }
  }

  async function readTrimmed(file: string): Promise<string> {
    try {
      return (await ops.readFile(file)).trim();
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return '';
      throw fsError(err, `read ${file}`);
    }
  }

  /** runc's cpuset ensureParent: a new cpuset cgroup has no cpus/mems and cannot take tasks. */
  async function copyCpuset(dir: string): Promise<void> {
    for (const file of ['cpuset.cpus', 'cpuset.mems']) {
      if ((await readTrimmed(path.join(dir, file))) !== '') continue;
      const parent = await readTrimmed(path.join(path.dirname(dir), file));
      if (parent !== '') await write(path.join(dir, file), parent);
    }
  }

  /** Enables in `dir`'s subtree_control every controller it has, as runc does on the way down. */
  async function enableControllers(dir: string): Promise<void> {
    const available = await readControllers(ops, dir).catch((err: unknown) => {
      throw fsError(err, `read ${path.join(dir, 'cgroup.controllers')}`);
    });
    const enabled = new Set((await readTrimmed(path.join(dir, 'cgroup.subtree_control'))).split(/\s+/));
    for (const c of [...available].sort()) {
      if (enabled.has(c)) continue;
      try {
        await ops.writeFile(path.join(dir, 'cgroup.subtree_control'), `+${c}`);
      } catch (err) {
        if (V2_NEEDED.includes(c)) throw fsError(err, `enable controller ${c} in ${dir}`);
        log.debug('could not enable an optional cgroup controller', {
          dir,
          controller: c,
          err: describeError(err),
        });
      }
    }
  }

  async function mkdirs(h: Hierarchy, name: string): Promise<void> {
    let dir = h.dir;
    for (const part of name.split('/').filter((p) => p !== '')) {
      if (h.kind === 'v2' && !h.hybrid) await enableControllers(dir);
      dir = path.join(dir, part);
      try {
        await ops.mkdir(dir);
      } catch (err) {
        throw fsError(err, `create cgroup ${dir}`);
      }
      if (h.kind === 'v1' && h.controllers.has('cpuset')) await copyCpuset(dir);
    }
  }

  async function setV1(h: Hierarchy & { kind: 'v1' }, dir: string, r: ResourceConfig): Promise<void> {
    if (h.controllers.has('cpu')) {
      if (r.cpuShares !== undefined) await write(path.join(dir, 'cpu.shares'), String(r.cpuShares));
      const period = r.cpuPeriod;
      const quota = r.cpuQuota;
      const periodFile = path.join(dir, 'cpu.cfs_period_us');
      const quotaFile = path.join(dir, 'cpu.cfs_quota_us');
      if (period !== undefined && quota !== undefined) {
        // As runc: the kernel may refuse a period that does not fit the current quota; then the
        // quota goes first.
        try {
          await write(periodFile, String(period));
        } catch (err) {
          if (!(err instanceof KubeletError && err.code === 'InvalidArgument')) throw err;
          await write(quotaFile, String(quota));
          await write(periodFile, String(period));
        }
        await write(quotaFile, String(quota));
      } else if (period !== undefined) {
        await write(periodFile, String(period));
      } else if (quota !== undefined) {
        await write(quotaFile, String(quota));
      }
    }
    if (h.controllers.has('memory') && r.memory !== undefined) {
      await write(path.join(dir, 'memory.limit_in_bytes'), String(r.memory > 0 ? r.memory : -1));
    }
    if (h.controllers.has('pids') && r.pidsLimit !== undefined) {
      await write(path.join(dir, 'pids.max'), limitValue(r.pidsLimit));
    }
  }

  async function setV2(dir: string, r: ResourceConfig): Promise<void> {
    const controllers = await readControllers(ops, dir).catch((err: unknown) => {
      throw fsError(err, `read ${path.join(dir, 'cgroup.controllers')}`);
    });
    const need = (c: string) => {
      if (!controllers.has(c)) {
        throw new KubeletError(
          'FailedPrecondition',
          `configure cgroup ${dir}`,
          `controller ${c} is not enabled`,
        );
      }
    };
    if (r.cpuShares !== undefined) {
      need('cpu');
      await write(path.join(dir, 'cpu.weight'), String(cpuSharesToWeight(r.cpuShares)));
    }
    const cpuMax = cpuMaxValue(r.cpuQuota, r.cpuPeriod);
    if (cpuMax !== undefined) {
      need('cpu');
      await write(path.join(dir, 'cpu.max'), cpuMax);
    }
    if (r.memory !== undefined) {
      need('memory');
      await write(path.join(dir, 'memory.max'), limitValue(r.memory));
    }
    if (r.pidsLimit !== undefined) {
      need('pids');
      await write(path.join(dir, 'pids.max'), limitValue(r.pidsLimit));
    }
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
    const text = await readTrimmed(path.join(dir, 'cgroup.procs'));
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
    let delay = RMDIR_FIRST_DELAY_MS;
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
      await sleep(delay, signal);
      delay *= 2;
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
        await mkdirs(h, name);
        const dir = dirOf(h, name);
        if (h.kind === 'v1') await setV1(h, dir, resources);
        else if (!h.hybrid) await setV2(dir, resources);
      }
    },
    async children(name) {
      const out = new Set<string>();
      for (const h of layout.hierarchies) for (const c of await subdirs(dirOf(h, name))) out.add(c);
      return [...out].sort();
    },
    pids,
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

/** Upstream pidlimit: the node's task limit is the lower of kernel.pid_max and kernel.threads-max. */
export async function readMaxPids(procRoot = '/proc'): Promise<number | undefined> {
  const values: number[] = [];
  for (const f of ['sys/kernel/pid_max', 'sys/kernel/threads-max']) {
    const n = Number((await fsp.readFile(path.join(procRoot, f), 'utf8').catch(() => '')).trim());
    if (Number.isInteger(n) && n > 0) values.push(n);
  }
  return values.length > 0 ? Math.min(...values) : undefined;
}
