import type { KubeletPod } from '../api/types.ts';
import type { Logger } from '../util/logger.ts';
import { KubeletError, describeError, isCanceled } from '../util/errors.ts';
import type { TimelineRecorder } from '../timeline/index.ts';

/** What the sync loop asks of a pod's worker (upstream UpdatePodOptions). */
export type PodWork =
  /**
   * `syncType` labels the pod worker duration metric as upstream does (config ADD → create, config
   * UPDATE → update, anything else → sync); absent, the first sync of a UID counts as create and
   * later ones as sync.
   */
  | { type: 'sync'; pod: KubeletPod; syncType?: 'create' | 'update' | 'sync' }
  /** Stop the pod: graceful kill, then cleanup. `pod` is absent for orphans found in the runtime. */
  | {
      type: 'kill';
      uid: string;
      pod: KubeletPod | undefined;
      gracePeriodOverride?: number;
      name?: string;
      namespace?: string;
    };

/** A worker's lifecycle; it only ever moves forward. */
export type WorkerPhase =
  | { phase: 'syncing' }
  | { phase: 'terminating'; gracePeriodOverride: number | undefined }
  | { phase: 'terminated' };

export interface SyncOutcome {
  /** The pod reached Succeeded/Failed: stop it and never restart it. */
  terminal: boolean;
}

/** The kubelet's handlers the workers call (upstream syncPod / syncTerminatingPod / syncTerminatedPod). */
export interface PodSyncHandlers {
  syncPod(pod: KubeletPod, signal: AbortSignal): Promise<SyncOutcome>;
  syncTerminatingPod(
    uid: string,
    pod: KubeletPod | undefined,
    gracePeriodOverride: number | undefined,
    identity: { name: string; namespace: string },
    signal: AbortSignal,
  ): Promise<void>;
  syncTerminatedPod(uid: string, pod: KubeletPod | undefined, signal: AbortSignal): Promise<void>;
  /** A sync failed or did not finish its work: try again later (bounded by back-off). */
  onSyncError(uid: string, err: unknown): void;
}

export interface PodWorkers {
  /** Hands work to the pod's worker; the newest pending work replaces an older pending one. */
  update(work: PodWork): void;
  phase(uid: string): WorkerPhase['phase'] | undefined;
  /** The pod's worker terminated it and has no work in flight or pending (cleanup done). */
  settled(uid: string): boolean;
  /** UIDs with a worker (any phase). */
  uids(): string[];
  /** Drops a terminated worker's record (after its pod left every source). */
  forget(uid: string): void;
  /** Resolves when no worker has work in flight or pending; for tests and run-once. */
  idle(): Promise<void>;
  /** Aborts syncs in flight and waits for every worker to stop. New work is refused. */
  stop(): Promise<void>;
}

/** upstream kubelet_pod_worker_duration_seconds{operation_type}. */
export type PodWorkOperation = 'create' | 'update' | 'sync' | 'kill';

/** Pod worker timings; every method must be cheap and must not throw. */
export interface PodWorkerMetrics {
  /** A pod's first sync started, `seconds` after its first update reached the workers. */
  workerStarted(seconds: number): void;
  /** A pod's first sync (upstream SyncPodCreate) with this many containers (kubelet_containers_per_pod_count). */
  podCreated?(containers: number): void;
  /** A sync or kill finished (successfully or not), `seconds` after it was handed to the worker. */
  workDone(operation: PodWorkOperation, seconds: number): void;
}

export interface PodWorkersOptions {
  /** Optional; absent, nothing is measured (and the clock is never read). */
  metrics?: PodWorkerMetrics;
  /** ms clock for the metrics; defaults to performance.now. */
  now?: () => number;
  /** Told when a kill is requested (`kill-requested`) and when a UID is forgotten; absent: nothing. */
  timeline?: Pick<TimelineRecorder, 'record' | 'forget'>;
}

interface WorkerRecord {
  uid: string;
  pod: KubeletPod | undefined;
  identity: { name: string; namespace: string };
  state: WorkerPhase;
  pending: PodWork | undefined;
  /** The running loop, if any. */
  loop: Promise<void> | undefined;
  /** Aborts the work in flight: a sync when the pod is killed, a kill when its grace period shortens. */
  abort: AbortController | undefined;
  /**
   * The last cleanup of the terminated pod (syncTerminatedPod: volumes, pod dir, final delete)
   * failed: any later update runs it again (upstream's volume manager retries a failed unmount on
   * every reconcile, and the final delete waits for it).
   */
  cleanupFailed: boolean;
  /** Metrics only: when the record was made, when `pending` was handed over, whether a sync ran. */
  createdAt: number;
  pendingSince: number;
  synced: boolean;
}

/**
 * One serialized worker per pod UID (upstream podWorkers): at most one sync of a pod runs at a time,
 * a newer update supersedes a pending one, a kill aborts a sync in flight, and the phases
 * syncing → terminating → terminated only move forward: a terminated UID is never started again.
 */
export function createPodWorkers(
  handlers: PodSyncHandlers,
  logger: Logger,
  opts: PodWorkersOptions = {},
): PodWorkers {
  const metrics = opts.metrics;
  const clock = opts.now ?? (() => performance.now());
  const now = metrics ? clock : () => 0;
  const timeline = opts.timeline;
  const workers = new Map<string, WorkerRecord>();
  let stopped = false;
  const idleWaiters: (() => void)[] = [];

  function logFor(rec: WorkerRecord): Logger {
    return logger.child({ pod: `${rec.identity.namespace}/${rec.identity.name}`, podUID: rec.uid });
  }

  function notifyIdle(): void {
    for (const w of workers.values()) if (w.loop) return;
    for (const r of idleWaiters.splice(0)) r();
  }

  async function runLoop(rec: WorkerRecord): Promise<void> {
    const log = logFor(rec);
    while (rec.pending && !stopped) {
      const work = rec.pending;
      const handedAt = rec.pendingSince;
      rec.pending = undefined;
      const ctrl = new AbortController();
      rec.abort = ctrl;
      let operation: PodWorkOperation | undefined;
      try {
        switch (rec.state.phase) {
          case 'syncing': {
            if (work.type !== 'sync') break; // a kill already moved the state on
            operation = work.syncType ?? (rec.synced ? 'sync' : 'create');
            if (!rec.synced && metrics) {
              metrics.workerStarted((now() - rec.createdAt) / 1000);
              metrics.podCreated?.(work.pod.spec.containers.length);
            }
            rec.synced = true;
            const outcome = await handlers.syncPod(work.pod, ctrl.signal);
            if (outcome.terminal && rec.state.phase === 'syncing') {
              log.info('pod reached a terminal phase; stopping it');
              rec.state = { phase: 'terminating', gracePeriodOverride: undefined };
              timeline?.record(rec.uid, 'kill-requested');
              if (!rec.pending) {
                rec.pending = { type: 'kill', uid: rec.uid, pod: rec.pod };
                rec.pendingSince = now();
              }
            }
            break;
          }
          case 'terminating': {
            operation = 'kill';
            const grace = rec.state.gracePeriodOverride;
            await handlers.syncTerminatingPod(rec.uid, rec.pod, grace, rec.identity, ctrl.signal);
            rec.state = { phase: 'terminated' };
            rec.pending = { type: 'kill', uid: rec.uid, pod: rec.pod };
            rec.pendingSince = now();
            break;
          }
          case 'terminated':
            rec.cleanupFailed = true; // until it returns: an abort or a throw leaves it to redo
            await handlers.syncTerminatedPod(rec.uid, rec.pod, ctrl.signal);
            rec.cleanupFailed = false;
            break;
        }
      } catch (err) {
        if (isCanceled(err) && (stopped || rec.state.phase !== 'syncing')) {
          log.debug('sync aborted', { reason: describeError(err) });
        } else {
          log.error('pod sync failed', { phase: rec.state.phase, err: describeError(err) });
          handlers.onSyncError(rec.uid, err);
        }
      } finally {
        rec.abort = undefined;
        if (metrics && operation) metrics.workDone(operation, (now() - handedAt) / 1000);
      }
    }
    rec.loop = undefined;
    notifyIdle();
  }

  return {
    update(work) {
      if (stopped) return;
      const uid = work.type === 'sync' ? work.pod.metadata.uid : work.uid;
      let rec = workers.get(uid);
      if (!rec) {
        const pod = work.pod;
        rec = {
          uid,
          pod,
          identity: {
            name: pod?.metadata.name ?? (work.type === 'kill' ? (work.name ?? '') : ''),
            namespace: pod?.metadata.namespace ?? (work.type === 'kill' ? (work.namespace ?? '') : ''),
          },
          state: { phase: 'syncing' },
          pending: undefined,
          loop: undefined,
          abort: undefined,
          cleanupFailed: false,
          createdAt: now(),
          pendingSince: 0,
          synced: false,
        };
        workers.set(uid, rec);
      }
      if (work.pod) rec.pod = work.pod;
      const pendingBefore = rec.pending;
      switch (rec.state.phase) {
        case 'syncing':
          if (work.type === 'kill') {
            rec.state = { phase: 'terminating', gracePeriodOverride: work.gracePeriodOverride };
            timeline?.record(uid, 'kill-requested');
            rec.abort?.abort(new KubeletError('Canceled', 'pod worker', 'pod is being terminated'));
          }
          rec.pending = work;
          break;
        case 'terminating':
          // A shorter grace period (e.g. a force delete) wins: the kill in flight is aborted and
          // runs again with it (upstream UpdatePod). Syncs are ignored from now on.
          if (work.type === 'kill' && work.gracePeriodOverride !== undefined) {
            const cur = rec.state.gracePeriodOverride;
            if (cur === undefined || work.gracePeriodOverride < cur) {
              rec.state.gracePeriodOverride = work.gracePeriodOverride;
              rec.abort?.abort(new KubeletError('Canceled', 'pod worker', 'grace period shortened'));
            }
          }
          rec.pending ??= { type: 'kill', uid, pod: rec.pod };
          break;
        case 'terminated':
          // A finished pod's cleanup may run again; any update retries one that failed (the work
          // queue's resync after an error comes as a sync).
          if (work.type === 'kill') rec.pending = work;
          else if (rec.cleanupFailed) rec.pending ??= { type: 'kill', uid, pod: rec.pod };
          break;
      }
      if (rec.pending !== pendingBefore) rec.pendingSince = now();
      if (!rec.loop && rec.pending) rec.loop = runLoop(rec);
    },
    phase: (uid) => workers.get(uid)?.state.phase,
    settled(uid) {
      const rec = workers.get(uid);
      return !rec || (rec.state.phase === 'terminated' && !rec.loop && !rec.pending && !rec.cleanupFailed);
    },
    uids: () => [...workers.keys()],
    forget(uid) {
      const rec = workers.get(uid);
      if (rec && rec.state.phase === 'terminated' && !rec.loop) {
        workers.delete(uid);
        timeline?.forget(uid);
      }
    },
    idle() {
      for (const w of workers.values()) {
        if (w.loop) return new Promise((resolve) => idleWaiters.push(resolve));
      }
      return Promise.resolve();
    },
    async stop() {
      stopped = true;
      const loops: Promise<void>[] = [];
      for (const w of workers.values()) {
        w.pending = undefined;
        w.abort?.abort(new KubeletError('Canceled', 'pod worker', 'kubelet is stopping'));
        if (w.loop) loops.push(w.loop);
      }
      await Promise.all(loops);
    },
  };
}
