import type { KubeletPod } from '../api/types.ts';
import type { WaitingReason } from '../status/index.ts';
import type { WorkerPhase } from './pod-workers.ts';

/**
 * What the kubelet knows about the pods it was given (upstream pod manager + reason cache), owned
 * by the sync loop and the sync handlers. Plain data: no I/O, no timers.
 */
export interface PodState {
  /** Desired pods by UID: what the sources say should run (incl. ones being deleted). */
  readonly desired: Map<string, KubeletPod>;
  /** Pods refused at admission: never started, reported Failed. */
  readonly rejected: Set<string>;
  /** Why containers are waiting after the last sync, per pod (upstream ReasonCache). */
  readonly waitingReasons: Map<string, Map<string, WaitingReason>>;
  /**
   * When each pod's last sync finished (monotonic ms, the clock of RuntimePodStatus.timestamp); a
   * cached runtime status newer than this is fresh enough.
   */
  readonly lastSyncEnd: Map<string, number>;
  /** When each pod was first synced (monotonic ms), until it first ran (-1 after: measured). */
  readonly firstSeen: Map<string, number>;
  /**
   * Pods the kubelet itself stopped (eviction, node shutdown): their status is Failed with this
   * reason and message whatever their containers say (upstream killPodNow's status function).
   */
  readonly statusOverrides: Map<string, { reason: string; message: string }>;
  /**
   * Read by `why` only: the step the pod's last sync stopped at and its error (monotonic `at`);
   * cleared by a sync that gets past it.
   */
  readonly syncErrors: Map<string, SyncError>;
  /** Read by `why` only: when the pod's kill started (monotonic ms) and the grace override it had. */
  readonly killStarted: Map<string, { at: number; gracePeriodOverride: number | undefined }>;
  /** A desired pod that was not rejected at admission. */
  syncable(uid: string): KubeletPod | undefined;
  /** Drops the per-pod caches of a pod whose containers are gone (desired/rejected stay). */
  forgetRuntime(uid: string): void;
  /**
   * Upstream IsPodDeleted, for the container GC: no source has the pod, or it was deleted and its
   * worker finished — never while a worker still syncs or stops it (the GC must not race the kill).
   */
  isDeleted(uid: string, workerPhase: WorkerPhase['phase'] | undefined): boolean;
}

/** Where a pod's sync stopped: volumes not set up, sandbox not created, or the sync threw. */
export interface SyncError {
  step: 'volumes' | 'sandbox' | 'sync';
  message: string;
  /** Monotonic ms. */
  at: number;
}

export function createPodState(): PodState {
  const desired = new Map<string, KubeletPod>();
  const rejected = new Set<string>();
  const waitingReasons = new Map<string, Map<string, WaitingReason>>();
  const lastSyncEnd = new Map<string, number>();
  const firstSeen = new Map<string, number>();
  const statusOverrides = new Map<string, { reason: string; message: string }>();
  const syncErrors = new Map<string, SyncError>();
  const killStarted = new Map<string, { at: number; gracePeriodOverride: number | undefined }>();
  return {
    desired,
    rejected,
    waitingReasons,
    lastSyncEnd,
    firstSeen,
    statusOverrides,
    syncErrors,
    killStarted,
    syncable(uid) {
      return rejected.has(uid) ? undefined : desired.get(uid);
    },
    isDeleted(uid, workerPhase) {
      if (workerPhase === 'syncing' || workerPhase === 'terminating') return false;
      const pod = desired.get(uid);
      return (
        pod === undefined || (pod.metadata.deletionTimestamp !== undefined && workerPhase === 'terminated')
      );
    },
    forgetRuntime(uid) {
      waitingReasons.delete(uid);
      lastSyncEnd.delete(uid);
      firstSeen.delete(uid);
      syncErrors.delete(uid);
      killStarted.delete(uid);
    },
  };
}
