/**
 * The node part of the summary: CPU and memory of the root cgroup (or /proc where cgroups cannot
 * tell), host network, the root directory's filesystem, task limits, and the system containers
 * (kubelet, runtime, pods) read from their cgroups.
 */
import type { CgroupReader, CgroupSample } from './cgroups.ts';
import type { CpuRates } from './cpu-rates.ts';
import { fsCapacity } from './fs-usage.ts';
import {
  readMeminfo,
  readNetDev,
  readPidMax,
  readProcCgroup,
  readProcStat,
  readTaskCount,
  readVmstat,
  reportedInterfaces,
} from './procfs.ts';
import type {
  CPUStats,
  ContainerStats,
  FsStats,
  InterfaceStats,
  MemoryStats,
  NetworkStats,
  RlimitStats,
  SystemContainerName,
} from './types.ts';

/** cadvisor's default interface name: its counters are the inline ones of NetworkStats. */
export const DEFAULT_INTERFACE = 'eth0';

export interface HostContext {
  procRoot: string;
  cgroups: CgroupReader | undefined;
  rates: CpuRates;
  /** ms; the time of every sample read in this computation. */
  seenAt: number;
}

function cpuStats(ctx: HostContext, key: string, usageNs: number): CPUStats<number> {
  const usageNanoCores = ctx.rates.rate(key, ctx.seenAt * 1e6, usageNs, ctx.seenAt);
  return {
    time: ctx.seenAt,
    usageCoreNanoSeconds: Math.round(usageNs),
    ...(usageNanoCores !== undefined ? { usageNanoCores } : {}),
  };
}

/** The summary's memory block from a cgroup sample; `capacity` stands in for a missing limit. */
export function cgroupMemoryStats(s: CgroupSample, capacity?: number): MemoryStats<number> | undefined {
  const m = s.memory;
  if (!m) return undefined;
  const limit = m.limitBytes ?? capacity;
  return {
    time: s.time,
    ...(limit !== undefined ? { availableBytes: Math.max(0, limit - m.workingSetBytes) } : {}),
    usageBytes: m.usageBytes,
    workingSetBytes: m.workingSetBytes,
    ...(m.rssBytes !== undefined ? { rssBytes: m.rssBytes } : {}),
    ...(m.pageFaults !== undefined ? { pageFaults: m.pageFaults } : {}),
    ...(m.majorPageFaults !== undefined ? { majorPageFaults: m.majorPageFaults } : {}),
  };
}

export interface NodeCpuMemory {
  startTime: number;
  cpu: CPUStats<number> | undefined;
  memory: MemoryStats<number> | undefined;
}

/**
 * Node CPU and memory as cadvisor reports the root cgroup: its cumulative CPU time and memory
 * usage, with the machine's memory as the limit. Without a root cgroup value, /proc/stat and
 * /proc/meminfo give the same quantities.
 */
export async function nodeCpuMemory(ctx: HostContext): Promise<NodeCpuMemory> {
  const [root, stat, meminfo] = await Promise.all([
    ctx.cgroups?.read('/'),
    readProcStat(ctx.procRoot).catch(() => undefined),
    readMeminfo(ctx.procRoot).catch(() => undefined),
  ]);
  const total = meminfo?.get('MemTotal');
  const cpuNs = root?.cpuUsageNs ?? stat?.cpuBusyNs;
  let memory = root ? cgroupMemoryStats(root, total) : undefined;
  if (!memory && meminfo && total !== undefined) {
    const vm = await readVmstat(ctx.procRoot).catch(() => undefined);
    const usage = total - (meminfo.get('MemFree') ?? 0);
    const inactiveFile = meminfo.get('Inactive(file)') ?? 0;
    const workingSet = Math.max(0, usage - inactiveFile);
    memory = {
      time: ctx.seenAt,
      availableBytes: total - workingSet,
      usageBytes: usage,
      workingSetBytes: workingSet,
      ...(meminfo.has('AnonPages') ? { rssBytes: meminfo.get('AnonPages') } : {}),
      ...(vm?.has('pgfault') ? { pageFaults: vm.get('pgfault') } : {}),
      ...(vm?.has('pgmajfault') ? { majorPageFaults: vm.get('pgmajfault') } : {}),
    };
  }
  return {
    startTime: stat?.bootTimeMs ?? ctx.seenAt,
    cpu: cpuNs !== undefined ? cpuStats(ctx, 'node', cpuNs) : undefined,
    memory,
  };
}

/** NetworkStats from a list of interfaces: the default one inline, all of them listed. */
export function networkStats(time: number, interfaces: InterfaceStats[]): NetworkStats<number> {
  const def = interfaces.find((i) => i.name === DEFAULT_INTERFACE);
  return { time, ...(def ?? { name: '' }), ...(interfaces.length > 0 ? { interfaces } : {}) };
}

export async function nodeNetwork(ctx: HostContext): Promise<NetworkStats<number>> {
  return networkStats(ctx.seenAt, reportedInterfaces(await readNetDev(ctx.procRoot)));
}

export async function fsStats(dir: string, time: number): Promise<FsStats<number>> {
  const c = await fsCapacity(dir);
  return {
    time,
    availableBytes: c.availableBytes,
    capacityBytes: c.capacityBytes,
    usedBytes: c.usedBytes,
    inodesFree: c.inodesFree,
    inodes: c.inodes,
    inodesUsed: c.inodesUsed,
  };
}

export async function rlimitStats(ctx: HostContext): Promise<RlimitStats<number>> {
  const [maxpid, curproc] = await Promise.all([
    readPidMax(ctx.procRoot).catch(() => undefined),
    readTaskCount(ctx.procRoot).catch(() => undefined),
  ]);
  return {
    time: ctx.seenAt,
    ...(maxpid !== undefined ? { maxpid } : {}),
    ...(curproc !== undefined ? { curproc } : {}),
  };
}

/**
 * The kubelet's own cgroup (upstream: the cgroup of the kubelet process when --kubelet-cgroups is
 * unset). On v1 the cpu and memory hierarchies must agree, as upstream requires; else none.
 */
export async function ownCgroup(procRoot: string, cgroups: CgroupReader): Promise<string | undefined> {
  const paths = await readProcCgroup(procRoot).catch(() => undefined);
  if (!paths) return undefined;
  if (cgroups.version === 2) return paths.get('');
  const cpu = paths.get('cpuacct') ?? paths.get('cpu');
  return cpu !== undefined && cpu === paths.get('memory') ? cpu : undefined;
}

export interface SystemContainerSpec {
  name: SystemContainerName;
  cgroup: string;
  /** Overrides the cgroup's own creation time (the kubelet reports when it started). */
  startTime?: number;
}

/** System containers whose cgroups exist; one that cannot be read is left out. */
export async function systemContainers(
  ctx: HostContext,
  specs: SystemContainerSpec[],
): Promise<ContainerStats<number>[]> {
  const cgroups = ctx.cgroups;
  if (!cgroups) return [];
  const out = await Promise.all(
    specs.map(async (spec): Promise<ContainerStats<number> | undefined> => {
      const s = await cgroups.read(spec.cgroup).catch(() => undefined);
      if (!s) return undefined;
      const memory = cgroupMemoryStats(s);
      return {
        name: spec.name,
        startTime: spec.startTime ?? s.startTime ?? ctx.seenAt,
        ...(s.cpuUsageNs !== undefined ? { cpu: cpuStats(ctx, `sys:${spec.name}`, s.cpuUsageNs) } : {}),
        ...(memory ? { memory } : {}),
      };
    }),
  );
  return out.filter((c) => c !== undefined);
}
