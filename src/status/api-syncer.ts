import type { KubeletPod, Pod, PodStatus } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import type { ApiClient } from '../api/client-types.ts';
import type { Logger } from '../util/logger.ts';
import { describeError, isNotFound } from '../util/errors.ts';
import { isConflict } from '../api/client-types.ts';
import type { StatusManager } from './status-manager.ts';
import { mergePodStatusForApi, podStatusPatch } from './status-patch.ts';

/**
 * Where a pod's status goes in the API: the pod itself, or a static pod's mirror pod. `status` and
 * `resourceVersion` are that object as the API source last delivered it (the base of the patch
 * until the server answers one of ours).
 */
export type StatusTarget =
  { namespace: string; name: string; uid: string; status?: PodStatus; resourceVersion?: string } | undefined;

export interface StatusSyncer {
  start(): void;
  stop(): Promise<void>;
  /** Forgets what the server has and writes everything again (e.g. after the API server came back). */
  resyncAll(): void;
  /** Schedules these pods' statuses for writing (e.g. their mirror pod just appeared). */
  markDirty(uids: string[]): void;
  /** Resolves when nothing is dirty or in flight (at once after stop()); for tests. */
  idle(): Promise<void>;
  /**
   * The last step of a graceful deletion (upstream status manager): every container has stopped,
   * so the pod object is deleted with grace 0, guarded by its UID. Already gone is fine.
   */
  deletePod(pod: KubeletPod, signal: AbortSignal): Promise<void>;
}

export interface StatusSyncerDeps {
  api: ApiClient;
  statuses: StatusManager;
  logger: Logger;
  /** The API object a pod UID's status is written to (undefined: nowhere yet, e.g. no mirror pod). */
  targetFor(uid: string): StatusTarget;
  /** Pod for log identity. */
  podFor(uid: string): KubeletPod | undefined;
  /** Periodic resend of statuses not yet acknowledged (upstream syncPeriod 10 s). */
  resyncPeriodMs?: number;
  concurrency?: number;
}

/** The API's status of a target as last seen: from the server's answer to our patch, or the watch. */
interface KnownStatus {
  targetUid: string;
  status: PodStatus;
  resourceVersion: string | undefined;
}

/** resourceVersions are opaque, but etcd's are increasing integers; compare only those. */
function newerThan(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) > BigInt(b);
}

/**
 * Writes pod statuses to the API server (upstream status.Manager syncBatch/syncPod): per change one
 * strategic merge patch of `pods/<name>/status` from the status the API has (the server's answer
 * to our last patch, or the API source's copy when that is newer) to ours, carrying the pod UID as
 * a precondition. Conditions merge by type, and the ones the kubelet does not own are left as the
 * API has them (upstream mergePodStatus). Deduplicated against what the server last acknowledged,
 * unless the API source delivered a newer copy since (someone else wrote the pod); a periodic pass
 * resends anything unacknowledged, so an API outage converges as soon as the server is back. At most `concurrency` patches are in flight, never two for one pod.
 */
export function createStatusSyncer(deps: StatusSyncerDeps): StatusSyncer {
  const dirty = new Set<string>();
  /** Per pod UID: `<target uid>:<our status JSON>` the server acknowledged. */
  const acked = new Map<string, string>();
  /** Per pod UID: the target's status as the server returned it after our last patch. */
  const known = new Map<string, KnownStatus>();
  const stop = new AbortController();
  const concurrency = deps.concurrency ?? 5;
  let inFlight = 0;
  let timer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  const idleWaiters: (() => void)[] = [];

  function isIdle(): boolean {
    return (dirty.size === 0 || stop.signal.aborted) && inFlight === 0;
  }

  function checkIdle(): void {
    if (isIdle()) for (const r of idleWaiters.splice(0)) r();
  }

  /** The status the API has for this target, as far as we know. */
  function baseFor(uid: string, target: NonNullable<StatusTarget>): KnownStatus | undefined {
    const ours = known.get(uid);
    const mine = ours?.targetUid === target.uid ? ours : undefined;
    const watched: KnownStatus | undefined = target.status
      ? { targetUid: target.uid, status: target.status, resourceVersion: target.resourceVersion }
      : undefined;
    if (!mine) return watched;
    if (watched && newerThan(watched.resourceVersion, mine.resourceVersion)) return watched;
    return mine;
  }

  /** The watch's copy of the target is newer than the server's answer to our last patch. */
  function watchedIsNewer(uid: string, target: NonNullable<StatusTarget>): boolean {
    const mine = known.get(uid);
    return (
      target.status !== undefined &&
      mine?.targetUid === target.uid &&
      newerThan(target.resourceVersion, mine.resourceVersion)
    );
  }

  async function syncOne(uid: string): Promise<void> {
    const status = deps.statuses.get(uid);
    const target = deps.targetFor(uid);
    if (!status || !target) return;
    const key = `${target.uid}:${JSON.stringify(status)}`;
    // Acknowledged and unchanged since, as far as we know: nothing to do. A newer copy from the
    // watch means someone else wrote the pod after us (e.g. the node lifecycle controller marked it
    // not ready while this node was unreachable): diff against it (upstream needsReconcile).
    if (acked.get(uid) === key && !watchedIsNewer(uid, target)) return;
    const pod = deps.podFor(uid);
    const log = deps.logger.child({
      pod: pod ? podFullName(pod) : `${target.namespace}/${target.name}`,
      podUID: uid,
    });
    const base = baseFor(uid, target);
    const merged = mergePodStatusForApi(base?.status, status);
    const patch = podStatusPatch(base?.status, merged, target.uid);
    if (!patch) {
      acked.set(uid, key);
      // Remember the copy we compared with, so the next pass does not diff it again.
      if (base) known.set(uid, base);
      log.trace('pod status unchanged in the API; nothing to write');
      return;
    }
    try {
      const updated = await deps.api.request<Pod | undefined>({
        method: 'PATCH',
        path: `/api/v1/namespaces/${target.namespace}/pods/${target.name}/status`,
        contentType: 'application/strategic-merge-patch+json',
        body: patch,
        signal: stop.signal,
      });
      acked.set(uid, key);
      const answered = updated?.status && updated.metadata?.uid === target.uid ? updated : undefined;
      known.set(uid, {
        targetUid: target.uid,
        status: answered?.status ?? merged,
        resourceVersion: answered?.metadata.resourceVersion,
      });
      log.debug('pod status written', { phase: status.phase });
    } catch (err) {
      if (stop.signal.aborted) return;
      if (isNotFound(err) || isConflict(err)) {
        // The pod is gone or was replaced: nothing to write to.
        log.debug('pod status not written: pod gone from the API', { err: describeError(err) });
        acked.set(uid, key);
        return;
      }
      log.warn('failed to write pod status; will retry', { err: describeError(err) });
    }
  }

  /** Pods with a patch in flight: one pod never has two (a late reply could record a stale status). */
  const busy = new Set<string>();

  function pump(): void {
    if (stop.signal.aborted) return checkIdle();
    for (const uid of [...dirty]) {
      if (inFlight >= concurrency) break;
      if (busy.has(uid)) continue; // sent again once the patch in flight returns
      dirty.delete(uid);
      busy.add(uid);
      inFlight++;
      void syncOne(uid).finally(() => {
        busy.delete(uid);
        inFlight--;
        pump();
      });
    }
    checkIdle();
  }

  function markAll(): void {
    const live = new Set(deps.statuses.uids());
    for (const uid of live) dirty.add(uid);
    // Pods whose status left the manager: forget what we knew of them.
    for (const uid of [...known.keys()]) if (!live.has(uid)) known.delete(uid);
    for (const uid of [...acked.keys()]) if (!live.has(uid)) acked.delete(uid);
    pump();
  }

  async function deletePod(pod: KubeletPod, signal: AbortSignal): Promise<void> {
    try {
      await deps.api.request({
        method: 'DELETE',
        path: `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`,
        body: {
          kind: 'DeleteOptions',
          apiVersion: 'v1',
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata.uid },
        },
        signal,
      });
      deps.logger.info('pod deleted from the API after termination', {
        pod: podFullName(pod),
        podUID: pod.metadata.uid,
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  return {
    deletePod,
    start() {
      unsubscribe = deps.statuses.onChange((uid) => {
        dirty.add(uid);
        pump();
      });
      markAll();
      timer = setInterval(markAll, deps.resyncPeriodMs ?? 10_000);
    },
    async stop() {
      stop.abort();
      unsubscribe?.();
      if (timer) clearInterval(timer);
      await new Promise<void>((resolve) => {
        if (inFlight === 0) resolve();
        else idleWaiters.push(resolve);
      });
    },
    resyncAll() {
      acked.clear();
      known.clear();
      markAll();
    },
    markDirty(uids) {
      for (const u of uids) dirty.add(u);
      pump();
    },
    idle() {
      // After stop() nothing is written any more: statuses still dirty do not keep it waiting.
      if (isIdle()) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}
