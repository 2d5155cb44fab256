import type { PodStatus } from '../api/types.ts';
import { deepEqual } from '../util/json.ts';
import { isTerminalPhase } from './pod-status.ts';
import type { TimelineRecorder } from '../timeline/index.ts';

/**
 * Holds the latest computed status of every pod (upstream status.Manager). Standalone it is memory
 * only; in cluster mode a syncer patches changes to the API server from here. Enforces that a pod
 * never leaves a terminal phase.
 */
export interface StatusManager {
  get(uid: string): PodStatus | undefined;
  /** Stores a status; returns false if it was refused (would regress a terminal phase). */
  set(uid: string, status: PodStatus): boolean;
  delete(uid: string): void;
  /** Every UID with a status. */
  uids(): string[];
  /** Subscribe to changes (the API syncer, tests). Returns an unsubscribe function. */
  onChange(listener: (uid: string, status: PodStatus) => void): () => void;
}

export interface StatusManagerOptions {
  /** Told when a pod's status first shows Ready=True in an attempt (`ready`); absent: nothing. */
  timeline?: Pick<TimelineRecorder, 'recordFirst'>;
}

export function createStatusManager(opts: StatusManagerOptions = {}): StatusManager {
  const timeline = opts.timeline;
  const statuses = new Map<string, PodStatus>();
  const listeners = new Set<(uid: string, status: PodStatus) => void>();
  return {
    get: (uid) => statuses.get(uid),
    set(uid, status) {
      const old = statuses.get(uid);
      if (old && isTerminalPhase(old.phase) && old.phase !== status.phase) return false;
      statuses.set(uid, status);
      if (timeline && status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) {
        timeline.recordFirst(uid, 'ready');
      }
      if (!old || !deepEqual(old, status)) {
        for (const l of listeners) l(uid, status);
      }
      return true;
    },
    delete: (uid) => statuses.delete(uid),
    uids: () => [...statuses.keys()],
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
