import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import { singleFlight } from '../util/single-flight.ts';
import type { RuntimeManager, RuntimePodSummary, RuntimePodStatus } from '../runtime/index.ts';
import { PLEG_RELIST_THRESHOLD_MS } from '../config/defaults.ts';
import { diffPod, statesOfStatus, statesOfSummary, statusMatches, summaryOfStatus } from './diff.ts';
import type { PlegMetrics, PodLifecycleEvent, PodStatusCache, State } from './types.ts';
import { backoffDelay } from '../util/backoff.ts';

/** After a relist that could not read everything, the next one comes at most this much later. */
export const FAILED_RELIST_RETRY_MS = 1_000;
/** Pods re-read at once when events name several (a burst of exits). */
export const POD_READ_CONCURRENCY = 4;
/**
 * containerd publishes `/tasks/exit` before its CRI plugin has applied the exit to the container
 * it reports (measured on the bed: a read at once still says running). A read that does not show
 * what an event said yet is repeated after this long, doubling, at most EXPECT_MAX_TRIES times
 * (≈1.3 s in all); after that the relist has the last word.
 */
export const EXPECT_RETRY_INITIAL_MS = 10;
export const EXPECT_MAX_TRIES = 7;
/** Expectations held at once (oldest dropped first): bounded whatever the event rate. */
export const EXPECT_MAX = 1024;

export interface RelisterDeps {
  /** Only listPods and getPodStatus are used. */
  runtime: Pick<RuntimeManager, 'listPods' | 'getPodStatus'>;
  logger: Logger;
  periodMs: number;
  monotonic: () => number;
  metrics?: PlegMetrics;
}

/**
 * The PLEG's single worker. Everything that reads the runtime for the PLEG (the periodic relist, a
 * relist asked for by an event, the re-read of one pod an event named) runs here, one at a time,
 * so the records every diff is made against are never written by two readers at once. Requests are
 * coalesced: a relist requested while one is pending is the same relist, and a pod named by ten
 * events is read once; a relist pending also serves every pending pod read. The pending work is a
 * flag and a set of known pod UIDs: bounded by the pods the runtime holds, whatever the event rate.
 */
export interface Relister {
  readonly cache: PodStatusCache;
  start(onEvent: (e: PodLifecycleEvent) => void): void;
  stop(): Promise<void>;
  /** Asks for a relist soon (coalesced); the returned promise resolves when it has run. */
  requestRelist(): Promise<void>;
  /**
   * A container or sandbox ID something says changed: its pod is re-read and diffed against its
   * record. False (and nothing done) when no record holds the ID. With `expect` (an exit event:
   * `exited`), a read that still shows the ID in another state is repeated shortly, with back-off.
   */
  hintKnown(id: string, expect?: State): boolean;
  knows(id: string): boolean;
  /** Changes the relist period; the next relist comes at most `ms` after the last one. */
  setPeriod(ms: number): void;
  /** Called after every relist (successful or not). */
  onRelisted(fn: () => void): void;
  healthy(): { ok: boolean; message: string };
  runtimePods(): readonly RuntimePodSummary[] | undefined;
}

export function createRelister(deps: RelisterDeps): Relister {
  const now = deps.monotonic;
  const log = deps.logger;
  let periodMs = deps.periodMs;
  const statusCache = new Map<string, RuntimePodStatus>();
  const cache: PodStatusCache = {
    get: (uid) => statusCache.get(uid),
    set: (uid, s) => {
      const old = statusCache.get(uid);
      if (old && old.timestamp > s.timestamp) return;
      statusCache.set(uid, s);
      // A pod worker's read names containers no relist has seen yet (it just made them): an event
      // naming one is then answered by reading its pod, not by a relist.
      for (const x of s.sandboxes) if (!owner.has(x.id)) owner.set(x.id, uid);
      for (const x of s.containers) if (!owner.has(x.id)) owner.set(x.id, uid);
    },
    delete: (uid) => statusCache.delete(uid),
  };
  /** Per pod UID, the state of each container and sandbox as last read. */
  let records = new Map<string, Map<string, State>>();
  /**
   * Container or sandbox ID → pod UID: every ID in `records`, and IDs learned from statuses the pod
   * workers cached since the last relist (which rebuilds it from `records`).
   */
  let owner = new Map<string, string>();
  let pods: Map<string, RuntimePodSummary> | undefined;
  /** `pods` as a list, built on demand and dropped whenever `pods` changes. */
  let podList: RuntimePodSummary[] | undefined;
  let lastRelistOk = now();
  let lastSuccessStart: number | undefined;
  let lastRelistEnd = now();
  let handler: ((e: PodLifecycleEvent) => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  const relistedHooks: (() => void)[] = [];
  const abort = new AbortController();

  // ---- the worker ----
  let relistWanted = false;
  let relistWaiters: (() => void)[] = [];
  const podsWanted = new Set<string>();
  const pumping = singleFlight<void>();
  let kickSoon: NodeJS.Immediate | undefined;
  /** What events said about IDs that no read has shown yet: ID → its pod, the state, reads so far. */
  const expected = new Map<string, { uid: string; state: State; tries: number }>();
  const expectTimers = new Set<NodeJS.Timeout>();

  function kick(): void {
    if (pumping.busy || abort.signal.aborted) return;
    void pumping
      .run(() => pump().catch((err: unknown) => log.error('PLEG worker failed', { err: describeError(err) })))
      .finally(() => {
        if (relistWanted || podsWanted.size > 0) kick();
      });
  }

  async function pump(): Promise<void> {
    while (!abort.signal.aborted && (relistWanted || podsWanted.size > 0)) {
      if (relistWanted) {
        relistWanted = false;
        podsWanted.clear(); // the relist reads every pod that changed
        const waiters = relistWaiters;
        relistWaiters = [];
        let complete = false;
        try {
          complete = await relistOnce();
        } finally {
          lastRelistEnd = now();
          for (const w of waiters) w();
          // What a failed relist (or pod read) left unseen is retried soon, whatever the period.
          schedule(complete ? periodMs : Math.min(periodMs, FAILED_RELIST_RETRY_MS));
          for (const fn of relistedHooks) fn();
        }
        continue;
      }
      const batch = [...podsWanted];
      podsWanted.clear();
      let next = 0;
      const lane = async () => {
        while (next < batch.length && !relistWanted && !abort.signal.aborted) {
          const uid = batch[next++];
          if (uid !== undefined) await readPod(uid);
        }
      };
      await Promise.all(Array.from({ length: Math.min(POD_READ_CONCURRENCY, batch.length) }, lane));
      // A relist requested meanwhile serves what this batch did not reach.
    }
  }

  function schedule(afterMs = periodMs): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (!started || abort.signal.aborted) return;
    const wait = Math.min(afterMs, Math.max(0, lastRelistEnd + afterMs - now()));
    timer = setTimeout(() => void request(), wait);
  }

  function request(): Promise<void> {
    if (abort.signal.aborted) return Promise.resolve();
    relistWanted = true;
    const done = new Promise<void>((resolve) => relistWaiters.push(resolve));
    kick();
    return done;
  }

  // ---- one pod, named by an event ----
  async function readPod(uid: string): Promise<void> {
    // A pod the last relist did not list yet is known by a status its worker cached.
    const summary = pods?.get(uid) ?? statusCache.get(uid);
    if (!summary) return;
    let status: RuntimePodStatus;
    try {
      status = await deps.runtime.getPodStatus(uid, summary.name, summary.namespace, abort.signal);
    } catch (err) {
      if (abort.signal.aborted) return;
      // The record stays as it was: a relist (asked for now) sees the change and retries the read.
      log.warn('PLEG failed to read pod status after an event', { podUID: uid, err: describeError(err) });
      relistWanted = true;
      return;
    }
    const before = records.get(uid) ?? new Map<string, State>();
    const after = statesOfStatus(status);
    const events = diffPod(uid, before, after);
    for (const id of before.keys()) if (!after.has(id)) owner.delete(id);
    for (const id of after.keys()) owner.set(id, uid);
    podList = undefined;
    if (after.size === 0) {
      records.delete(uid);
      pods?.delete(uid);
      statusCache.delete(uid);
    } else {
      records.set(uid, after);
      pods?.set(uid, summaryOfStatus(status));
      cache.set(uid, status);
    }
    for (const e of events) handler?.(e);
    checkExpected(uid, after);
  }

  function wantPod(uid: string): void {
    podsWanted.add(uid);
    // Started on the next turn, not now: the rest of a burst delivered in this turn (a hundred
    // exits, the same exit twice) joins the same batch instead of re-reading pods in flight.
    if (!kickSoon) {
      kickSoon = setImmediate(() => {
        kickSoon = undefined;
        kick();
      });
    }
  }

  /** After a read of `uid`: expectations it met are dropped, the others read again later. */
  function checkExpected(uid: string, seen: ReadonlyMap<string, State>): void {
    let again = 0;
    for (const [id, exp] of expected) {
      if (exp.uid !== uid) continue;
      const state = seen.get(id);
      if (state === undefined || state === exp.state) {
        expected.delete(id);
      } else if (exp.tries >= EXPECT_MAX_TRIES) {
        expected.delete(id);
        log.debug('PLEG: the runtime still does not show what an event said; left to the relist', {
          podUID: uid,
          containerId: id,
          expected: exp.state,
          seen: state,
        });
      } else {
        again = Math.max(again, backoffDelay(exp.tries, { initialMs: EXPECT_RETRY_INITIAL_MS }));
        exp.tries++;
      }
    }
    if (again === 0 || abort.signal.aborted) return;
    const t = setTimeout(() => {
      expectTimers.delete(t);
      if (!abort.signal.aborted) wantPod(uid);
    }, again);
    expectTimers.add(t);
  }

  // ---- the relist ----
  /** Whether the relist read everything (its list, and the status of every pod that changed). */
  async function relistOnce(): Promise<boolean> {
    const metrics = deps.metrics;
    if (!metrics) return relistAt(now());
    const startedAt = now();
    const interval = lastSuccessStart === undefined ? undefined : (startedAt - lastSuccessStart) / 1000;
    try {
      return await relistAt(startedAt);
    } finally {
      metrics.relisted((now() - startedAt) / 1000, interval);
    }
  }

  async function relistAt(startedAt: number): Promise<boolean> {
    let listed: RuntimePodSummary[];
    try {
      listed = await deps.runtime.listPods(abort.signal);
    } catch (err) {
      if (!abort.signal.aborted) log.error('PLEG relist failed', { err: describeError(err) });
      return false;
    }
    let complete = true;
    lastRelistOk = startedAt;
    deps.metrics?.seenActive?.();
    lastSuccessStart = startedAt;
    const current = new Map<string, Map<string, State>>();
    for (const p of listed) current.set(p.uid, statesOfSummary(p));
    const byUid = new Map(listed.map((p) => [p.uid, p]));
    for (const uid of new Set([...records.keys(), ...current.keys()])) {
      const after = current.get(uid) ?? new Map<string, State>();
      const events = diffPod(uid, records.get(uid) ?? new Map<string, State>(), after);
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
        cache.set(uid, { ...cached, timestamp: Math.max(cached.timestamp, startedAt) });
      } else if (pod) {
        try {
          cache.set(uid, await deps.runtime.getPodStatus(uid, pod.name, pod.namespace, abort.signal));
        } catch (err) {
          if (abort.signal.aborted) return false;
          // Keep the old record so the change is seen (and retried) at the next relist.
          complete = false;
          log.warn('PLEG failed to read pod status', { podUID: uid, err: describeError(err) });
          const old = records.get(uid);
          if (old) current.set(uid, old);
          else current.delete(uid);
          continue;
        }
      } else {
        statusCache.delete(uid);
      }
      for (const e of events) handler?.(e);
    }
    records = current;
    for (const [id, exp] of expected) {
      const state = current.get(exp.uid)?.get(id);
      if (state === undefined || state === exp.state) expected.delete(id);
    }
    owner = new Map();
    for (const [uid, states] of current) for (const id of states.keys()) owner.set(id, uid);
    pods = byUid;
    podList = undefined;
    const took = now() - startedAt;
    if (took > periodMs) log.debug('PLEG relist slow', { durationMs: took });
    return complete;
  }

  return {
    cache,
    start(onEvent) {
      handler = onEvent;
      started = true;
      lastRelistOk = now();
      void request();
    },
    async stop() {
      abort.abort();
      if (timer) clearTimeout(timer);
      if (kickSoon) clearImmediate(kickSoon);
      for (const t of expectTimers) clearTimeout(t);
      expectTimers.clear();
      for (const w of relistWaiters.splice(0)) w();
      await pumping.idle(); // its failures were logged where they happened
    },
    requestRelist: request,
    hintKnown(id, expect) {
      const uid = owner.get(id);
      if (uid === undefined) return false;
      if (expect !== undefined) {
        expected.delete(id); // re-insert: the newest last, the oldest dropped first
        expected.set(id, { uid, state: expect, tries: 0 });
        if (expected.size > EXPECT_MAX) {
          const oldest = expected.keys().next();
          if (!oldest.done) expected.delete(oldest.value);
        }
      }
      wantPod(uid);
      return true;
    },
    knows: (id) => owner.has(id),
    setPeriod(ms) {
      if (ms === periodMs) return;
      periodMs = ms;
      if (timer) schedule();
    },
    onRelisted(fn) {
      relistedHooks.push(fn);
    },
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
    runtimePods: () => (pods ? (podList ??= [...pods.values()]) : undefined),
  };
}
