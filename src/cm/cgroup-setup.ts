/**
 * Creating a cgroup's directories and writing its resource values in one hierarchy, as runc's
 * cgroupfs manager does: cpuset values copied down each new v1 level, controllers enabled through
 * `cgroup.subtree_control` on the way down a v2 tree, then `cpu.shares`, CFS period and quota,
 * `memory.limit_in_bytes`, `pids.max` on v1, or `cpu.weight`, `cpu.max`, `memory.max`, `pids.max`
 * on v2; and the hugetlb limits (hugetlb.ts) where the hugetlb controller is there, nothing and no
 * error where it is not (upstream maybeSetHugetlb: an optional controller).
 */
import path from 'node:path';
import { KubeletError, describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { Hierarchy } from './cgroup-layout.ts';
import {
  fsError,
  readCgroupFile,
  readControllers,
  writeCgroupFile,
  type CgroupFsOps,
} from './cgroupfs-ops.ts';
import { cpuMaxValue, cpuSharesToWeight, limitValue, type ResourceConfig } from './resources.ts';
import { writeHugetlb } from './hugetlb.ts';

/** Controllers whose values we write; on v2 they must be enabled down the tree. */
const V2_NEEDED = ['cpu', 'memory', 'pids'];

/** runc's cpuset ensureParent: a new cpuset cgroup has no cpus/mems and cannot take tasks. */
async function copyCpuset(ops: CgroupFsOps, dir: string): Promise<void> {
  for (const file of ['cpuset.cpus', 'cpuset.mems']) {
    if ((await readCgroupFile(ops, path.join(dir, file))) !== '') continue;
    const parent = await readCgroupFile(ops, path.join(path.dirname(dir), file));
    if (parent !== '') await writeCgroupFile(ops, path.join(dir, file), parent);
  }
}

/** Enables in `dir`'s subtree_control every controller it has, as runc does on the way down. */
async function enableControllers(ops: CgroupFsOps, log: Logger, dir: string): Promise<void> {
  const available = await readControllers(ops, dir).catch((err: unknown) => {
    throw fsError(err, `read ${path.join(dir, 'cgroup.controllers')}`);
  });
  const enabled = new Set((await readCgroupFile(ops, path.join(dir, 'cgroup.subtree_control'))).split(/\s+/));
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

/** Creates whatever is missing of cgroup `name` (and its ancestors) in `h`. */
export async function createCgroupDirs(
  ops: CgroupFsOps,
  log: Logger,
  h: Hierarchy,
  name: string,
): Promise<void> {
  let dir = h.dir;
  for (const part of name.split('/').filter((p) => p !== '')) {
    if (h.kind === 'v2' && !h.hybrid) await enableControllers(ops, log, dir);
    dir = path.join(dir, part);
    try {
      await ops.mkdir(dir);
    } catch (err) {
      throw fsError(err, `create cgroup ${dir}`);
    }
    if (h.kind === 'v1' && h.controllers.has('cpuset')) await copyCpuset(ops, dir);
  }
}

async function setV1(
  ops: CgroupFsOps,
  h: Hierarchy & { kind: 'v1' },
  dir: string,
  r: ResourceConfig,
): Promise<void> {
  if (h.controllers.has('cpu')) {
    if (r.cpuShares !== undefined)
      await writeCgroupFile(ops, path.join(dir, 'cpu.shares'), String(r.cpuShares));
    const period = r.cpuPeriod;
    const quota = r.cpuQuota;
    const periodFile = path.join(dir, 'cpu.cfs_period_us');
    const quotaFile = path.join(dir, 'cpu.cfs_quota_us');
    if (period !== undefined && quota !== undefined) {
      // As runc: the kernel may refuse a period that does not fit the current quota; then the
      // quota goes first.
      try {
        await writeCgroupFile(ops, periodFile, String(period));
      } catch (err) {
        if (!(err instanceof KubeletError && err.code === 'InvalidArgument')) throw err;
        await writeCgroupFile(ops, quotaFile, String(quota));
        await writeCgroupFile(ops, periodFile, String(period));
      }
      await writeCgroupFile(ops, quotaFile, String(quota));
    } else if (period !== undefined) {
      await writeCgroupFile(ops, periodFile, String(period));
    } else if (quota !== undefined) {
      await writeCgroupFile(ops, quotaFile, String(quota));
    }
  }
  if (h.controllers.has('memory') && r.memory !== undefined) {
    await writeCgroupFile(ops, path.join(dir, 'memory.limit_in_bytes'), String(r.memory > 0 ? r.memory : -1));
  }
  if (h.controllers.has('pids') && r.pidsLimit !== undefined) {
    await writeCgroupFile(ops, path.join(dir, 'pids.max'), limitValue(r.pidsLimit));
  }
  if (h.controllers.has('hugetlb') && r.hugetlb !== undefined) await writeHugetlb(ops, dir, 1, r.hugetlb);
}

async function setV2(ops: CgroupFsOps, dir: string, r: ResourceConfig): Promise<void> {
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
    await writeCgroupFile(ops, path.join(dir, 'cpu.weight'), String(cpuSharesToWeight(r.cpuShares)));
  }
  const cpuMax = cpuMaxValue(r.cpuQuota, r.cpuPeriod);
  if (cpuMax !== undefined) {
    need('cpu');
    await writeCgroupFile(ops, path.join(dir, 'cpu.max'), cpuMax);
  }
  if (r.memory !== undefined) {
    need('memory');
    await writeCgroupFile(ops, path.join(dir, 'memory.max'), limitValue(r.memory));
  }
  if (r.pidsLimit !== undefined) {
    need('pids');
    await writeCgroupFile(ops, path.join(dir, 'pids.max'), limitValue(r.pidsLimit));
  }
  if (r.hugetlb !== undefined && controllers.has('hugetlb')) await writeHugetlb(ops, dir, 2, r.hugetlb);
}

/**
 * Writes `r` to cgroup `name` in `h` (which must exist); the hybrid cgroup2 mount takes no values.
 */
export async function writeResources(
  ops: CgroupFsOps,
  h: Hierarchy,
  name: string,
  r: ResourceConfig,
): Promise<void> {
  const dir = path.join(h.dir, name);
  if (h.kind === 'v1') await setV1(ops, h, dir, r);
  else if (!h.hybrid) await setV2(ops, dir, r);
}
