import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeletPod } from '../api/types.ts';
import type { Logger } from '../util/logger.ts';
import type { Backoff } from '../util/backoff.ts';
import type { BackoffStore } from '../util/backoff-store.ts';
import { describeError } from '../util/errors.ts';
import { singleFlight } from '../util/single-flight.ts';
import { PERIODIC_QOS_CGROUP_UPDATE_INTERVAL_MS } from '../config/defaults.ts';
import type { RuntimePodSummary } from '../runtime/index.ts';
import { mountsUnder, podDir, type VolumeManager } from '../volume/index.ts';
import type { NodeEventSink } from '../api/events.ts';
import {
  FAILED_ORPHANED_POD_CLEANUP,
  ORPHANED_POD_CLEANED_UP,
  orphanCleanedUpMessage,
} from './orphan-events.ts';
import type { ContainerManager, QosUpdater } from '../cm/index.ts';
import type { PodWorkers } from './pod-workers.ts';
import type { PodState } from './pod-state.ts';
import { isStaticPod } from '../api/pod-source.ts';

export interface HousekeepingDeps {
  state: PodState;
  workers: PodWorkers;
  /** The pods of the PLEG's last relist; undefined before the first one. */
  runtimePods(): readonly RuntimePodSummary[] | undefined;
  /** Every source has delivered its first snapshot: only then may unclaimed pods be cleaned up. */
  sourcesReady(): boolean;
  backoff: Backoff;
  backoffStore: BackoffStore;
  /** Cluster mode: makes the mirror pods match the static pods. */
  reconcileMirrors?: (staticPods: KubeletPod[], signal: AbortSignal) => Promise<void>;
  volumes: VolumeManager;
  rootDir: string;
  cm: ContainerManager | undefined;
  qos: QosUpdater;
  /** Aborted when the kubelet stops. */
  signal: AbortSignal;
  logger: Logger;
  /** Monotonic ms: the back-off table's times, the QoS cgroup update period. */
  monotonic(): number;
  /** Events about the node: an orphaned pod directory removed, or failing to be. Absent: logged only. */
  nodeEvent?: NodeEventSink;
}
/** A failing orphan's Warning is recorded at most this often (the pass retries every 2 s). */
const ORPHAN_FAILURE_EVENT_INTERVAL_MS = 5 * 60_000;

/**
 * Upstream HandlePodCleanups, run every housekeeping period from the sync loop: kills workers and
 * runtime pods no source claims, forgets terminated workers, and starts (at most one of each at a
 * time, in the background) the mirror pod pass, the orphaned pod directory and pod cgroup cleanup.
 */
export interface Housekeeping {
  /** One pass; returns at once (background passes run on). Skipped until all sources are ready. */
  run(): void;
  /** Resolves when no background pass is running. */
  idle(): Promise<void>;
}

export function createHousekeeping(deps: HousekeepingDeps): Housekeeping {
  const { state, workers, logger: log } = deps;
  const mirrorPass = singleFlight<void>();
  const dirCleanup = singleFlight<void>();
  const cgroupCleanup = singleFlight<void>();
  /** Orphaned pod UIDs whose cleanup failed: when the last Warning about each was recorded (monotonic ms). */
  const orphanWarnedAt = new Map<string, number>();

  function killUnclaimed(): void {
    for (const uid of workers.uids()) {
      if (state.desired.has(uid)) continue;
      const phase = workers.phase(uid);
      if (phase === 'syncing') workers.update({ type: 'kill', uid, pod: undefined });
      else if (phase === 'terminated') workers.forget(uid);
    }
    for (const p of deps.runtimePods() ?? []) {
      if (state.desired.has(p.uid) || workers.phase(p.uid) !== undefined) continue;
      const live = p.sandboxes.length > 0 || p.containers.length > 0;
      if (!live) continue;
      log.info('cleaning up pod no source claims', { pod: `${p.namespace}/${p.name}`, podUID: p.uid });
      workers.update({ type: 'kill', uid: p.uid, pod: undefined, name: p.name, namespace: p.namespace });
    }
  }

  function reconcileMirrors(): void {
    const reconcile = deps.reconcileMirrors;
    if (!reconcile || mirrorPass.busy) return;
    const statics = [...state.desired.values()].filter(isStaticPod);
    void mirrorPass.run(() =>
      reconcile(statics, deps.signal).catch((err: unknown) =>
        log.warn('mirror pod pass failed', { err: describeError(err) }),
      ),
    );
  }

  /**
   * Upstream cleanupOrphanedPodDirs: pod directories (and their volume mounts) of pods that no
   * source claims, no worker runs and the runtime no longer has, e.g. pods removed while the
   * kubelet was down. Upstream leaves an orphan with mounted volumes alone and only logs (its
   * issue #60987); here the mounts are torn down (CSI volumes through their driver) and the
   * directory removed, with a log line and a Node event naming the pod UID and the mounts; a
   * failure is logged on every pass and recorded as a Warning at most every 5 minutes per pod.
   */
  function cleanupOrphanedPodDirs(): void {
    const runtimePods = deps.runtimePods();
    if (dirCleanup.busy || runtimePods === undefined) return;
    const runtimeUids = new Set(runtimePods.map((p) => p.uid));
    void dirCleanup.run(async () => {
      const uids = await readdir(join(deps.rootDir, 'pods')).catch(() => [] as string[]);
      for (const uid of uids) {
        if (state.desired.has(uid) || workers.phase(uid) !== undefined || runtimeUids.has(uid)) continue;
        try {
          const mounts = (await mountsUnder(podDir(deps.rootDir, uid))).map((m) => m.mountPoint);
          await deps.volumes.cleanUpPod(uid, deps.signal);
          orphanWarnedAt.delete(uid);
          log.info('removed orphaned pod directory', { podUID: uid, unmounted: mounts });
          deps.nodeEvent?.('Normal', ORPHANED_POD_CLEANED_UP, orphanCleanedUpMessage(uid, mounts));
        } catch (err) {
          if (deps.signal.aborted) return;
          log.warn('failed to remove orphaned pod directory; will retry', {
            podUID: uid,
            err: describeError(err),
          });
          const last = orphanWarnedAt.get(uid);
          const now = deps.monotonic();
          if (last === undefined || now - last >= ORPHAN_FAILURE_EVENT_INTERVAL_MS) {
            orphanWarnedAt.set(uid, now);
            deps.nodeEvent?.(
              'Warning',
              FAILED_ORPHANED_POD_CLEANUP,
              `Failed to clean up the directory of orphaned pod ${uid} (retried every housekeeping period): ${describeError(err)}`,
            );
          }
        }
      }
      // Orphans that went some other way are not remembered.
      for (const uid of orphanWarnedAt.keys()) if (!uids.includes(uid)) orphanWarnedAt.delete(uid);
    });
  }

  /**
   * Upstream cleanupOrphanedPodCgroups: removes the cgroups of pods that cannot be running any
   * more: no worker syncing or terminating them, not a desired pod about to start, and nothing
   * live in the runtime (known only once the PLEG has relisted).
   */
  function cleanupPodCgroups(): void {
    const runtimePods = deps.runtimePods();
    const cm = deps.cm;
    if (!cm || cgroupCleanup.busy || runtimePods === undefined) return;
    const live = new Set(
      runtimePods
        .filter(
          (p) =>
            p.sandboxes.some((s) => s.state === 'ready') || p.containers.some((c) => c.state === 'running'),
        )
        .map((p) => p.uid),
    );
    const isActive = (uid: string): boolean => {
      const phase = workers.phase(uid);
      if (phase === 'syncing' || phase === 'terminating') return true;
      // A finished pod still in its source keeps its cgroup (its sandbox and shim may live there)
      // until it is deleted; upstream likewise waits while the pod's volumes exist.
      if (state.syncable(uid)) return true;
      return live.has(uid);
    };
    void cgroupCleanup.run(() =>
      cm
        .cleanupOrphanedPodCgroups(isActive, deps.signal)
        .then((removed) => {
          if (removed.length > 0) void deps.qos.update();
        })
        .catch((err: unknown) => {
          if (!deps.signal.aborted) log.warn('pod cgroup cleanup failed', { err: describeError(err) });
        }),
    );
  }

  return {
    run() {
      if (!deps.sourcesReady()) return;
      killUnclaimed();
      deps.backoff.gc(deps.monotonic());
      void deps.backoffStore.save();
      reconcileMirrors();
      cleanupOrphanedPodDirs();
      cleanupPodCgroups();
      if (deps.monotonic() - deps.qos.lastUpdateAt() >= PERIODIC_QOS_CGROUP_UPDATE_INTERVAL_MS)
        void deps.qos.update();
    },
    async idle() {
      await Promise.all([mirrorPass.idle(), dirCleanup.idle(), cgroupCleanup.idle()]);
    },
  };
}
