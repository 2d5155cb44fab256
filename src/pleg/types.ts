import type { RuntimePodSummary, RuntimeContainerState, RuntimePodStatus } from '../runtime/index.ts';

export type PodLifecycleEventType =
  'ContainerStarted' | 'ContainerDied' | 'ContainerRemoved' | 'ContainerChanged';

export interface PodLifecycleEvent {
  uid: string;
  type: PodLifecycleEventType;
  /** Container or sandbox ID. */
  id: string;
}

/** The last known status of every pod the runtime holds, refreshed by relists and pod workers. */
export interface PodStatusCache {
  get(uid: string): RuntimePodStatus | undefined;
  set(uid: string, status: RuntimePodStatus): void;
  delete(uid: string): void;
}

/** A container's or sandbox's state as the PLEG records it (a sandbox is running or exited). */
export type State = RuntimeContainerState | 'non-existent';

/**
 * Pod lifecycle event generator (upstream GenericPLEG, plus containerd events when given a source):
 * relists the runtime periodically, diffs each container's state against its record and emits
 * events for what changed. Pods with events get their full status re-read into the cache before
 * the event is emitted, so a sync triggered by the event sees the new state.
 */
export interface Pleg {
  start(onEvent: (e: PodLifecycleEvent) => void): void;
  stop(): Promise<void>;
  /** Runs one relist now (also what the timer runs); resolves when a relist begun after the call ends. */
  relist(): Promise<void>;
  /** Unhealthy when the last successful relist is older than the threshold (3 min). */
  healthy(): { ok: boolean; message: string };
  /** The pods of the last successful relist (kept current by event reads); undefined before the first one. */
  runtimePods(): readonly RuntimePodSummary[] | undefined;
  readonly cache: PodStatusCache;
}

/** Relist timings (upstream kubelet_pleg_relist_duration_seconds / _interval_seconds). */
export interface PlegMetrics {
  /**
   * Called after every relist, failed ones included. `intervalSeconds` is the time since the start
   * of the previous successful relist; undefined before the first one.
   */
  relisted(durationSeconds: number, intervalSeconds: number | undefined): void;
  /** A relist read the runtime's pod list: the PLEG was active now (kubelet_pleg_last_seen_seconds). */
  seenActive?(): void;
}
