import type { Pod, PodStatus } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import type { ApiClient } from '../api/client-types.ts';
import type { Logger } from '../util/logger.ts';
import { describeError, isNotFound } from '../util/errors.ts';
import { isConflict } from '../api/client-types.ts';
import type { StatusManager } from './status-manager.ts';

/** Where a pod's status goes in the API: the pod itself, or a static pod's mirror pod. */
export type StatusTarget = { namespace: string; name: string; uid: string } | undefined;

export interface StatusSyncer {
  start(): void;
  stop(): Promise<void>;
  /** Forces a resend of everything (e.g. after the API server came back). */
  resyncAll(): void;
  /** Schedules these pods' statuses for writing (e.g. their mirror pod just appeared). */
  markDirty(uids: string[]): void;
  /** Resolves when nothing is dirty or in flight; for tests. */
  idle(): Promise<void>;
}

export interface StatusSyncerDeps {
  api: ApiClient;
  statuses: StatusManager;
  logger: Logger;
  /** The API object a pod UID's status is written to (undefined: nowhere yet, e.g. no mirror pod). */
  targetFor(uid: string): StatusTarget;
  /** Pod for log identity. */
  podFor(uid: string): Pod | undefined;
  /** Periodic resend of statuses not yet acknowledged (upstream syncPeriod 10 s). */
  resyncPeriodMs?: number;
  concurrency?: number;
}

/**
 * Writes pod statuses to the API server (upstream status.Manager syncBatch/syncPod): one merge
 * patch of `status` per change, carrying the pod UID as a precondition, deduplicated against what
 * the server last acknowledged; a periodic pass resends anything unacknowledged, so an API outage
 * converges as soon as the server is back. At most `concurrency` patches are in flight.
 */
export function createStatusSyncer(deps: StatusSyncerDeps): StatusSyncer {
  const dirty = new Set<string>();
  const acked = new Map<string, string>();
  const stop = new AbortController();
  const concurrency = deps.concurrency ?? 5;
  let inFlight = 0;
  let timer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  const idleWaiters: (() => void)[] = [];

  function checkIdle(): void {
    if ((dirty.size === 0 || stop.signal.aborted) && inFlight === 0)
      for (const r of idleWaiters.splice(0)) r();
  }

  async function syncOne(uid: string): Promise<void> {
    const status = deps.statuses.get(uid);
    const target = deps.targetFor(uid);
    if (!status || !target) return;
    const body = JSON.stringify(status);
    const key = `${target.uid}:${body}`;
    if (acked.get(uid) === key) return;
    const pod = deps.podFor(uid);
    const log = deps.logger.child({
      pod: pod ? podFullName(pod) : `${target.namespace}/${target.name}`,
      podUID: uid,
    });
    try {
      await deps.api.request<Pod>({
        method: 'PATCH',
        path: `/api/v1/namespaces/${target.namespace}/pods/${target.name}/status`,
        contentType: 'application/merge-patch+json',
        // The UID makes the patch fail on a different pod that reuses the name.
        body: { metadata: { uid: target.uid }, status: status satisfies PodStatus },
        signal: stop.signal,
      });
      acked.set(uid, key);
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
    for (const uid of deps.statuses.uids()) dirty.add(uid);
    pump();
  }

  return {
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
      markAll();
    },
    markDirty(uids) {
      for (const u of uids) dirty.add(u);
      pump();
    },
    idle() {
      if (dirty.size === 0 && inFlight === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}
