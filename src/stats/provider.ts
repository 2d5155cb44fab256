import { stat } from 'node:fs/promises';
import type { KubeletPod } from '../api/types.ts';
import type { MetricsText } from '../metrics/index.ts';
import type {
  ContainerStats as CriContainerStats,
  ImageService,
  PodSandboxStats,
  RuntimeService,
} from '../runtime/cri/index.ts';
import { describeError, hasCode } from '../util/errors.ts';
import { nullLogger, type Logger } from '../util/logger.ts';
import { qosCgroupNames, type QOSCgroupNames } from '../cm/index.ts';
import { createCgroupReader, type CgroupReader } from './cgroups.ts';
import { createCpuRates } from './cpu-rates.ts';
import { deviceOf, fsCapacity, readMountinfo, type FsCapacity } from './fs-usage.ts';
import {
  fsStats,
  nodeCpuMemory,
  nodeNetwork,
  ownCgroup,
  rlimitStats,
  systemContainers,
  type HostContext,
  type SystemContainerSpec,
} from './host-stats.ts';
import {
  addPodStorage,
  createVolumeUsageCache,
  type MeasuredVolumeRef,
  type StorageContext,
} from './pod-storage.ts';
import { buildPodEntries, type PodEntry } from './pod-stats.ts';
import { PROMETHEUS_TEXT_CONTENT_TYPE } from './prom-text.ts';
import { cadvisorMetrics, resourceMetrics } from './resource-metrics.ts';
import {
  toWireSummary,
  type CPUStats,
  type FsStats,
  type MemoryStats,
  type NodeStats,
  type Summary,
} from './types.ts';
import { monotonicNow } from '../util/clock.ts';
import { compareStrings } from '../util/compare.ts';

/** How long a computed summary answers later callers (several scrapers share one computation). */
const DEFAULT_CACHE_TTL_MS = 1_000;
/** Deadline of each CRI call made for stats. */
const DEFAULT_CRI_TIMEOUT_MS = 10_000;
/** upstream volumeStatsAggPeriod: volume usage is walked at most this often. */
const DEFAULT_VOLUME_STATS_PERIOD_MS = 60_000;
/** After ListPodSandboxStats failed (not Unimplemented), use ListContainerStats this long. */
const SANDBOX_STATS_RETRY_MS = 5 * 60_000;

export interface StatsProviderOptions {
  runtime: RuntimeService;
  imageService: ImageService;
  /** The kubelet's root directory: node `fs` and pod volumes (`<rootDir>/pods/<uid>/volumes`). */
  rootDir: string;
  podLogsDir: string;
  nodeName: string;
  /** The kubelet's pods (volume names and kinds come from their specs). */
  pods: () => readonly KubeletPod[];
  /** Wall ms since the epoch (the stats' times); defaults to Date.now. */
  now?: () => number;
  /** Monotonic ms (the summary cache, retry and re-read periods); defaults to util/clock's. */
  monotonic?: () => number;
  /** Defaults to /proc. */
  procRoot?: string;
  /** Where cgroup filesystems are mounted; defaults to /sys/fs/cgroup. */
  cgroupRoot?: string;
  /**
   * The QoS cgroups of the pods (`guaranteed` is the `pods` system container, parent of the pod
   * cgroups); default cgroupfs names under `/`.
   */
  podCgroups?: QOSCgroupNames;
  /** The container runtime's cgroup (`runtimeCgroups`), for the `runtime` system container. */
  runtimeCgroup?: string;
  criTimeoutMs?: number;
  cacheTtlMs?: number;
  volumeStatsPeriodMs?: number;
  /**
   * A pod's volumes that their plugin measures: persistentVolumeClaim volumes (stats with `pvcRef`)
   * and inline CSI volumes (the driver's numbers instead of a walk); absent: none.
   */
  measuredVolumes?: (uid: string) => readonly MeasuredVolumeRef[];
  logger?: Logger;
}

/**
 * Node and pod resource usage for the kubelet API. Reads the runtime (CRI stats), cgroups, procfs
 * and filesystems on demand; concurrent callers share one computation and its result answers
 * callers for `cacheTtlMs` more. Never starts anything in the background.
 */
export interface StatsProvider {
  /**
   * The Summary API. `onlyCpuAndMemory` (upstream's only_cpu_and_memory): node and pods with CPU
   * and memory only, no network, filesystems or volumes. Rejects when the runtime cannot list its
   * pods or their stats; host values that cannot be read are left out instead.
   */
  summary(opts?: { onlyCpuAndMemory?: boolean }): Promise<Summary>;
  /**
   * The full summary with times in ms (the eviction manager's input); shares the cache with
   * `summary`. Rejects as `summary` does.
   */
  summaryMs(): Promise<Summary<number>>;
  /**
   * Whether the runtime's image filesystem (CRI ImageFsInfo, else `fallbackImageFsPath`) is a
   * different device from the root dir's (upstream HasDedicatedImageFs).
   */
  hasDedicatedImageFs(fallbackImageFsPath: string): Promise<boolean>;
  /** `/metrics/resource`: never rejects (a failure is `scrape_error 1`). */
  resourceMetricsText(): Promise<MetricsText>;
  /** `/metrics/cadvisor` (the families listed in CADVISOR_FAMILIES); rejects as `summary` does. */
  cadvisorMetricsText(): Promise<MetricsText>;
}

interface Computed {
  summary: Summary<number>;
  entries: PodEntry[];
}

interface CacheEntry {
  done: number | undefined;
  result: Promise<Computed>;
}

export function createStatsProvider(opts: StatsProviderOptions): StatsProvider {
  const now = opts.now ?? Date.now;
  const monotonic = opts.monotonic ?? monotonicNow;
  const log = opts.logger ?? nullLogger;
  const procRoot = opts.procRoot ?? '/proc';
  const ttl = opts.cacheTtlMs ?? DEFAULT_CACHE_TTL_MS;
  const cri = { timeoutMs: opts.criTimeoutMs ?? DEFAULT_CRI_TIMEOUT_MS };
  const qosCgroups = opts.podCgroups ?? qosCgroupNames('/');
  const podsCgroup = qosCgroups.guaranteed;
  const startedAt = now();
  const rates = createCpuRates();
  const volumeUsage = createVolumeUsageCache(
    opts.volumeStatsPeriodMs ?? DEFAULT_VOLUME_STATS_PERIOD_MS,
    undefined,
    monotonic,
  );
  const cache: { full?: CacheEntry; cpu?: CacheEntry } = {};
  let cgroupsP: Promise<CgroupReader | undefined> | undefined;
  let kubeletCgroupP: Promise<string | undefined> | undefined;
  let sandboxStatsSkipUntil = 0;
  let mounts: { at: number; list: Promise<{ mountPoint: string; source: string }[]> } | undefined;

  const cgroups = (): Promise<CgroupReader | undefined> =>
    (cgroupsP ??= createCgroupReader(opts.cgroupRoot ?? '/sys/fs/cgroup', now));

  async function runtimeStats(): Promise<{
    sandboxStats?: Map<string, PodSandboxStats>;
    containerStats: CriContainerStats[];
  }> {
    if (monotonic() >= sandboxStatsSkipUntil) {
      try {
        const list = await opts.runtime.listPodSandboxStats({}, cri);
        return {
          sandboxStats: new Map(list.map((s) => [s.attributes?.id ?? '', s])),
          containerStats: list.flatMap((s) => s.linux?.containers ?? []),
        };
      } catch (err) {
        // e.g. containerd 1.6 refuses the whole list when one sandbox has no cgroup parent.
        const unimplemented = hasCode(err, 'Unimplemented');
        sandboxStatsSkipUntil = unimplemented ? Infinity : monotonic() + SANDBOX_STATS_RETRY_MS;
        log.info('pod sandbox stats unavailable; using container stats and pod cgroups', {
          err: describeError(err),
          retryInMs: unimplemented ? undefined : SANDBOX_STATS_RETRY_MS,
        });
      }
    }
    return { containerStats: await opts.runtime.listContainerStats({}, cri) };
  }

  async function systemSpecs(reader: CgroupReader): Promise<SystemContainerSpec[]> {
    const kubelet = await (kubeletCgroupP ??= ownCgroup(procRoot, reader));
    const specs: SystemContainerSpec[] = [];
    if (kubelet !== undefined) specs.push({ name: 'kubelet', cgroup: kubelet, startTime: startedAt });
    if (opts.runtimeCgroup) specs.push({ name: 'runtime', cgroup: opts.runtimeCgroup });
    specs.push({ name: 'pods', cgroup: podsCgroup });
    return specs;
  }

  function soft<T>(what: string, p: Promise<T>): Promise<T | undefined> {
    return p.catch((err: unknown) => {
      log.debug(`stats: cannot read ${what}`, { err: describeError(err) });
      return undefined;
    });
  }

  async function imageFs(
    seenAt: number,
    capacity: (dir: string) => Promise<FsCapacity | undefined>,
  ): Promise<FsStats<number> | undefined> {
    const fs = (await opts.imageService.imageFsInfo(cri))[0];
    if (!fs) return undefined;
    const mount = fs.fsId?.mountpoint;
    const cap = mount ? await capacity(mount) : undefined;
    return {
      time: fs.timestamp > 0 ? fs.timestamp / 1e6 : seenAt,
      ...(cap ? { availableBytes: cap.availableBytes, capacityBytes: cap.capacityBytes } : {}),
      ...(fs.usedBytes ? { usedBytes: fs.usedBytes.value } : {}),
      ...(cap ? { inodesFree: cap.inodesFree, inodes: cap.inodes } : {}),
      ...(fs.inodesUsed ? { inodesUsed: fs.inodesUsed.value } : {}),
    };
  }

  async function compute(full: boolean): Promise<Computed> {
    const seenAt = now();
    const reader = await cgroups();
    const host: HostContext = { procRoot, cgroups: reader, rates, seenAt };
    const capacities = new Map<string, Promise<FsCapacity | undefined>>();
    const capacity = (dir: string): Promise<FsCapacity | undefined> => {
      let c = capacities.get(dir);
      if (!c) capacities.set(dir, (c = soft(`filesystem of ${dir}`, fsCapacity(dir))));
      return c;
    };
    const criP = Promise.all([
      opts.runtime.listPodSandbox({}, cri),
      opts.runtime.listContainers({}, cri),
      runtimeStats(),
    ]);
    const nodeP = nodeCpuMemory(host);
    const sysP = reader ? systemSpecs(reader).then((s) => systemContainers(host, s)) : Promise.resolve([]);
    const podCgroupsP = reader ? soft('pod cgroups', reader.podCgroups(qosCgroups)) : undefined;
    const extraP = full
      ? Promise.all([
          soft('host network', nodeNetwork(host)),
          soft(`filesystem of ${opts.rootDir}`, fsStats(opts.rootDir, seenAt)),
          soft('image filesystem', imageFs(seenAt, capacity)),
          rlimitStats(host),
        ])
      : undefined;
    // Settle every side before awaiting: a failed CRI list must not leave the others unobserved.
    const [criR, nodeR, sysR, podCgroupsR, extraR] = await Promise.allSettled([
      criP,
      nodeP,
      sysP,
      podCgroupsP,
      extraP,
    ]);
    if (criR.status === 'rejected') throw criR.reason;
    const [sandboxes, containers, stats] = criR.value;
    const entries = await buildPodEntries(
      { sandboxes, containers, sandboxStats: stats.sandboxStats, containerStats: stats.containerStats },
      {
        rates,
        seenAt,
        cgroups: reader,
        podCgroups: (podCgroupsR.status === 'fulfilled' ? podCgroupsR.value : undefined) ?? new Map(),
        procRoot,
        full,
      },
    );
    const node =
      nodeR.status === 'fulfilled' ? nodeR.value : { startTime: seenAt, cpu: undefined, memory: undefined };
    const nodeStats: NodeStats<number> = {
      nodeName: opts.nodeName,
      ...(sysR.status === 'fulfilled' && sysR.value.length > 0 ? { systemContainers: sysR.value } : {}),
      startTime: node.startTime,
      ...(node.cpu ? { cpu: node.cpu } : {}),
      ...(node.memory ? { memory: node.memory } : {}),
    };
    if (full) {
      const [network, fs, image, rlimit] = extraR.status === 'fulfilled' && extraR.value ? extraR.value : [];
      if (network) nodeStats.network = network;
      if (fs) nodeStats.fs = fs;
      nodeStats.runtime = image ? { imageFs: image } : {};
      if (rlimit) nodeStats.rlimit = rlimit;
      const pods = new Map(opts.pods().map((p) => [p.metadata.uid, p]));
      const storage: StorageContext = {
        rootDir: opts.rootDir,
        podLogsDir: opts.podLogsDir,
        seenAt,
        pods,
        capacity,
        volumeUsage,
        ...(opts.measuredVolumes ? { measuredVolumes: opts.measuredVolumes } : {}),
        logger: log,
      };
      const wanted = new Set<string>();
      await Promise.all(entries.map((e) => addPodStorage(storage, e, wanted)));
      volumeUsage.sweep(wanted);
    }
    rates.sweep(seenAt);
    entries.sort((a, b) => {
      const x = a.stats.podRef;
      const y = b.stats.podRef;
      return compareStrings(x.namespace, y.namespace) || compareStrings(x.name, y.name);
    });
    return { summary: { node: nodeStats, pods: entries.map((e) => e.stats) }, entries };
  }

  function cached(full: boolean): Promise<Computed> {
    const key = full ? 'full' : 'cpu';
    const fresh = (e: CacheEntry | undefined): e is CacheEntry =>
      !!e && (e.done === undefined || monotonic() - e.done < ttl);
    // A full summary (in flight or fresh) also answers a CPU-and-memory request.
    if (!full && fresh(cache.full)) return cache.full.result.then(stripToCpuAndMemory);
    const hit = cache[key];
    if (fresh(hit)) return hit.result;
    const entry: CacheEntry = { done: undefined, result: compute(full) };
    cache[key] = entry;
    entry.result.then(
      () => (entry.done = monotonic()),
      () => {
        if (cache[key] === entry) delete cache[key];
      },
    );
    return entry.result;
  }

  return {
    async summary(o) {
      return toWireSummary((await cached(!o?.onlyCpuAndMemory)).summary);
    },
    async summaryMs() {
      return (await cached(true)).summary;
    },
    async hasDedicatedImageFs(fallbackImageFsPath) {
      const fs = (await opts.imageService.imageFsInfo(cri))[0];
      const imagePath = fs?.fsId?.mountpoint || fallbackImageFsPath;
      const [root, image] = await Promise.all([stat(opts.rootDir), stat(imagePath)]);
      return root.dev !== image.dev;
    },
    async resourceMetricsText() {
      let s: Summary<number> | undefined;
      try {
        s = (await cached(false)).summary;
      } catch (err) {
        log.warn('stats for /metrics/resource unavailable', { err: describeError(err) });
      }
      return { contentType: PROMETHEUS_TEXT_CONTENT_TYPE, body: resourceMetrics(s) };
    },
    async cadvisorMetricsText() {
      const c = await cached(true);
      if (!mounts || monotonic() - mounts.at > 60_000) {
        mounts = { at: monotonic(), list: readMountinfo(procRoot).catch(() => []) };
      }
      const list = await mounts.list;
      return {
        contentType: PROMETHEUS_TEXT_CONTENT_TYPE,
        body: cadvisorMetrics({ summary: c.summary, entries: c.entries, deviceOf: (p) => deviceOf(list, p) }),
      };
    },
  };
}

/** upstream GetCPUAndMemoryStats' shape from a full computation. */
function stripToCpuAndMemory(c: Computed): Computed {
  const n = c.summary.node;
  const strip = (x: { cpu?: CPUStats<number>; memory?: MemoryStats<number> }) => ({
    ...(x.cpu ? { cpu: x.cpu } : {}),
    ...(x.memory ? { memory: x.memory } : {}),
  });
  const entries = c.entries.map((e) => ({
    ...e,
    stats: {
      podRef: e.stats.podRef,
      startTime: e.stats.startTime,
      containers: e.stats.containers.map((x) => ({ name: x.name, startTime: x.startTime, ...strip(x) })),
      ...strip(e.stats),
    },
  }));
  return {
    summary: {
      node: {
        nodeName: n.nodeName,
        ...(n.systemContainers
          ? {
              systemContainers: n.systemContainers.map((x) => ({
                name: x.name,
                startTime: x.startTime,
                ...strip(x),
              })),
            }
          : {}),
        startTime: n.startTime,
        ...strip(n),
      },
      pods: entries.map((e) => e.stats),
    },
    entries,
  };
}
