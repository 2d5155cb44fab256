/**
 * Pod and container CPU, memory, network and task counts from CRI (upstream criStatsProvider): one
 * entry per live sandbox with at least one running container. Pod-level numbers come from
 * ListPodSandboxStats when the runtime answers it, else from the pod's cgroup, else (as upstream)
 * from the sum of its containers.
 */
import type {
  Container as CriContainer,
  ContainerStats as CriContainerStats,
  CpuUsage,
  MemoryUsage,
  PodSandbox,
  PodSandboxStats,
  UInt64Value,
} from '../runtime/cri/index.ts';
import type { CgroupReader } from './cgroups.ts';
import type { CpuRates } from './cpu-rates.ts';
import { DEFAULT_INTERFACE, cgroupMemoryStats, networkStats } from './host-stats.ts';
import { readNetDev, reportedInterfaces } from './procfs.ts';
import type {
  CPUStats,
  ContainerStats,
  InterfaceStats,
  MemoryStats,
  NetworkStats,
  PodStats,
} from './types.ts';

/** What one computation read from the runtime. */
export interface CriSnapshot {
  sandboxes: PodSandbox[];
  containers: CriContainer[];
  /** ListPodSandboxStats by sandbox ID; undefined when the runtime did not give them. */
  sandboxStats: Map<string, PodSandboxStats> | undefined;
  /** Per-container stats (from the sandbox stats, or ListContainerStats). */
  containerStats: CriContainerStats[];
}

export interface PodStatsContext {
  rates: CpuRates;
  /** ms; the computation's time, for samples without a time of their own. */
  seenAt: number;
  cgroups: CgroupReader | undefined;
  /** Pod cgroups by UID (empty without cgroups per QoS). */
  podCgroups: ReadonlyMap<string, string>;
  procRoot: string;
  /** Also network and task counts (the full summary, not only CPU and memory). */
  full: boolean;
}

/** One pod of the summary with what the storage part and the cadvisor endpoint need besides. */
export interface PodEntry {
  stats: PodStats<number>;
  sandboxId: string;
  /** The pod's cgroup name, when found. */
  cgroup: string | undefined;
  containers: { cri: CriContainer; criStats: CriContainerStats; stats: ContainerStats<number> }[];
}

const val = (v: UInt64Value | undefined): number | undefined => v?.value;
const nsToMs = (ns: number): number => ns / 1e6;

/** upstream removeTerminatedPods: per pod name, its ready sandboxes, else the newest one. */
export function liveSandboxes(sandboxes: PodSandbox[]): PodSandbox[] {
  const byPod = new Map<string, PodSandbox[]>();
  for (const s of [...sandboxes].sort((a, b) => a.createdAt - b.createdAt)) {
    const key = `${s.metadata.namespace}/${s.metadata.name}`;
    const list = byPod.get(key);
    if (list) list.push(s);
    else byPod.set(key, [s]);
  }
  const out: PodSandbox[] = [];
  for (const list of byPod.values()) {
    const ready = list.filter((s) => s.state === 'SANDBOX_READY');
    const last = list.at(-1);
    if (ready.length > 0) out.push(...ready);
    else if (last) out.push(last);
  }
  return out;
}

function cpuFrom(ctx: PodStatsContext, key: string, cpu: CpuUsage | undefined): CPUStats<number> {
  const usage = val(cpu?.usageCoreNanoSeconds);
  if (!cpu || usage === undefined) {
    // upstream: a container without CPU stats reports zero usage now.
    return { time: ctx.seenAt, usageCoreNanoSeconds: 0, usageNanoCores: 0 };
  }
  const timeNs = cpu.timestamp > 0 ? cpu.timestamp : ctx.seenAt * 1e6;
  const rate = ctx.rates.rate(key, timeNs, usage, ctx.seenAt);
  return {
    time: nsToMs(timeNs),
    usageCoreNanoSeconds: usage,
    ...(rate !== undefined ? { usageNanoCores: rate } : {}),
  };
}

function memoryFrom(ctx: PodStatsContext, m: MemoryUsage | undefined): MemoryStats<number> {
  if (!m) return { time: ctx.seenAt, workingSetBytes: 0 };
  const out: MemoryStats<number> = { time: m.timestamp > 0 ? nsToMs(m.timestamp) : ctx.seenAt };
  // The runtime sends 0 for "no limit": only a positive availability means anything.
  const available = val(m.availableBytes);
  if (available !== undefined && available > 0) out.availableBytes = available;
  const fields = ['usageBytes', 'workingSetBytes', 'rssBytes', 'pageFaults', 'majorPageFaults'] as const;
  for (const f of fields) {
    const v = val(m[f]);
    if (v !== undefined) out[f] = v;
  }
  out.workingSetBytes ??= 0;
  return out;
}

/** upstream addPodCPUMemoryStats without a pod cgroup: the containers' numbers added up. */
function summed(containers: ContainerStats<number>[]): {
  cpu?: CPUStats<number>;
  memory?: MemoryStats<number>;
} {
  let cpu: CPUStats<number> | undefined;
  let memory: MemoryStats<number> | undefined;
  for (const c of containers) {
    if (c.cpu) {
      cpu = {
        time: c.cpu.time,
        usageCoreNanoSeconds: (cpu?.usageCoreNanoSeconds ?? 0) + (c.cpu.usageCoreNanoSeconds ?? 0),
        usageNanoCores: (cpu?.usageNanoCores ?? 0) + (c.cpu.usageNanoCores ?? 0),
      };
    }
    if (c.memory) {
      const m: MemoryStats<number> = { time: c.memory.time };
      for (const f of [
        'availableBytes',
        'usageBytes',
        'workingSetBytes',
        'rssBytes',
        'pageFaults',
        'majorPageFaults',
      ] as const) {
        m[f] = (memory?.[f] ?? 0) + (c.memory[f] ?? 0);
      }
      memory = m;
    }
  }
  return { ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}) };
}

function criNetwork(ctx: PodStatsContext, s: PodSandboxStats): NetworkStats<number> | undefined {
  const n = s.linux?.network;
  if (!n) return undefined;
  const iface = (i: {
    name: string;
    rxBytes?: UInt64Value;
    rxErrors?: UInt64Value;
    txBytes?: UInt64Value;
    txErrors?: UInt64Value;
  }): InterfaceStats => ({
    name: i.name,
    ...(i.rxBytes ? { rxBytes: i.rxBytes.value } : {}),
    ...(i.rxErrors ? { rxErrors: i.rxErrors.value } : {}),
    ...(i.txBytes ? { txBytes: i.txBytes.value } : {}),
    ...(i.txErrors ? { txErrors: i.txErrors.value } : {}),
  });
  const list = (n.interfaces ?? []).map(iface);
  // containerd 1.6 fills only the default interface; cadvisor would list it as well.
  if (n.defaultInterface && !list.some((i) => i.name === n.defaultInterface?.name)) {
    list.unshift(iface(n.defaultInterface));
  }
  if (list.length === 0) return undefined;
  const time = n.timestamp > 0 ? nsToMs(n.timestamp) : ctx.seenAt;
  const def = n.defaultInterface ? iface(n.defaultInterface) : list.find((i) => i.name === DEFAULT_INTERFACE);
  return { time, ...(def ?? { name: '' }), interfaces: list };
}

/** The sandbox's network namespace as its pause process sees it (/proc/<pid>/net/dev). */
async function cgroupNetwork(
  ctx: PodStatsContext,
  podCgroup: string,
  sandboxId: string,
): Promise<NetworkStats<number> | undefined> {
  const pid = await ctx.cgroups?.anyPid(`${podCgroup}/${sandboxId}`);
  if (pid === undefined) return undefined;
  const ifaces = await readNetDev(ctx.procRoot, pid).catch(() => undefined);
  return ifaces ? networkStats(ctx.seenAt, reportedInterfaces(ifaces)) : undefined;
}

/** Pod entries with CPU and memory (and, when `ctx.full`, network and task counts). */
export async function buildPodEntries(snap: CriSnapshot, ctx: PodStatsContext): Promise<PodEntry[]> {
  const sandboxes = new Map(liveSandboxes(snap.sandboxes).map((s) => [s.id, s]));
  const running = new Map(
    snap.containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => [c.id, c]),
  );
  const entries = new Map<string, PodEntry>();
  for (const cs of snap.containerStats) {
    const cri = running.get(cs.attributes?.id ?? '');
    const sandbox = cri && sandboxes.get(cri.podSandboxId);
    if (!cri || !sandbox) continue;
    let entry = entries.get(sandbox.id);
    if (!entry) {
      const { name, namespace, uid } = sandbox.metadata;
      entry = {
        stats: { podRef: { name, namespace, uid }, startTime: nsToMs(sandbox.createdAt), containers: [] },
        sandboxId: sandbox.id,
        cgroup: ctx.podCgroups.get(uid),
        containers: [],
      };
      entries.set(sandbox.id, entry);
    }
    const stats: ContainerStats<number> = {
      name: cs.attributes?.metadata?.name ?? cri.metadata.name,
      startTime: nsToMs(cri.createdAt),
      cpu: cpuFrom(ctx, cri.id, cs.cpu),
      memory: memoryFrom(ctx, cs.memory),
    };
    entry.containers.push({ cri, criStats: cs, stats });
    entry.stats.containers.push(stats);
  }

  await Promise.all(
    [...entries.values()].map(async (e) => {
      const uid = e.stats.podRef.uid;
      const sb = snap.sandboxStats?.get(e.sandboxId);
      const cg =
        e.cgroup !== undefined ? await ctx.cgroups?.read(e.cgroup).catch(() => undefined) : undefined;
      if (sb?.linux?.cpu || sb?.linux?.memory) {
        if (sb.linux.cpu) e.stats.cpu = cpuFrom(ctx, `pod:${uid}`, sb.linux.cpu);
        if (sb.linux.memory) e.stats.memory = memoryFrom(ctx, sb.linux.memory);
      } else if (cg && cg.cpuUsageNs !== undefined) {
        e.stats.cpu = cpuFrom(ctx, `pod:${uid}`, {
          timestamp: cg.time * 1e6,
          usageCoreNanoSeconds: { value: cg.cpuUsageNs },
        });
        const memory = cgroupMemoryStats(cg);
        if (memory) e.stats.memory = memory;
      } else {
        Object.assign(e.stats, summed(e.stats.containers));
      }
      if (!ctx.full) return;
      const network = sb ? criNetwork(ctx, sb) : undefined;
      const net =
        network ?? (e.cgroup !== undefined ? await cgroupNetwork(ctx, e.cgroup, e.sandboxId) : undefined);
      if (net) e.stats.network = net;
      const tasks = val(sb?.linux?.process?.processCount) ?? cg?.tasks;
      if (tasks !== undefined) e.stats.process_stats = { process_count: tasks };
    }),
  );
  return [...entries.values()];
}
