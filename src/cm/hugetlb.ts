/**
 * hugetlb limits of the pod, QoS and kubepods cgroups (upstream pkg/kubelet/cm helpers_linux.go
 * HugePageLimits, cgroup_manager_linux.go toResources / maybeSetHugetlb "for each page size
 * omitted, limit to 0", qos_container_manager_linux.go setHugePagesUnbounded,
 * node_container_manager_linux.go getCgroupConfig; page size names from api/hugepages.ts) and the
 * files runc writes them to (libcontainer/cgroups/fs/hugetlb.go `hugetlb.2MB.limit_in_bytes`,
 * fs2/hugetlb.go `hugetlb.2MB.max`). systemd has no hugetlb unit property, so under both drivers
 * the values go straight to the files, as runc's systemd managers do after starting the unit.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { CGROUP_HUGE_PAGES_UNBOUNDED } from '../config/defaults.ts';
import { hugePageSizeName, hugePageSizeOfResource } from '../api/hugepages.ts';
import { describeError, errnoCode } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { fsError, writeCgroupFile, type CgroupFsOps } from './cgroupfs-ops.ts';

/**
 * The hugetlb limits of one cgroup. Every page size the cgroup has gets a value: the one `sizes`
 * names, else `others` (upstream sets 0 for every page size a pod does not request, and
 * 1 << 62 bytes for every size on the QoS tiers).
 */
export interface HugetlbLimits {
  /** Limit in bytes per page size, named as the kernel names its files ("2MB", "1GB"). */
  sizes: Readonly<Record<string, number>>;
  /** The limit in bytes of every other page size of the cgroup. */
  others: number;
}

/** The QoS tiers' limits: effectively unbounded for every page size (setHugePagesUnbounded). */
export const UNBOUNDED_HUGETLB: HugetlbLimits = { sizes: {}, others: CGROUP_HUGE_PAGES_UNBOUNDED };

/**
 * Upstream HugePageLimits: the huge-pages amounts (bytes) of a resource list by page size, sizes
 * named twice (`hugepages-2Mi` and `hugepages-2048Ki`) added; every other page size gets `others`.
 */
export function hugetlbLimits(amounts: Readonly<Record<string, number>>, others = 0): HugetlbLimits {
  const sizes: Record<string, number> = {};
  for (const [name, bytes] of Object.entries(amounts)) {
    const size = hugePageSizeOfResource(name);
    if (size === undefined) continue;
    sizes[size] = (sizes[size] ?? 0) + bytes;
  }
  return { sizes, others };
}

/**
 * The page sizes the kernel supports, named as in the hugetlb files (runc's HugePageSizes, read
 * once at start upstream): one per `/sys/kernel/mm/hugepages/hugepages-<n>kB`, sorted; none when
 * the directory cannot be read (a kernel without huge pages).
 */
export function machineHugePageSizes(log?: Logger, dir = '/sys/kernel/mm/hugepages'): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (err) {
    log?.debug('no huge page sizes: containers get no hugetlb limits', { dir, err: describeError(err) });
    return [];
  }
  const out: string[] = [];
  for (const e of entries) {
    const m = /^hugepages-(\d+)kB$/.exec(e);
    const size = m?.[1] === undefined ? undefined : hugePageSizeName(Number(m[1]) * 1024);
    if (size !== undefined) out.push(size);
  }
  return out.sort();
}

/** The page sizes a cgroup directory has a limit file for, e.g. ["1GB", "2MB"]. */
async function pageSizesOf(ops: CgroupFsOps, dir: string, suffix: string): Promise<string[]> {
  let entries: { name: string }[];
  try {
    entries = await ops.readdir(dir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return [];
    throw fsError(err, `list ${dir}`);
  }
  const re = new RegExp(`^hugetlb\\.(\\d+[KMGTP]?B)\\.${suffix.replaceAll('.', '\\.')}$`);
  const out: string[] = [];
  for (const e of entries) {
    const m = re.exec(e.name);
    if (m?.[1] !== undefined) out.push(m[1]);
  }
  return out.sort();
}

/**
 * Writes `limits` to the hugetlb files of the cgroup directory `dir` (which must exist, with the
 * hugetlb controller): v1 `hugetlb.<size>.limit_in_bytes`, v2 `hugetlb.<size>.max`. The page
 * sizes are the ones the kernel made files for; a requested size the cgroup lacks has no pages
 * on the node (its capacity is 0, so admission refuses the pod) and is not written.
 */
export async function writeHugetlb(
  ops: CgroupFsOps,
  dir: string,
  version: 1 | 2,
  limits: HugetlbLimits,
): Promise<void> {
  const suffix = version === 1 ? 'limit_in_bytes' : 'max';
  for (const size of await pageSizesOf(ops, dir, suffix)) {
    const bytes = limits.sizes[size] ?? limits.others;
    // BigInt: 1 << 62 has no exact decimal form as a JS number string.
    const value = BigInt(Math.max(0, Math.trunc(bytes))).toString();
    await writeCgroupFile(ops, path.join(dir, `hugetlb.${size}.${suffix}`), value);
  }
}
