/**
 * The storage part of the full summary: container rootfs (the runtime's writable layer) and logs,
 * pod volumes under `<rootDir>/pods/<uid>/volumes`, and the pod's ephemeral-storage total, which
 * eviction compares with ephemeral-storage limits (upstream calcEphemeralStorage).
 */
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Pod, Volume } from '../api/types.ts';
import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import { diskUsage, type DiskUsage, type FsCapacity } from './fs-usage.ts';
import type { PodEntry } from './pod-stats.ts';
import type { FsStats, Summary, VolumeStats } from './types.ts';
import type { ContainerLogStats, PvcVolumeStats } from '../metrics/index.ts';
import { monotonicNow } from '../util/clock.ts';
import { compareStrings } from '../util/compare.ts';

/**
 * A pod volume its plugin measures, as the volume manager reports it (volume's PodMeasuredVolume):
 * a persistentVolumeClaim volume (`claimName`) or an inline CSI volume.
 */
export interface MeasuredVolumeRef {
  volume: string;
  /** Reported with `pvcRef`; absent: an inline volume. */
  claimName?: string;
  /** The path to statfs; absent: the PV type reports no stats (hostPath, Block) or `metrics` does. */
  metricsPath?: string;
  /** The PV type measures usage itself (CSI NodeGetVolumeStats): the last numbers known and their wall time (ms). */
  metrics?: () => { usage: FsCapacity; time: number } | undefined;
}

export interface StorageContext {
  rootDir: string;
  podLogsDir: string;
  /** ms of this computation. */
  seenAt: number;
  /** The kubelet's pods by UID (volume names and kinds come from the spec). */
  pods: ReadonlyMap<string, Pod>;
  /** statfs, memoized for this computation; undefined when it failed. */
  capacity(dir: string): Promise<FsCapacity | undefined>;
  volumeUsage: VolumeUsageCache;
  /**
   * A pod's volumes that their plugin measures (the volume manager's): persistentVolumeClaim volumes
   * (absent: none reported) and inline CSI volumes (absent: walked as the other kinds).
   */
  measuredVolumes?: (uid: string) => readonly MeasuredVolumeRef[];
  logger: Logger;
}

/**
 * Volume usage measured at most once per period (upstream volumeStatsAggPeriod, 1 min), walks run
 * a few at a time. Entries for volumes not asked for by a computation are dropped at its sweep.
 */
export interface VolumeUsageCache {
  /** `now`: wall ms, the measurement's reported time; the period is kept on the monotonic clock. */
  get(dir: string, now: number): Promise<{ usage: DiskUsage; time: number }>;
  sweep(keep: ReadonlySet<string>): void;
}

export function createVolumeUsageCache(
  periodMs: number,
  maxConcurrentWalks = 2,
  monotonic: () => number = monotonicNow,
): VolumeUsageCache {
  const entries = new Map<string, { at: number; result: Promise<{ usage: DiskUsage; time: number }> }>();
  let active = 0;
  const queue: (() => void)[] = [];
  async function limited<T>(fn: () => Promise<T>): Promise<T> {
    if (active >= maxConcurrentWalks) await new Promise<void>((r) => queue.push(r));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      queue.shift()?.();
    }
  }
  return {
    get(dir, now) {
      const e = entries.get(dir);
      const at = monotonic();
      if (e && at - e.at < periodMs) return e.result;
      const result = limited(() => diskUsage(dir)).then((usage) => ({ usage, time: now }));
      entries.set(dir, { at, result });
      result.catch(() => entries.delete(dir));
      return result;
    },
    sweep(keep) {
      for (const k of entries.keys()) if (!keep.has(k)) entries.delete(k);
    },
  };
}

/** upstream isVolumeEphemeral: what counts towards the pod's ephemeral storage. */
function isEphemeral(v: Volume | undefined, pluginDir: string): boolean {
  if (v)
    return (v.emptyDir !== undefined && v.emptyDir.medium !== 'Memory') || 'configMap' in v || 'gitRepo' in v;
  // Not in the spec (a pod we no longer know): judge by the plugin directory.
  return pluginDir === 'kubernetes.io~empty-dir' || pluginDir === 'kubernetes.io~configmap';
}

function withCapacity(
  time: number,
  c: FsCapacity | undefined,
  used: { usedBytes?: number; inodesUsed?: number },
): FsStats<number> {
  return {
    time,
    ...(c
      ? {
          availableBytes: c.availableBytes,
          capacityBytes: c.capacityBytes,
          inodesFree: c.inodesFree,
          inodes: c.inodes,
        }
      : {}),
    ...(used.usedBytes !== undefined ? { usedBytes: used.usedBytes } : {}),
    ...(used.inodesUsed !== undefined ? { inodesUsed: used.inodesUsed } : {}),
  };
}

function podLogDir(ctx: StorageContext, e: PodEntry): string {
  const r = e.stats.podRef;
  return path.join(ctx.podLogsDir, `${r.namespace}_${r.name}_${r.uid}`);
}

async function volumesOf(
  ctx: StorageContext,
  e: PodEntry,
  wanted: Set<string>,
): Promise<{ stats: VolumeStats<number>; ephemeral: boolean }[]> {
  const uid = e.stats.podRef.uid;
  const base = path.join(ctx.rootDir, 'pods', uid, 'volumes');
  const spec = new Map((ctx.pods.get(uid)?.spec.volumes ?? []).map((v) => [v.name, v]));
  const measured = ctx.measuredVolumes?.(uid) ?? [];
  const byPlugin = new Set(measured.map((m) => m.volume));
  let plugins: string[];
  try {
    plugins = await readdir(base);
  } catch {
    return []; // no volumes directory: a pod without volumes
  }
  const found: { name: string; dir: string; plugin: string }[] = [];
  for (const plugin of plugins) {
    const names = await readdir(path.join(base, plugin)).catch(() => [] as string[]);
    for (const name of names) {
      if (spec.size > 0 && !spec.has(name)) continue;
      if (spec.get(name)?.persistentVolumeClaim !== undefined) continue; // reported with its pvcRef below
      if (byPlugin.has(name)) continue; // its plugin measures it (below)
      found.push({ name, dir: path.join(base, plugin, name), plugin });
    }
  }
  const out = await Promise.all(
    found.map(async (v) => {
      wanted.add(v.dir);
      try {
        const [{ usage, time }, cap] = await Promise.all([
          ctx.volumeUsage.get(v.dir, ctx.seenAt),
          ctx.capacity(v.dir),
        ]);
        if (usage.truncated)
          ctx.logger.warn('volume usage walk stopped at its entry limit', { podUID: uid, volume: v.name });
        return {
          stats: { name: v.name, ...withCapacity(time, cap, usage) },
          ephemeral: isEphemeral(spec.get(v.name), v.plugin),
        };
      } catch (err) {
        ctx.logger.debug('cannot measure volume', { podUID: uid, volume: v.name, err: describeError(err) });
        return undefined;
      }
    }),
  );
  const ownStats = await measuredVolumeStats(ctx, measured, e.stats.podRef.namespace);
  return [...out.filter((v) => v !== undefined), ...ownStats].sort((a, b) =>
    compareStrings(a.stats.name, b.stats.name),
  );
}

/**
 * The volumes whose plugin measures them: persistentVolumeClaim volumes whose PV type reports statfs
 * numbers (the local plugin's MetricsStatFS), and CSI volumes (PV or inline) through the driver's
 * NodeGetVolumeStats (upstream metricsCsi): capacity, available and used bytes and inodes; a claim's
 * with `pvcRef` (what kubelet_volume_stats_* are made from). Never ephemeral storage.
 */
async function measuredVolumeStats(
  ctx: StorageContext,
  measured: readonly MeasuredVolumeRef[],
  namespace: string,
): Promise<{ stats: VolumeStats<number>; ephemeral: boolean }[]> {
  const out: { stats: VolumeStats<number>; ephemeral: boolean }[] = [];
  for (const c of measured) {
    const pvcRef = c.claimName !== undefined ? { pvcRef: { name: c.claimName, namespace } } : {};
    if (c.metrics) {
      const m = c.metrics();
      if (!m) continue; // not measured yet, or the driver reports no usage
      out.push({
        stats: { name: c.volume, ...pvcRef, ...withCapacity(m.time, m.usage, m.usage) },
        ephemeral: false,
      });
      continue;
    }
    if (c.metricsPath === undefined) continue;
    const cap = await ctx.capacity(c.metricsPath);
    if (!cap) continue; // capacity() logs why
    out.push({
      stats: {
        name: c.volume,
        ...pvcRef,
        ...withCapacity(ctx.seenAt, cap, { usedBytes: cap.usedBytes, inodesUsed: cap.inodesUsed }),
      },
      ephemeral: false,
    });
  }
  return out;
}

/** Files directly in the pod's log directory (upstream getPodLogStats skips the container dirs). */
async function podLogFilesUsage(dir: string): Promise<{ usedBytes: number; inodesUsed: number } | undefined> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return undefined; // no log directory yet
  }
  let usedBytes = 0;
  let inodesUsed = 0;
  for (const n of names) {
    const s = await lstat(path.join(dir, n)).catch(() => undefined);
    if (!s || s.isDirectory()) continue;
    usedBytes += s.blocks * 512;
    inodesUsed++;
  }
  return { usedBytes, inodesUsed };
}

/** Adds rootfs, logs, volumes and ephemeral-storage to a pod entry; `wanted` collects volume dirs. */
export async function addPodStorage(ctx: StorageContext, e: PodEntry, wanted: Set<string>): Promise<void> {
  const logDir = podLogDir(ctx, e);
  const logsCap = await ctx.capacity(ctx.podLogsDir);
  await Promise.all(
    e.containers.map(async (c) => {
      const layer = c.criStats.writableLayer;
      if (layer) {
        const mount = layer.fsId?.mountpoint;
        const cap = mount ? await ctx.capacity(mount) : undefined;
        const time = layer.timestamp > 0 ? layer.timestamp / 1e6 : ctx.seenAt;
        c.stats.rootfs = withCapacity(time, cap, {
          ...(layer.usedBytes ? { usedBytes: layer.usedBytes.value } : {}),
          ...(layer.inodesUsed ? { inodesUsed: layer.inodesUsed.value } : {}),
        });
      }
      const logs = await diskUsage(path.join(logDir, c.stats.name), { maxEntries: 10_000 }).catch(
        () => undefined,
      );
      if (logs) c.stats.logs = withCapacity(ctx.seenAt, logsCap, logs);
    }),
  );
  const volumes = await volumesOf(ctx, e, wanted);
  if (volumes.length > 0) e.stats.volume = volumes.map((v) => v.stats);

  const rootCap = await ctx.capacity(ctx.rootDir);
  let usedBytes = 0;
  let inodesUsed = 0;
  let time = rootCap ? ctx.seenAt : 0;
  const add = (s: FsStats<number> | undefined): void => {
    if (!s) return;
    usedBytes += s.usedBytes ?? 0;
    inodesUsed += s.inodesUsed ?? 0;
    time = Math.max(time, s.time);
  };
  for (const c of e.stats.containers) {
    // upstream counts a container's logs only together with its rootfs
    if (!c.rootfs) continue;
    add(c.rootfs);
    add(c.logs);
  }
  for (const v of volumes) if (v.ephemeral) add(v.stats);
  const files = await podLogFilesUsage(logDir);
  if (files) add({ time: ctx.seenAt, ...files });
  e.stats['ephemeral-storage'] = withCapacity(time || ctx.seenAt, rootCap, { usedBytes, inodesUsed });
}

/** Each container's log bytes of the summary (upstream logMetricsCollector's input). */
export function containerLogStats(summary: Summary<number>): ContainerLogStats[] {
  return summary.pods.flatMap((p) =>
    p.containers.flatMap((c) =>
      c.logs?.usedBytes !== undefined
        ? [
            {
              uid: p.podRef.uid,
              namespace: p.podRef.namespace,
              pod: p.podRef.name,
              container: c.name,
              usedBytes: c.logs.usedBytes,
            },
          ]
        : [],
    ),
  );
}

/** The summary's volumes with a pvcRef, as kubelet_volume_stats_* report them (upstream volumeStatsCollector). */
export function pvcVolumeStats(summary: Summary<number>): PvcVolumeStats[] {
  return summary.pods.flatMap((p) =>
    (p.volume ?? []).flatMap((v) =>
      v.pvcRef
        ? [
            {
              namespace: v.pvcRef.namespace,
              persistentvolumeclaim: v.pvcRef.name,
              ...(v.capacityBytes !== undefined ? { capacityBytes: v.capacityBytes } : {}),
              ...(v.availableBytes !== undefined ? { availableBytes: v.availableBytes } : {}),
              ...(v.usedBytes !== undefined ? { usedBytes: v.usedBytes } : {}),
              ...(v.inodes !== undefined ? { inodes: v.inodes } : {}),
              ...(v.inodesFree !== undefined ? { inodesFree: v.inodesFree } : {}),
              ...(v.inodesUsed !== undefined ? { inodesUsed: v.inodesUsed } : {}),
            },
          ]
        : [],
    ),
  );
}
