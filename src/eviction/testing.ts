/**
 * Fixture builders for the eviction tests (not exported from any index, not part of the build): pods
 * named after what they prove (the name is also the UID), their stats the way upstream's test
 * helpers shape them (newPodMemoryStats, newPodDiskStats, newPodInodeStats, newPodProcessStats), and
 * node summaries (makeMemoryStats, makeDiskStats).
 */
import type { Container, KubeletPod, Toleration, Volume } from '../api/types.ts';
import type { ContainerStats, PodStats, Summary, VolumeStats } from '../stats/index.ts';
import { buildPod } from '../../test/kit/pod.ts';

export const Ki = 2 ** 10;
export const Mi = 2 ** 20;
export const Gi = 2 ** 30;

/** Upstream's test priorities. */
export const LOW_PRIORITY = -1;
export const DEFAULT_PRIORITY = 0;
export const HIGH_PRIORITY = 1;

export interface ContainerSpec {
  name?: string;
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

export function container(name: string, spec: Omit<ContainerSpec, 'name'> = {}): Container {
  const c: Container = { name, image: 'busybox:1.29' };
  if (spec.requests || spec.limits) {
    c.resources = {};
    if (spec.requests) c.resources.requests = spec.requests;
    if (spec.limits) c.resources.limits = spec.limits;
  }
  return c;
}

export interface PodSpecOptions extends ContainerSpec {
  priority?: number;
  /** Replaces the single container named after the pod. */
  containers?: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  annotations?: Record<string, string>;
  tolerations?: Toleration[];
  overhead?: Record<string, string>;
}

/** A pod in namespace `ns` whose UID is its name; one container (named after it) unless told otherwise. */
export function pod(name: string, opts: PodSpecOptions = {}): KubeletPod {
  const containers = opts.containers ?? [
    container(opts.name ?? name, {
      ...(opts.requests ? { requests: opts.requests } : {}),
      ...(opts.limits ? { limits: opts.limits } : {}),
    }),
  ];
  return buildPod(name, {
    namespace: 'ns',
    uid: name,
    containers,
    ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
    ...(opts.initContainers ? { initContainers: opts.initContainers } : {}),
    ...(opts.volumes ? { volumes: opts.volumes } : {}),
    ...(opts.annotations ? { annotations: opts.annotations } : {}),
    spec: {
      ...(opts.tolerations ? { tolerations: opts.tolerations } : {}),
      ...(opts.overhead ? { overhead: opts.overhead } : {}),
    },
  });
}

/** A local (non-memory) emptyDir volume, as upstream's tests add to every disk-ranked pod. */
export function emptyDir(name = 'local-volume', sizeLimit?: string): Volume {
  return { name, emptyDir: sizeLimit === undefined ? {} : { sizeLimit } };
}

function ref(p: KubeletPod): PodStats<number>['podRef'] {
  return { name: p.metadata.name, namespace: p.metadata.namespace, uid: p.metadata.uid };
}

/** upstream newPodMemoryStats: the pod's working set, no container stats. */
export function memoryStats(p: KubeletPod, workingSetBytes: number): PodStats<number> {
  return { podRef: ref(p), startTime: 0, containers: [], memory: { time: 0, workingSetBytes } };
}

/**
 * upstream newPodDiskStats / newPodInodeStats: each container uses `root` and `logs`, each local
 * volume of the pod (hostPath, disk emptyDir, configMap, gitRepo) uses `perVolume`.
 */
export function diskStats(
  p: KubeletPod,
  usage: { root?: number; logs?: number; perVolume?: number },
  what: 'bytes' | 'inodes' = 'bytes',
): PodStats<number> {
  const fs = (n: number) => (what === 'bytes' ? { time: 0, usedBytes: n } : { time: 0, inodesUsed: n });
  const containers: ContainerStats<number>[] = p.spec.containers.map((c) => ({
    name: c.name,
    startTime: 0,
    rootfs: fs(usage.root ?? 0),
    logs: fs(usage.logs ?? 0),
  }));
  const volume: VolumeStats<number>[] = (p.spec.volumes ?? [])
    .filter(
      (v) => v.hostPath || (v.emptyDir && v.emptyDir.medium !== 'Memory') || v['configMap'] || v['gitRepo'],
    )
    .map((v) => ({ name: v.name, ...fs(usage.perVolume ?? 0) }));
  return { podRef: ref(p), startTime: 0, containers, volume };
}

/** upstream newPodProcessStats. */
export function processStats(p: KubeletPod, count: number): PodStats<number> {
  return { podRef: ref(p), startTime: 0, containers: [], process_stats: { process_count: count } };
}

/** Per-container working sets, for eviction messages. */
export function containerMemoryStats(p: KubeletPod, byContainer: Record<string, number>): PodStats<number> {
  const total = Object.values(byContainer).reduce((a, b) => a + b, 0);
  return {
    podRef: ref(p),
    startTime: 0,
    containers: Object.entries(byContainer).map(([name, workingSetBytes]) => ({
      name,
      startTime: 0,
      memory: { time: 0, workingSetBytes },
    })),
    memory: { time: 0, workingSetBytes: total },
  };
}

/**
 * upstream makeMemoryStats: node (and the `pods` system container) with `available` bytes free and as
 * many in the working set, so capacity is twice `available`. `time` is the measurement time (0 =
 * unknown, which upstream treats as always fresh).
 */
export function memorySummary(available: number, pods: PodStats<number>[] = [], time = 0): Summary<number> {
  const memory = { time, availableBytes: available, workingSetBytes: available };
  return {
    node: {
      nodeName: 'node',
      startTime: 0,
      memory,
      systemContainers: [{ name: 'pods', startTime: 0, memory: { ...memory } }],
    },
    pods,
  };
}

/**
 * upstream makeDiskStats: the node filesystem and the image filesystem each with `available` bytes
 * free out of twice as much.
 */
export function diskSummary(
  nodefsAvailable: number,
  imagefsAvailable: number,
  pods: PodStats<number>[] = [],
  time = 0,
): Summary<number> {
  return {
    node: {
      nodeName: 'node',
      startTime: 0,
      fs: { time, availableBytes: nodefsAvailable, capacityBytes: nodefsAvailable * 2 },
      runtime: {
        imageFs: { time, availableBytes: imagefsAvailable, capacityBytes: imagefsAvailable * 2 },
      },
    },
    pods,
  };
}

/** The UIDs (= names) of pods, in order. */
export const names = (pods: readonly KubeletPod[]): string[] => pods.map((p) => p.metadata.uid);

/** One node summary with any of the signals: memory (as memorySummary), disk (as diskSummary), inodes, PIDs. */
export function nodeSummary(
  o: {
    memory?: number;
    nodefs?: number;
    imagefs?: number;
    inodesFree?: number;
    pids?: [maxpid: number, curproc: number];
  },
  pods: PodStats<number>[] = [],
  time = 0,
): Summary<number> {
  const node: Summary<number>['node'] = { nodeName: 'node', startTime: 0 };
  if (o.memory !== undefined) Object.assign(node, memorySummary(o.memory, [], time).node);
  if (o.nodefs !== undefined || o.imagefs !== undefined) {
    const disk = diskSummary(o.nodefs ?? 100 * Gi, o.imagefs ?? 100 * Gi, [], time).node;
    node.fs = disk.fs;
    node.runtime = disk.runtime;
  }
  if (o.inodesFree !== undefined) {
    node.fs = { ...(node.fs ?? { time }), inodesFree: o.inodesFree, inodes: o.inodesFree * 2 };
  }
  if (o.pids) node.rlimit = { time, maxpid: o.pids[0], curproc: o.pids[1] };
  return { node, pods };
}
