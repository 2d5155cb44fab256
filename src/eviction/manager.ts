/**
 * The eviction manager (upstream pkg/kubelet/eviction managerImpl): every monitoring interval it
 * reads the stats summary, updates the pressure conditions, evicts pods that breach their local
 * storage limits, and under a crossed threshold first reclaims node-level resources (dead
 * containers, unused images) and then evicts at most one pod, waiting for it to be cleaned up.
 */
import type { EventRecorder, EventType } from '../api/events.ts';
import type { KubeletPod, Pod } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import { isCriticalPod } from '../api/pod-resources.ts';
import { podQOSClass } from '../api/qos.ts';
import type { Summary } from '../stats/index.ts';
import { sleep } from '../util/abort.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { localStorageBreach } from './local-storage.ts';
import { makeObservations, type Observations, type PodStatsLookup } from './observations.ts';
import { evictionMessage, rankerFor } from './ranking.ts';
import {
  isHardThreshold,
  SIGNAL_RESOURCE,
  type PressureCondition,
  type Signal,
  type Threshold,
} from './signals.ts';
import {
  INITIAL_THRESHOLD_STATE,
  step,
  thresholdsMet,
  thresholdToReclaim,
  type ThresholdState,
} from './threshold-state.ts';
import { monotonicNow } from '../util/clock.ts';

/** upstream Reason: the status reason of an evicted pod and of a pod refused under pressure. */
export const EVICTED_REASON = 'Evicted';
/** upstream evictionMonitoringPeriod. */
export const EVICTION_MONITORING_PERIOD_MS = 10_000;
/** upstream podCleanupTimeout / podCleanupPollFreq. */
const POD_CLEANUP_TIMEOUT_MS = 30_000;
const POD_CLEANUP_POLL_MS = 1_000;

export interface EvictionConfig {
  thresholds: readonly Threshold[];
  /** evictionPressureTransitionPeriod: a condition stays on this long after its last crossing. */
  pressureTransitionPeriodMs: number;
  /** evictionMaxPodGracePeriod: the grace period of a soft eviction, in seconds. */
  maxPodGracePeriodSeconds: number;
  monitoringIntervalMs?: number;
}

export interface EvictionDeps {
  /** A fresh stats summary (times in ms). */
  summary(signal: AbortSignal): Promise<Summary<number>>;
  /** Whether the image filesystem is separate from the root dir's (upstream HasDedicatedImageFs). */
  hasDedicatedImageFs(signal: AbortSignal): Promise<boolean>;
  /** Pods admitted and not terminated (upstream GetActivePods). */
  activePods(): KubeletPod[];
  /**
   * Stops the pod now with the given grace period and reports it Failed with the reason and
   * message (upstream killPodNow); resolves once its containers are stopped.
   */
  killPod(
    pod: KubeletPod,
    gracePeriodSeconds: number,
    status: { reason: string; message: string },
  ): Promise<void>;
  /** The pod's containers are gone and its volumes cleaned up (upstream podResourcesAreReclaimed). */
  podCleanedUp(uid: string): boolean;
  /** Node-level reclaim under disk pressure: dead containers, then unused images. */
  deleteAllUnusedContainers(): Promise<void>;
  deleteUnusedImages(): Promise<void>;
  recorder: EventRecorder;
  nodeEvent(type: EventType, reason: string, message: string): void;
  /** kubelet_evictions{eviction_signal}. */
  recordEviction?(signal: string): void;
  /**
   * kubelet_eviction_stats_age_seconds{eviction_signal}: before evicting for a threshold, how old
   * the stats of each threshold met are (upstream observes it after ranking the pods).
   */
  recordEvictionStatsAge?(signal: string, seconds: number): void;
  /** The wall clock (ms since the epoch) the stats' times are compared with; Date.now by default. */
  now?: () => number;
  logger: Logger;
  /**
   * Monotonic ms (util/clock's by default): soft grace periods, the pressure transition period and
   * the cleanup wait (upstream's clock.Now() readings carry a monotonic one). Never the wall clock.
   */
  monotonic?: () => number;
  /** Waits; tests replace it. Resolves early (never rejects) when the signal aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface PressureState {
  memory: boolean;
  disk: boolean;
  pid: boolean;
}

export interface EvictionManager {
  start(): void;
  stop(): Promise<void>;
  /** The node's pressure conditions as of the last pass (for the node status). */
  pressure(): PressureState;
  /** Upstream Admit: refuse pods the node cannot take under pressure. */
  admit(pod: Pod): { admit: boolean; reason?: string; message?: string };
  /** One pass (upstream synchronize); the pods it evicted. Exposed for tests. */
  synchronize(signal?: AbortSignal): Promise<KubeletPod[]>;
}

const MEMORY_PRESSURE_TAINT = 'node.kubernetes.io/memory-pressure';

/** upstream TolerationsTolerateTaint for the NoSchedule memory-pressure taint. */
function toleratesMemoryPressure(pod: Pod): boolean {
  return (pod.spec.tolerations ?? []).some((t) => {
    if (t.effect !== undefined && t.effect !== 'NoSchedule') return false;
    if (!t.key) return t.operator === 'Exists';
    if (t.key !== MEMORY_PRESSURE_TAINT) return false;
    return t.operator === 'Exists' || !t.value;
  });
}

/** util sleep, resolving (not rejecting) when the signal aborts. */
const defaultSleep = (ms: number, signal: AbortSignal): Promise<void> =>
  sleep(ms, signal).catch(() => undefined);

export function createEvictionManager(cfg: EvictionConfig, deps: EvictionDeps): EvictionManager {
  const log = deps.logger.child({ component: 'eviction' });
  const now = deps.monotonic ?? monotonicNow;
  const wallNow = deps.now ?? Date.now;
  const sleep = deps.sleep ?? defaultSleep;
  const interval = cfg.monitoringIntervalMs ?? EVICTION_MONITORING_PERIOD_MS;
  const stopper = new AbortController();
  let state: ThresholdState = INITIAL_THRESHOLD_STATE;
  let conditions: PressureCondition[] = [];
  let dedicatedImageFs: boolean | undefined;
  let loop: Promise<void> | undefined;

  async function evict(
    pod: KubeletPod,
    gracePeriodSeconds: number,
    message: string,
    metricSignal: string,
  ): Promise<boolean> {
    const plog = log.child({ pod: podFullName(pod), podUID: pod.metadata.uid });
    if (isCriticalPod(pod)) {
      plog.error('eviction manager: cannot evict a critical pod');
      return false;
    }
    deps.recorder.event(pod, 'Warning', EVICTED_REASON, message);
    plog.warn('eviction manager: evicting pod', { message, gracePeriodSeconds });
    try {
      await deps.killPod(pod, gracePeriodSeconds, { reason: EVICTED_REASON, message });
      plog.info('eviction manager: pod is evicted successfully');
    } catch (err) {
      plog.error('eviction manager: pod failed to evict', { err: describeError(err) });
    }
    deps.recordEviction?.(metricSignal);
    return true;
  }

  async function localStorageEviction(pods: KubeletPod[], lookup: PodStatsLookup, dedicated: boolean) {
    const evicted: KubeletPod[] = [];
    for (const pod of pods) {
      const stats = lookup(pod.metadata.uid);
      if (!stats) continue;
      let breach;
      try {
        breach = localStorageBreach(pod, stats, dedicated);
      } catch (err) {
        log.error('eviction manager: cannot judge the pod’s local storage', {
          pod: podFullName(pod),
          podUID: pod.metadata.uid,
          err: describeError(err),
        });
        continue;
      }
      if (breach && (await evict(pod, 0, breach.message, breach.signal))) evicted.push(pod);
    }
    return evicted;
  }

  /** upstream reclaimNodeLevelResources: true when no threshold is crossed after reclaiming. */
  async function reclaimNodeLevel(signal: Signal, abort: AbortSignal): Promise<boolean> {
    if (SIGNAL_RESOURCE[signal] !== 'ephemeral-storage' && SIGNAL_RESOURCE[signal] !== 'inodes') return false;
    // With a dedicated image filesystem, nodefs pressure has nothing node-level to reclaim.
    if (dedicatedImageFs && signal.startsWith('nodefs.')) return false;
    for (const [what, f] of [
      ['dead containers', () => deps.deleteAllUnusedContainers()],
      ['unused images', () => deps.deleteUnusedImages()],
    ] as const) {
      try {
        await f();
      } catch (err) {
        log.warn(`eviction manager: unexpected error when reclaiming ${what}`, { err: describeError(err) });
      }
    }
    try {
      const { observations } = makeObservations(await deps.summary(abort));
      return thresholdsMet(cfg.thresholds, observations, false).length === 0;
    } catch (err) {
      log.error('eviction manager: failed to get summary stats after resource reclaim', {
        err: describeError(err),
      });
      return false;
    }
  }

  async function synchronize(abort: AbortSignal = stopper.signal): Promise<KubeletPod[]> {
    if (dedicatedImageFs === undefined) {
      try {
        dedicatedImageFs = await deps.hasDedicatedImageFs(abort);
      } catch (err) {
        log.warn('eviction manager: cannot tell whether the image filesystem is dedicated', {
          err: describeError(err),
        });
        return [];
      }
    }
    const active = deps.activePods();
    let summary: Summary<number>;
    try {
      summary = await deps.summary(abort);
    } catch (err) {
      log.error('eviction manager: failed to get summary stats', { err: describeError(err) });
      return [];
    }
    const { observations, podStats } = makeObservations(summary);
    const result = step(cfg.thresholds, cfg.pressureTransitionPeriodMs, state, observations, now());
    logTransitions(conditions, result.conditions, observations);
    state = result.state;
    conditions = result.conditions;

    const local = await localStorageEviction(active, podStats, dedicatedImageFs);
    if (local.length > 0) return local;

    const threshold = thresholdToReclaim(result.actionable);
    if (!threshold) return [];
    const resource = SIGNAL_RESOURCE[threshold.signal];
    log.warn('eviction manager: attempting to reclaim', { resource, signal: threshold.signal });
    deps.nodeEvent('Warning', 'EvictionThresholdMet', `Attempting to reclaim ${resource}`);
    if (await reclaimNodeLevel(threshold.signal, abort)) {
      log.info('eviction manager: able to reduce pressure without evicting pods', { resource });
      return [];
    }
    if (active.length === 0) {
      log.error('eviction manager: eviction thresholds have been met, but no pods are active to evict');
      return [];
    }
    const ranked = rankerFor(threshold.signal, podStats, dedicatedImageFs)(active);
    log.info('eviction manager: pods ranked for eviction', { pods: ranked.map(podFullName) });
    // Upstream: the age of the metrics of the thresholds met that this eviction uses (a zero time: none).
    for (const t of result.actionable) {
      const time = observations.get(t.signal)?.time ?? 0;
      if (time > 0) deps.recordEvictionStatsAge?.(t.signal, (wallNow() - time) / 1000);
    }
    const grace = isHardThreshold(threshold) ? 0 : cfg.maxPodGracePeriodSeconds;
    for (const pod of ranked) {
      const { message } = evictionMessage(resource, pod, podStats);
      if (await evict(pod, grace, message, threshold.signal)) return [pod];
    }
    log.info('eviction manager: unable to evict any pods from the node');
    return [];
  }

  function logTransitions(before: PressureCondition[], after: PressureCondition[], obs: Observations): void {
    const observed = Object.fromEntries(
      [...obs].map(([s, o]) => [s, { available: o.available, capacity: o.capacity }]),
    );
    for (const c of after)
      if (!before.includes(c)) log.warn('eviction manager: node condition on', { condition: c, observed });
    for (const c of before)
      if (!after.includes(c)) log.info('eviction manager: node condition off', { condition: c });
  }

  async function waitForCleanup(pods: KubeletPod[]): Promise<void> {
    const deadline = now() + POD_CLEANUP_TIMEOUT_MS;
    while (!stopper.signal.aborted) {
      await sleep(POD_CLEANUP_POLL_MS, stopper.signal);
      if (pods.every((p) => deps.podCleanedUp(p.metadata.uid))) {
        log.info('eviction manager: pods successfully cleaned up', { pods: pods.map(podFullName) });
        return;
      }
      if (now() >= deadline) {
        log.warn('eviction manager: timed out waiting for pods to be cleaned up', {
          pods: pods.map(podFullName),
        });
        return;
      }
    }
  }

  async function run(): Promise<void> {
    while (!stopper.signal.aborted) {
      let evicted: KubeletPod[] = [];
      try {
        evicted = await synchronize();
      } catch (err) {
        log.error('eviction manager: pass failed', { err: describeError(err) });
      }
      if (evicted.length > 0) await waitForCleanup(evicted);
      else await sleep(interval, stopper.signal);
    }
  }

  return {
    start() {
      if (cfg.thresholds.length === 0) log.info('eviction manager: no thresholds; local storage limits only');
      loop ??= run();
    },
    async stop() {
      stopper.abort();
      await loop;
    },
    pressure: () => ({
      memory: conditions.includes('MemoryPressure'),
      disk: conditions.includes('DiskPressure'),
      pid: conditions.includes('PIDPressure'),
    }),
    admit(pod) {
      if (conditions.length === 0 || isCriticalPod(pod)) return { admit: true };
      if (conditions.length === 1 && conditions[0] === 'MemoryPressure') {
        if (podQOSClass(pod) !== 'BestEffort' || toleratesMemoryPressure(pod)) return { admit: true };
      }
      return {
        admit: false,
        reason: EVICTED_REASON,
        message: `The node had condition: [${conditions.join(' ')}]. `,
      };
    },
    synchronize: (signal) => synchronize(signal),
  };
}
