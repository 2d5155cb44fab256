/**
 * hugetlb limits of the pod, QoS and kubepods cgroups (upstream pkg/kubelet/cm helpers_linux.go
 * HugePageLimits, cgroup_manager_linux.go toResources / maybeSetHugetlb "for each page size
 * omitted, limit to 0", qos_container_manager_linux.go setHugePagesUnbounded,
 * node_container_manager_linux.go getCgroupConfig; v1helper HugePageUnitSizeFromByteSize) and the
 * files runc writes them to (libcontainer/cgroups/fs/hugetlb.go `hugetlb.2MB.limit_in_bytes`,
 * fs2/hugetlb.go `hugetlb.2MB.max`). systemd has no hugetlb unit property, so under both drivers
 * the values go straight to the files, as runc's systemd managers do after starting the unit.
 */
import path from 'node:path';
import { CGROUP_HUGE_PAGES_UNBOUNDED } from '../config/defaults.ts';
import { parseQuantity } from '../api/quantity.ts';
import { errnoCode } from '../util/errors.ts';
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

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];

/**
 * Upstream HugePageUnitSizeFromByteSize: 2097152 → "2MB", 1073741824 → "1GB"; undefined for a
 * size that is not a whole number of its largest unit.
 */
export function hugePageSizeName(bytes: number): string | undefined {
  if (!Number.isSafeInteger(bytes) || bytes <= 0) return undefined;
  let size = bytes;
  let idx = 0;
  while (size % 1024 === 0 && idx < UNITS.length - 1) {
    size /= 1024;
    idx++;
  }
  if (size > 1024 && idx < UNITS.length - 1) return undefined;
  return `${size}${UNITS[idx]}`;
}

const HUGE_PAGES_PREFIX = 'hugepages-';

/** Whether a resource name is a huge-pages one (`hugepages-2Mi`). */
export function isHugePagesResource(name: string): boolean {
  return name.startsWith(HUGE_PAGES_PREFIX);
}

/** `hugepages-2Mi` → "2MB" (upstream HugePageSizeFromResourceName, then the unit name). */
export function hugePageSizeOfResource(name: string): string | undefined {
  if (!isHugePagesResource(name)) return undefined;
  const quantity = name.slice(HUGE_PAGES_PREFIX.length);
  // Anything else is refused by upstream's validation of the resource name: nothing to limit.
  if (!/^[0-9]+(?:Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/.test(quantity)) return undefined;
  return hugePageSizeName(parseQuantity(quantity, name));
}

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
