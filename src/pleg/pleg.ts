import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import type { RuntimeManager, RuntimePodSummary } from '../runtime/runtime-manager.ts';
import type { RuntimeContainerState, RuntimePodStatus } from '../runtime/runtime-pod.ts';
import { PLEG_RELIST_PERIOD_MS, PLEG_RELIST_THRESHOLD_MS } from '../config/defaults.ts';
import { monotonicNow } from '../util/clock.ts';

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

/**
 * Pod lifecycle event generator (upstream GenericPLEG): relists the runtime every second, diffs each
 * container's state against the previous relist and emits events for what changed. Pods with events
 * get their full status re-read into the cache before the event is emitted, so a sync triggered by
 * the event sees the new state.
 */
export interface Pleg {
  start(onEvent: (e: PodLifecycleEvent) => void): void;
  stop(): Promise<void>;
  /** Runs one relist now (also what the timer runs). */
  relist(): Promise<void>;
  /** Unhealthy when the last successful relist is older than the threshold (3 min). */
  healthy(): { ok: boolean; message: string };
  /** The pods of the last successful relist; undefined before the first one. */
  runtimePods(): readonly RuntimePodSummary[] | undefined;
  readonly cache: PodStatusCache;
}

type State = RuntimeContainerState | 'non-existent';

export function generateEvents(
  uid: string,
  id: string,
  oldState: State,
  newState: State,
): PodLifecycleEvent[] {
  if (oldState === newState) return [];
  switch (newState) {
    case 'running':
      return [{ uid, type: 'ContainerStarted', id }];
    case 'exited':
      return [{ uid, type: 'ContainerDied', id }];
    case 'unknown':
      return [{ uid, type: 'ContainerChanged', id }];
    case 'created':
      return [];
    case 'non-existent':
      if (oldState === 'exited') return [{ uid, type: 'ContainerRemoved', id }];
      return [
        { uid, type: 'ContainerDied', id },
        { uid, type: 'ContainerRemoved', id },
      ];
  }
}

/**
 * Whether a cached status already shows what a relist saw for its pod: the same sandboxes and
 * containers in the same states. Re-reading it would return the same content (a container's
 * details do not change while its state does not), so the relist keeps it instead.
 */
export function statusMatches(status: RuntimePodStatus, seen: ReadonlyMap<string, State>): boolean {
  if (status.sandboxes.length + status.containers.length !== seen.size) return false;
  for (const s of status.sandboxes) if (seen.get(s.id) !== (s.ready ? 'running' : 'exited')) return false;
  for (const c of status.containers) if (seen.get(c.id) !== c.state) return false;
  return true;
}

function statesOf(pod: RuntimePodSummary): Map<string, State> {
  const m = new Map<string, State>();
  for (const s of pod.sandboxes) m.set(s.id, s.state === 'ready' ? 'running' : 'exited');
  for (const c of pod.containers) m.set(c.id, c.state);
  return m;
}

/** Relist timings (upstream kubelet_pleg_relist_duration_seconds / _interval_seconds). */
export interface PlegMetrics {
  /**
   * Called after every relist, failed ones included. `intervalSeconds` is the time since the start
   * of the previous successful relist; undefined before the first one.
   */
  relisted(durationSeconds: number, intervalSeconds: number | undefined): void;
}

export interface PlegDeps {
  runtime: RuntimeManager;
  logger: Logger;
  periodMs?: number;
  /** Monotonic ms (relist health and timings); default util/clock's. */
  monotonic?: () => number;
  /** Optional; absent, nothing is measured. */
  metrics?: PlegMetrics;
}

export function createPleg(deps: PlegDeps): Pleg {
  const now = deps.monotonic ?? monotonicNow;
  const periodMs = deps.periodMs ?? PLEG_RELIST_PERIOD_MS;
  const statusCache = new Map<string, RuntimePodStatus>();
  const cache: PodStatusCache = {
    get: (uid) => statusCache.get(uid),
    set: (uid, s) => {
      const old = statusCache.get(uid);
      if (!old || old.timestamp <= s.timestamp) statusCache.set(uid, s);
    },
    delete: (uid) => statusCache.delete(uid),
  };
  let previous = new Map<string, Map<string, State>>();
  let lastPods: RuntimePodSummary[] | undefined;
  let lastRelistOk = now();
  /** Start of the last successful relist, for the relist interval metric. */
  let lastSuccessStart: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let handler: ((e: PodLifecycleEvent) => void) | undefined;
  const abort = new AbortController();

  async function relistOnce(): Promise<void> {
    const metrics = deps.metrics;
    if (!metrics) return relistAt(now());
    const started = now();
    const interval = lastSuccessStart === undefined ? undefined : (started - lastSuccessStart) / 1000;
    try {
      await relistAt(started);
    } finally {
      metrics.relisted((now() - started) / 1000, interval);
    }
  }

  async function relistAt(started: number): Promise<void> {
    let pods: RuntimePodSummary[];
    try {
      pods = await deps.runtime.listPods(abort.signal);
    } catch (err) {
      if (!abort.signal.aborted) deps.logger.error('PLEG relist failed', { err: describeError(err) });
      return;
    }
    lastRelistOk = started;
    lastSuccessStart = started;
    lastPods = pods;
    const current = new Map<string, Map<string, State>>();
    for (const p of pods) current.set(p.uid, statesOf(p));
    const byUid = new Map(pods.map((p) => [p.uid, p]));
    const uids = new Set([...previous.keys(), ...current.keys()]);
    for (const uid of uids) {
      const before = previous.get(uid) ?? new Map<string, State>();
      const after = current.get(uid) ?? new Map<string, State>();
      const events: PodLifecycleEvent[] = [];
      for (const id of new Set([...before.keys(), ...after.keys()])) {
        events.push(
          ...generateEvents(uid, id, before.get(id) ?? 'non-existent', after.get(id) ?? 'non-existent'),
        );
      }
      if (events.length === 0) continue;
      const pod = byUid.get(uid);
      const cached = statusCache.get(uid);
      if (
        pod &&
        cached &&
        events.every((e) => e.type === 'ContainerStarted') &&
        statusMatches(cached, after)
      ) {
        // The pod's worker read this status after starting what the relist now sees started (so a
        // pod's first Running is reported without waiting for the relist): not read twice. It is
        // current as of this relist's lists, so a sync triggered by the events may use it.
        cache.set(uid, { ...cached, timestamp: Math.max(cached.timestamp, started) });
      } else if (pod) {
        try {
          cache.set(uid, await deps.runtime.getPodStatus(uid, pod.name, pod.namespace, abort.signal));
        } catch (err) {
          if (abort.signal.aborted) return;
          // Keep the old relist record so the change is seen (and retried) at the next relist.
          deps.logger.warn('PLEG failed to read pod status', { podUID: uid, err: describeError(err) });
          const old = previous.get(uid);
          if (old) current.set(uid, old);
          else current.delete(uid);
          continue;
        }
      } else {
        statusCache.delete(uid);
      }
      for (const e of events) handler?.(e);
    }
    previous = current;
    const took = now() - started;
    if (took > periodMs) deps.logger.debug('PLEG relist slow', { durationMs: took });
  }

  function schedule(): void {
    timer = setTimeout(() => {
      running = relistOnce().finally(() => {
        running = undefined;
        if (!abort.signal.aborted) schedule();
      });
    }, periodMs);
  }

  return {
    cache,
    start(onEvent) {
      handler = onEvent;
      lastRelistOk = now();
      running = relistOnce().finally(() => {
        running = undefined;
        if (!abort.signal.aborted) schedule();
      });
    },
    async stop() {
      abort.abort();
      if (timer) clearTimeout(timer);
      await running?.catch(() => undefined);
    },
    relist: relistOnce,
    healthy() {
      const age = now() - lastRelistOk;
      if (age > PLEG_RELIST_THRESHOLD_MS) {
        return {
          ok: false,
          message: `PLEG is not healthy: pleg was last seen active ${Math.round(age / 1000)}s ago; threshold is ${PLEG_RELIST_THRESHOLD_MS / 1000}s`,
        };
      }
      return { ok: true, message: '' };
    },
    runtimePods: () => lastPods,
  };
}
