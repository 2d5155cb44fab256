/**
 * The kubelet Summary API (`/stats/summary`, stats/v1alpha1 as of Kubernetes 1.20) as plain JSON.
 * Every type is generic over how times are written: `string` (RFC 3339, whole seconds, as
 * metav1.Time marshals) on the wire, which is the default; `number` (ms since the epoch) inside the
 * provider, where the Prometheus endpoints need the precise sample times. Counters and byte counts
 * are numbers (uint64 upstream; a double keeps them exact up to 2^53).
 */

export interface CPUStats<T = string> {
  time: T;
  /** Average usage since the previous sample, in billionths of a core. */
  usageNanoCores?: number;
  /** Cumulative CPU time, in core-nanoseconds. */
  usageCoreNanoSeconds?: number;
}

export interface MemoryStats<T = string> {
  time: T;
  /** limit − workingSet; only where a limit is known. */
  availableBytes?: number;
  usageBytes?: number;
  /** usage − inactive file pages: what eviction and the metrics API look at. */
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface InterfaceStats {
  name: string;
  rxBytes?: number;
  rxErrors?: number;
  txBytes?: number;
  txErrors?: number;
}

/** The default interface (`eth0`) inline, every interface in `interfaces`. */
export interface NetworkStats<T = string> extends InterfaceStats {
  time: T;
  interfaces?: InterfaceStats[];
}

export interface FsStats<T = string> {
  time: T;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

export interface RuntimeStats<T = string> {
  imageFs?: FsStats<T>;
}

export interface RlimitStats<T = string> {
  time: T;
  maxpid?: number;
  curproc?: number;
}

export interface ContainerStats<T = string> {
  name: string;
  startTime: T;
  cpu?: CPUStats<T>;
  memory?: MemoryStats<T>;
  rootfs?: FsStats<T>;
  logs?: FsStats<T>;
}

export interface PodReference {
  name: string;
  namespace: string;
  uid: string;
}

export interface PVCReference {
  name: string;
  namespace: string;
}

export interface VolumeStats<T = string> extends FsStats<T> {
  name: string;
  pvcRef?: PVCReference;
}

export interface ProcessStats {
  process_count?: number;
}

export interface PodStats<T = string> {
  podRef: PodReference;
  startTime: T;
  containers: ContainerStats<T>[];
  cpu?: CPUStats<T>;
  memory?: MemoryStats<T>;
  network?: NetworkStats<T>;
  volume?: VolumeStats<T>[];
  'ephemeral-storage'?: FsStats<T>;
  process_stats?: ProcessStats;
}

/** Names of the node's system containers. */
export type SystemContainerName = 'kubelet' | 'runtime' | 'misc' | 'pods';

export interface NodeStats<T = string> {
  nodeName: string;
  systemContainers?: ContainerStats<T>[];
  /** The node's boot time. */
  startTime: T;
  cpu?: CPUStats<T>;
  memory?: MemoryStats<T>;
  network?: NetworkStats<T>;
  /** The filesystem of the kubelet's root directory. */
  fs?: FsStats<T>;
  runtime?: RuntimeStats<T>;
  rlimit?: RlimitStats<T>;
}

export interface Summary<T = string> {
  node: NodeStats<T>;
  pods: PodStats<T>[];
}

/** metav1.Time's JSON form: RFC 3339 in UTC, whole seconds. */
export function formatTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The wire form of a summary computed with ms times: a deep copy with every time formatted. */
export function toWireSummary(s: Summary<number>): Summary {
  return convert(s) as Summary;
}

function convert(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(convert);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    out[k] = (k === 'time' || k === 'startTime') && typeof x === 'number' ? formatTime(x) : convert(x);
  }
  return out;
}
