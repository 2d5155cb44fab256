/**
 * What the kubelet writes into pod, QoS and node-allocatable cgroups (upstream pkg/kubelet/cm
 * helpers_linux.go ResourceConfigForPod, MilliCPUToShares/Quota, qos_container_manager UpdateCgroups,
 * node_container_manager getCgroupConfig, HugePageLimits), and the cgroup v1 → v2 value
 * conversions runc applies. Pure functions: no file system.
 */
import { isRestartableInitContainer } from '../api/pod-util.ts';
import type { Container, Pod } from '../api/types.ts';
import { milliCPU, parseQuantity } from '../api/quantity.ts';
import { podQOSClass } from '../api/qos.ts';
import {
  CGROUP_MAX_SHARES,
  CGROUP_MIN_QUOTA_PERIOD_US,
  CGROUP_MIN_SHARES,
  CGROUP_SHARES_PER_CPU,
} from '../config/defaults.ts';
import { isHugePagesResource } from '../api/hugepages.ts';
import { UNBOUNDED_HUGETLB, hugetlbLimits, type HugetlbLimits } from './hugetlb.ts';

/**
 * The settings of one cgroup, in cgroup v1 units (v2 files get converted values). An absent field
 * is left as the kernel (or an earlier write) has it.
 */
export interface ResourceConfig {
  /** cpu.shares (v2: cpu.weight, converted). */
  cpuShares?: number;
  /** CFS quota in µs per period; -1 means no quota. */
  cpuQuota?: number;
  /** CFS period in µs. */
  cpuPeriod?: number;
  /** Memory limit in bytes. */
  memory?: number;
  /** Maximum number of tasks; -1 means no limit. */
  pidsLimit?: number;
  /** hugetlb limits for every page size of the cgroup (where the node has the controller). */
  hugetlb?: HugetlbLimits;
}

/**
 * cpu in millicores, memory in bytes; `undefined` when no container lists the resource. Huge
 * pages in bytes by resource name (`hugepages-2Mi`), only those listed.
 */
interface Amounts {
  cpu: number | undefined;
  memory: number | undefined;
  hugePages: Readonly<Record<string, number>>;
}

const NONE: Amounts = { cpu: undefined, memory: undefined, hugePages: {} };

/** Upstream MilliCPUToShares: 1024 shares per CPU, at least 2 (also for 0), at most 262144. */
export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU <= 0) return CGROUP_MIN_SHARES;
  const shares = Math.floor((milliCPU * CGROUP_SHARES_PER_CPU) / 1000);
  return Math.min(CGROUP_MAX_SHARES, Math.max(CGROUP_MIN_SHARES, shares));
}

/** Upstream MilliCPUToQuota: quota in µs for `periodUs`, at least 1000 µs; 0 for no limit. */
export function milliCPUToQuota(milliCPU: number, periodUs: number): number {
  if (milliCPU <= 0) return 0;
  return Math.max(CGROUP_MIN_QUOTA_PERIOD_US, Math.floor((milliCPU * periodUs) / 1000));
}

function read(list: Record<string, string> | undefined, field: string): Amounts {
  const hugePages: Record<string, number> = {};
  for (const [name, q] of Object.entries(list ?? {})) {
    if (isHugePagesResource(name)) hugePages[name] = Math.ceil(parseQuantity(q, `${field}.${name}`));
  }
  return {
    cpu: list?.cpu !== undefined ? milliCPU(list.cpu, `${field}.cpu`) : undefined,
    memory: list?.memory !== undefined ? Math.ceil(parseQuantity(list.memory, `${field}.memory`)) : undefined,
    hugePages,
  };
}

function combine(a: Amounts, b: Amounts, op: (x: number, y: number) => number): Amounts {
  const one = (x: number | undefined, y: number | undefined) =>
    x === undefined ? y : y === undefined ? x : op(x, y);
  const hugePages: Record<string, number> = { ...a.hugePages };
  for (const [name, v] of Object.entries(b.hugePages)) hugePages[name] = one(hugePages[name], v) ?? v;
  return { cpu: one(a.cpu, b.cpu), memory: one(a.memory, b.memory), hugePages };
}
const add = (a: Amounts, b: Amounts) => combine(a, b, (x, y) => x + y);
const max = (a: Amounts, b: Amounts) => combine(a, b, Math.max);

/**
 * Upstream resourcehelper PodRequests / PodLimits (without pod-level resources): the sum over app
 * containers and sidecars (init containers with restartPolicy Always), at least what any init
 * container needs while it runs (itself plus the sidecars started before it), plus spec.overhead
 * (for limits only on resources some container limits). `each` sees every container's amounts as
 * upstream's ContainerFn does (an init container's include the sidecars before it).
 */
export function podTotals(pod: Pod, kind: 'requests' | 'limits', each?: (a: Amounts) => void): Amounts {
  const field = (c: Container) => `spec.containers[${c.name}].resources.${kind}`;
  let total = NONE;
  for (const c of pod.spec.containers) {
    const r = read(c.resources?.[kind], field(c));
    each?.(r);
    total = add(total, r);
  }
  let sidecars = NONE;
  let init = NONE;
  for (const c of pod.spec.initContainers ?? []) {
    let r = read(c.resources?.[kind], field(c));
    if (isRestartableInitContainer(c)) {
      total = add(total, r);
      sidecars = add(sidecars, r);
      r = sidecars;
    } else {
      r = add(r, sidecars);
    }
    each?.(r);
    init = max(init, r);
  }
  total = max(total, init);
  const overhead = read(pod.spec.overhead, 'spec.overhead');
  if (kind === 'requests') return add(total, overhead);
  return {
    cpu: total.cpu === undefined ? undefined : total.cpu + (overhead.cpu ?? 0),
    memory: total.memory === undefined ? undefined : total.memory + (overhead.memory ?? 0),
    hugePages: total.hugePages,
  };
}

export interface PodResourceOptions {
  /** cpuCFSQuota: false leaves the pod's CFS quota unlimited (-1). */
  enforceCPULimits: boolean;
  /** cpuCFSQuotaPeriod in µs. */
  cpuPeriodUs: number;
}

/**
 * Upstream ResourceConfigForPod. Guaranteed: shares from the requests, quota and memory limit from
 * the limits. Burstable: shares; quota only when every container (init included) has a cpu limit,
 * memory limit only when every container has a memory limit. BestEffort: 2 shares. Every class:
 * hugetlb limits from the pod's huge-pages requests (HugePageLimits of PodRequests; requests equal
 * limits for huge pages), 0 for every page size it does not request.
 */
export function resourceConfigForPod(pod: Pod, opts: PodResourceOptions): ResourceConfig {
  let cpuLimitsDeclared = true;
  let memoryLimitsDeclared = true;
  const requests = podTotals(pod, 'requests');
  const limits = podTotals(pod, 'limits', (a) => {
    if (!a.cpu) cpuLimitsDeclared = false;
    if (!a.memory) memoryLimitsDeclared = false;
  });
  const cpuShares = milliCPUToShares(requests.cpu ?? 0);
  const cpuQuota = opts.enforceCPULimits ? milliCPUToQuota(limits.cpu ?? 0, opts.cpuPeriodUs) : -1;
  const memory = limits.memory ?? 0;
  const hugetlb = hugetlbLimits(requests.hugePages);
  switch (podQOSClass(pod)) {
    case 'Guaranteed':
      return { cpuShares, cpuQuota, cpuPeriod: opts.cpuPeriodUs, memory, hugetlb };
    case 'Burstable':
      return {
        cpuShares,
        ...(cpuLimitsDeclared ? { cpuQuota, cpuPeriod: opts.cpuPeriodUs } : {}),
        ...(memoryLimitsDeclared ? { memory } : {}),
        hugetlb,
      };
    case 'BestEffort':
      return { cpuShares: CGROUP_MIN_SHARES, hugetlb };
  }
}

/**
 * Upstream qosContainerManager setCPUCgroupConfig: the burstable tier gets the shares of the cpu
 * requested by all active Burstable pods, the best-effort tier always 2 shares; and
 * setHugePagesConfig: both tiers' hugetlb unbounded for every page size.
 */
export function qosTierConfigs(activePods: readonly Pod[]): {
  burstable: ResourceConfig;
  besteffort: ResourceConfig;
} {
  let burstableMilliCPU = 0;
  for (const pod of activePods) {
    if (podQOSClass(pod) !== 'Burstable') continue;
    burstableMilliCPU += podTotals(pod, 'requests').cpu ?? 0;
  }
  return {
    burstable: { cpuShares: milliCPUToShares(burstableMilliCPU), hugetlb: UNBOUNDED_HUGETLB },
    besteffort: { cpuShares: CGROUP_MIN_SHARES, hugetlb: UNBOUNDED_HUGETLB },
  };
}

/** Node resources for the node-allocatable cgroup: cpu in millicores, memory in bytes, pids. */
export interface NodeResources {
  milliCPU: number;
  memory: number;
  pids?: number;
  /** Huge pages in bytes by resource name (`hugepages-2Mi`); absent: hugetlb left alone. */
  hugePages?: Readonly<Record<string, number>>;
}

/**
 * Upstream getCgroupConfig for the node-allocatable (`kubepods`) cgroup: cpu shares, memory and
 * pids limits, and the node's huge pages per page size (0 for a size it has none of).
 */
export function nodeAllocatableConfig(r: NodeResources): ResourceConfig {
  return {
    cpuShares: milliCPUToShares(r.milliCPU),
    memory: r.memory,
    ...(r.pids !== undefined && r.pids > 0 ? { pidsLimit: r.pids } : {}),
    ...(r.hugePages !== undefined ? { hugetlb: hugetlbLimits(r.hugePages) } : {}),
  };
}

/**
 * cpu.shares → cgroup v2 cpu.weight, the conversion runc and the kubelet use: [2, 262144] maps
 * linearly onto [1, 10000].
 */
export function cpuSharesToWeight(shares: number): number {
  if (shares <= 0) return 0;
  if (shares >= CGROUP_MAX_SHARES) return 10_000;
  return 1 + Math.floor(((Math.max(shares, CGROUP_MIN_SHARES) - 2) * 9999) / 262_142);
}

/** The cgroup v2 `cpu.max` value for a quota (-1 = none) and period, as runc writes it. */
export function cpuMaxValue(quota: number | undefined, period: number | undefined): string | undefined {
  if (quota === undefined && period === undefined) return undefined;
  let value = quota !== undefined && quota > 0 ? String(quota) : 'max';
  if (period !== undefined && period > 0) value += ` ${period}`;
  return value;
}

/** A limit for v2 `memory.max` / `pids.max` (and v1 `pids.max`): a positive number, else "max". */
export function limitValue(n: number): string {
  return n > 0 ? String(n) : 'max';
}
