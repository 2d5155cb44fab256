/**
 * Signal observations from one stats summary (upstream makeSignalObservations): for each signal
 * the amount available, the capacity it is a part of, and when it was measured.
 */
import type { PodStats, Summary } from '../stats/index.ts';
import type { Signal } from './signals.ts';

export interface Observation {
  available: number;
  capacity: number;
  /** ms since the epoch. */
  time: number;
}

export type Observations = ReadonlyMap<Signal, Observation>;

/** A pod's stats by UID, as the summary reported them. */
export type PodStatsLookup = (uid: string) => PodStats<number> | undefined;

export function makeObservations(summary: Summary<number>): {
  observations: Observations;
  podStats: PodStatsLookup;
} {
  const out = new Map<Signal, Observation>();
  const node = summary.node;
  const mem = node.memory;
  if (mem?.availableBytes !== undefined && mem.workingSetBytes !== undefined) {
    out.set('memory.available', {
      available: mem.availableBytes,
      capacity: mem.availableBytes + mem.workingSetBytes,
      time: mem.time,
    });
  }
  const pods = node.systemContainers?.find((c) => c.name === 'pods')?.memory;
  if (pods?.availableBytes !== undefined && pods.workingSetBytes !== undefined) {
    out.set('allocatableMemory.available', {
      available: pods.availableBytes,
      capacity: pods.availableBytes + pods.workingSetBytes,
      time: pods.time,
    });
  }
  const fs = node.fs;
  if (fs?.availableBytes !== undefined && fs.capacityBytes !== undefined) {
    out.set('nodefs.available', { available: fs.availableBytes, capacity: fs.capacityBytes, time: fs.time });
  }
  if (fs?.inodesFree !== undefined && fs.inodes !== undefined) {
    out.set('nodefs.inodesFree', { available: fs.inodesFree, capacity: fs.inodes, time: fs.time });
  }
  const image = node.runtime?.imageFs;
  if (image?.availableBytes !== undefined && image.capacityBytes !== undefined) {
    out.set('imagefs.available', {
      available: image.availableBytes,
      capacity: image.capacityBytes,
      time: image.time,
    });
    // upstream: imagefs inodes are only observed along with its bytes.
    if (image.inodesFree !== undefined && image.inodes !== undefined) {
      out.set('imagefs.inodesFree', {
        available: image.inodesFree,
        capacity: image.inodes,
        time: image.time,
      });
    }
  }
  const rlimit = node.rlimit;
  if (rlimit?.maxpid !== undefined && rlimit.curproc !== undefined) {
    out.set('pid.available', {
      available: rlimit.maxpid - rlimit.curproc,
      capacity: rlimit.maxpid,
      time: rlimit.time,
    });
  }
  const byUid = new Map(summary.pods.map((p) => [p.podRef.uid, p]));
  return { observations: out, podStats: (uid) => byUid.get(uid) };
}
