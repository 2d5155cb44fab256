/**
 * Which pod goes first (upstream helpers.go rank functions) and what its eviction says
 * (evictionMessage). Memory: pods using more than they request, then lower priority, then usage
 * above request. Disk: the same over the filesystems the signal measures. PIDs: lower priority,
 * then more processes. A pod without stats sorts first, as upstream.
 */
import type { KubeletPod, Pod } from '../api/types.ts';
import { podPriority, podResourceTotal } from '../api/pod-resources.ts';
import { parseQuantity } from '../api/quantity.ts';
import { canonicalQuantity, formatQuantity } from '../api/quantity-format.ts';
import type { ContainerStats, FsStats, PodStats } from '../stats/index.ts';
import type { PodStatsLookup } from './observations.ts';
import type { ReclaimResource, Signal } from './signals.ts';

/** The filesystem usages a disk signal counts (upstream fsStatsType). */
export type FsStatsType = 'root' | 'logs' | 'localVolumeSource';

type DiskResource = 'ephemeral-storage' | 'inodes';

const used = (fs: FsStats<number> | undefined, r: DiskResource): number =>
  (r === 'inodes' ? fs?.inodesUsed : fs?.usedBytes) ?? 0;

/** upstream localVolumeNames: the volumes whose usage counts against the node filesystem. */
function localVolumeNames(pod: Pod): Set<string> {
  const out = new Set<string>();
  for (const v of pod.spec.volumes ?? []) {
    if (v.hostPath || (v.emptyDir && v.emptyDir.medium !== 'Memory') || v['configMap'] || v['gitRepo']) {
      out.add(v.name);
    }
  }
  return out;
}

/** upstream podDiskUsage: the pod's bytes (or inodes) on the measured filesystems. */
export function podDiskUsage(
  stats: PodStats<number>,
  pod: Pod,
  measure: readonly FsStatsType[],
  resource: DiskResource,
): number {
  let total = 0;
  for (const c of stats.containers) {
    if (measure.includes('root')) total += used(c.rootfs, resource);
    if (measure.includes('logs')) total += used(c.logs, resource);
  }
  if (measure.includes('localVolumeSource')) {
    const names = localVolumeNames(pod);
    for (const v of stats.volume ?? []) if (names.has(v.name)) total += used(v, resource);
  }
  return total;
}

const memoryUsage = (s: PodStats<number>): number => s.memory?.workingSetBytes ?? 0;

type Cmp = (a: KubeletPod, b: KubeletPod) => number;

function cmpBool(a: boolean, b: boolean): number {
  return a === b ? 0 : a ? -1 : 1;
}

/** Pods without stats first (upstream: they cannot be judged, so they go). */
function withStats(
  lookup: PodStatsLookup,
  f: (a: PodStats<number>, pa: KubeletPod, b: PodStats<number>, pb: KubeletPod) => number,
): Cmp {
  return (a, b) => {
    const sa = lookup(a.metadata.uid);
    const sb = lookup(b.metadata.uid);
    if (!sa || !sb) return cmpBool(!sa, !sb);
    return f(sa, a, sb, b);
  };
}

const priority: Cmp = (a, b) => podPriority(a) - podPriority(b);

function orderedBy(...cmps: Cmp[]): (pods: KubeletPod[]) => KubeletPod[] {
  return (pods) =>
    [...pods].sort((a, b) => {
      for (const c of cmps) {
        const r = c(a, b);
        if (r !== 0) return r;
      }
      return 0;
    });
}

export function rankMemoryPressure(lookup: PodStatsLookup): (pods: KubeletPod[]) => KubeletPod[] {
  const request = (p: Pod): number => podResourceTotal(p, 'requests', 'memory');
  const exceeds = withStats(lookup, (sa, a, sb, b) =>
    cmpBool(memoryUsage(sa) > request(a), memoryUsage(sb) > request(b)),
  );
  const overRequest = withStats(
    lookup,
    (sa, a, sb, b) => memoryUsage(sb) - request(b) - (memoryUsage(sa) - request(a)),
  );
  return orderedBy(exceeds, priority, overRequest);
}

export function rankPIDPressure(lookup: PodStatsLookup): (pods: KubeletPod[]) => KubeletPod[] {
  const procs = (s: PodStats<number>): number => s.process_stats?.process_count ?? 0;
  return orderedBy(
    priority,
    withStats(lookup, (sa, _a, sb) => procs(sb) - procs(sa)),
  );
}

export function rankDiskPressure(
  lookup: PodStatsLookup,
  measure: readonly FsStatsType[],
  resource: DiskResource,
): (pods: KubeletPod[]) => KubeletPod[] {
  const request = (p: Pod): number => podResourceTotal(p, 'requests', resource);
  const exceeds = withStats(lookup, (sa, a, sb, b) =>
    cmpBool(
      podDiskUsage(sa, a, measure, resource) > request(a),
      podDiskUsage(sb, b, measure, resource) > request(b),
    ),
  );
  // upstream subtracts the ephemeral-storage request for inodes too.
  const ephemeral = (p: Pod): number => podResourceTotal(p, 'requests', 'ephemeral-storage');
  const overRequest = withStats(
    lookup,
    (sa, a, sb, b) =>
      podDiskUsage(sb, b, measure, resource) -
      ephemeral(b) -
      (podDiskUsage(sa, a, measure, resource) - ephemeral(a)),
  );
  return orderedBy(exceeds, priority, overRequest);
}

/** upstream buildSignalToRankFunc. */
export function rankerFor(
  signal: Signal,
  lookup: PodStatsLookup,
  dedicatedImageFs: boolean,
): (pods: KubeletPod[]) => KubeletPod[] {
  const all: FsStatsType[] = ['root', 'logs', 'localVolumeSource'];
  switch (signal) {
    case 'memory.available':
    case 'allocatableMemory.available':
      return rankMemoryPressure(lookup);
    case 'pid.available':
      return rankPIDPressure(lookup);
    case 'nodefs.available':
      return rankDiskPressure(
        lookup,
        dedicatedImageFs ? ['logs', 'localVolumeSource'] : all,
        'ephemeral-storage',
      );
    case 'nodefs.inodesFree':
      return rankDiskPressure(lookup, dedicatedImageFs ? ['logs', 'localVolumeSource'] : all, 'inodes');
    case 'imagefs.available':
      return rankDiskPressure(lookup, dedicatedImageFs ? ['root'] : all, 'ephemeral-storage');
    case 'imagefs.inodesFree':
      return rankDiskPressure(lookup, dedicatedImageFs ? ['root'] : all, 'inodes');
  }
}

/** resource.Quantity's canonical string for bytes (BinarySI): `1Gi`, `1536Ki`, `1k`. */
export function formatBytes(n: number): string {
  return formatQuantity(n, 'BinarySI');
}

function containerUsage(c: ContainerStats<number>, resource: ReclaimResource): number | undefined {
  if (resource === 'memory') return c.memory?.workingSetBytes;
  if (resource === 'ephemeral-storage') {
    const root = c.rootfs?.usedBytes;
    const logs = c.logs?.usedBytes;
    return root !== undefined && logs !== undefined ? root + logs : undefined;
  }
  return undefined;
}

/**
 * upstream evictionMessage: "The node was low on resource: R. " and, for each container using
 * more than it requests, "Container C was using U, which exceeds its request of Q. ".
 */
export function evictionMessage(
  resource: ReclaimResource,
  pod: KubeletPod,
  lookup: PodStatsLookup,
): { message: string; offending: { container: string; usage: string }[] } {
  let message = `The node was low on resource: ${resource}. `;
  const offending: { container: string; usage: string }[] = [];
  const stats = lookup(pod.metadata.uid);
  if (!stats) return { message, offending };
  for (const cs of stats.containers) {
    const c = pod.spec.containers.find((x) => x.name === cs.name);
    if (!c) continue;
    const usage = containerUsage(cs, resource);
    if (usage === undefined) continue;
    const reqText = c.resources?.requests?.[resource];
    const request =
      reqText === undefined ? 0 : parseQuantity(reqText, `${c.name}.resources.requests.${resource}`);
    if (usage > request) {
      message += `Container ${c.name} was using ${formatBytes(usage)}, which exceeds its request of ${reqText === undefined ? '0' : canonicalQuantity(reqText, c.name)}. `;
      offending.push({ container: c.name, usage: formatBytes(usage) });
    }
  }
  return { message, offending };
}
