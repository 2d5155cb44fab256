/**
 * The node shutdown manager (upstream pkg/kubelet/nodeshutdown, 1.20 with 1.21's admission and
 * node status sync): holds a logind delay inhibitor lock for shutdown; when logind announces a
 * shutdown, marks the node as shutting down, kills pods (the others first, critical ones last) and
 * then releases the lock so the shutdown goes on. A cancelled shutdown takes the lock again.
 */
import { podFullName, type KubeletPod } from '../api/types.ts';
import { LOGIND_RECONNECT_PERIOD_MS } from '../config/defaults.ts';
import { formatGoDuration } from '../config/duration.ts';
import type { PodAdmitHandler } from '../kubelet/index.ts';
import { sleep } from '../util/abort.ts';
import { KubeletError, describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { isCriticalPod } from '../api/pod-resources.ts';
import type { InhibitLock, Logind, ShutdownWatch } from './logind.ts';
import { backoffSteps } from '../util/backoff.ts';

/** Upstream nodeshutdown's nodeShutdownReason and nodeShutdownMessage (1.20, 1.21). */
export const NODE_SHUTDOWN_REASON = 'Shutdown';
export const NODE_SHUTDOWN_MESSAGE = 'Node is shutting, evicting pods';
/** Upstream 1.21 nodeShutdownNotAdmitMessage (admission reason: NODE_SHUTDOWN_REASON). */
export const NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE =
  'Node is in progress of shutting down, not admitting any new pods';
/** The error upstream ShutdownStatus returns while the node shuts down: the Ready condition's message. */
export const NODE_SHUTTING_DOWN_ERROR = 'node is shutting down';

/** How long after asking logind to reload its configuration it is asked again for the delay. */
const RELOAD_SETTLE_MS = 500;
/** Longest pause between attempts to watch logind again (ours; upstream retries every second). */
const MAX_RECONNECT_PERIOD_MS = 60_000;

/** The status a pod killed for a node shutdown gets (upstream: phase Failed, reason, message). */
export interface ShutdownPodStatus {
  readonly phase: 'Failed';
  readonly reason: string;
  readonly message: string;
}

/**
 * Kills one pod with the given grace period and gives it `status` (upstream eviction.KillPodFunc).
 * Resolves once the pod is stopped; a rejection is logged and does not stop the other kills.
 */
export type KillPodFunc = (
  pod: KubeletPod,
  gracePeriodSeconds: number,
  status: ShutdownPodStatus,
) => Promise<void>;

export interface ShutdownManagerOptions {
  /** shutdownGracePeriod; 0 turns the manager off. */
  shutdownGracePeriodMs: number;
  /** shutdownGracePeriodCriticalPods; at most shutdownGracePeriodMs (config validation). */
  shutdownGracePeriodCriticalPodsMs: number;
  logind: Logind;
  /** The pods to kill when the node shuts down (upstream GetActivePods). */
  activePods: () => readonly KubeletPod[];
  killPod: KillPodFunc;
  /**
   * Called with each PrepareForShutdown, after `shuttingDown()` changed (upstream 1.21 syncs the
   * node status there, so the Ready condition turns at once). Must not throw.
   */
  onShuttingDownChange?: (shuttingDown: boolean) => void;
  logger: Logger;
}

/** Where the manager is; `running` once it holds the lock and watches logind. */
export type ShutdownManagerState =
  | { state: 'idle' }
  | { state: 'disabled'; reason: string }
  | { state: 'starting' }
  | { state: 'running'; shuttingDown: boolean; inhibitorHeld: boolean; watching: boolean }
  | { state: 'stopped' };

export interface ShutdownManager {
  /**
   * Checks logind's InhibitDelayMaxSec (raising it if shorter than shutdownGracePeriod), takes the
   * inhibitor lock and watches PrepareForShutdown. Never rejects: when logind is absent or refuses,
   * the failure is logged and the manager stays `disabled` (the kubelet carries on, as upstream).
   */
  start(signal?: AbortSignal): Promise<ShutdownManagerState>;
  /** True from PrepareForShutdown(true) until PrepareForShutdown(false). */
  shuttingDown(): boolean;
  /** The Ready condition's error while shutting down (upstream ShutdownStatus), else undefined. */
  readyConditionError(): string | undefined;
  /** Refuses new pods while the node shuts down (upstream 1.21's shutdown admit handler). */
  readonly admitHandler: PodAdmitHandler;
  status(): ShutdownManagerState;
  /** Stops watching, abandons kills not yet started, releases the lock. Idempotent. */
  stop(): Promise<void>;
}

export function createShutdownManager(opts: ShutdownManagerOptions): ShutdownManager {
  const log = opts.logger.child({ component: 'node-shutdown' });
  const { logind } = opts;
  const totalMs = opts.shutdownGracePeriodMs;
  const criticalMs = opts.shutdownGracePeriodCriticalPodsMs;
  const killStatus: ShutdownPodStatus = {
    phase: 'Failed',
    reason: NODE_SHUTDOWN_REASON,
    message: NODE_SHUTDOWN_MESSAGE,
  };

  type Phase = 'idle' | 'disabled' | 'starting' | 'running' | 'stopped';
  let phase: Phase = 'idle';
  let disabledReason = '';
  let shuttingDownNow = false;
  let lock: InhibitLock | undefined;
  let watch: ShutdownWatch | undefined;
  let starting: Promise<ShutdownManagerState> | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let reconnecting: Promise<void> | undefined;
  const reconnectDelays = backoffSteps({
    initialMs: LOGIND_RECONNECT_PERIOD_MS,
    maxMs: MAX_RECONNECT_PERIOD_MS,
  });
  /** PrepareForShutdown events, handled one at a time in order (upstream: one goroutine). */
  let events: Promise<void> = Promise.resolve();
  const stopper = new AbortController();
  const stopSignal = stopper.signal;
  const stopped = (): boolean => phase === 'stopped';
  const fmt = formatGoDuration;

  function status(): ShutdownManagerState {
    switch (phase) {
      case 'disabled':
        return { state: 'disabled', reason: disabledReason };
      case 'running':
        return {
          state: 'running',
          shuttingDown: shuttingDownNow,
          inhibitorHeld: lock?.held() ?? false,
          watching: watch !== undefined,
        };
      default:
        return { state: phase };
    }
  }

  // Only events set shuttingDownNow, and they are only handled while starting or running.
  const shuttingDown = (): boolean => !stopped() && shuttingDownNow;

  async function ensureInhibitDelay(signal: AbortSignal): Promise<void> {
    const current = await logind.inhibitDelayMaxMs(signal);
    if (totalMs <= current) return;
    log.info('logind InhibitDelayMaxSec is shorter than shutdownGracePeriod; raising it', {
      inhibitDelayMax: fmt(current),
      shutdownGracePeriod: fmt(totalMs),
    });
    await logind.overrideInhibitDelay(totalMs);
    await logind.reloadLogindConf(signal);
    let updated = await logind.inhibitDelayMaxMs(signal);
    if (updated < totalMs) {
      // logind applies a reload asynchronously (SIGHUP): ask once more after a moment.
      await sleep(RELOAD_SETTLE_MS, signal);
      updated = await logind.inhibitDelayMaxMs(signal);
    }
    if (updated < totalMs) {
      throw new KubeletError(
        'FailedPrecondition',
        'raise logind InhibitDelayMaxSec',
        `it is ${fmt(updated)} after the override, less than shutdownGracePeriod (${fmt(totalMs)})`,
      );
    }
  }

  async function takeLock(signal: AbortSignal): Promise<void> {
    if (lock?.held()) return;
    const taken: { lock?: InhibitLock } = {};
    taken.lock = await logind.inhibitShutdown({ signal, onLost: (err) => onLockLost(taken.lock, err) });
    if (stopped()) {
      await taken.lock.release();
      return;
    }
    lock = taken.lock;
  }

  function onLockLost(lost: InhibitLock | undefined, err: Error): void {
    if (lost === undefined || lock !== lost) return;
    lock = undefined;
    if (stopped() || shuttingDownNow) {
      log.warn('the shutdown inhibitor lock went away', { err: err.message });
      return;
    }
    log.error('lost the shutdown inhibitor lock; taking it again', { err: err.message });
    enqueue(() => retakeLock());
  }

  async function retakeLock(): Promise<void> {
    if (stopped() || shuttingDownNow) return;
    try {
      await takeLock(stopSignal);
    } catch (err) {
      log.error('could not take the shutdown inhibitor lock; a shutdown will not wait for pods', {
        err: describeError(err),
      });
    }
  }

  async function releaseLock(): Promise<void> {
    const held = lock;
    lock = undefined;
    await held?.release();
  }

  async function startWatch(signal: AbortSignal): Promise<void> {
    const w = await logind.watchShutdown(
      {
        onPrepareForShutdown: (active) => enqueue(() => handleEvent(active)),
        onError: (err) => onWatchError(err),
      },
      signal,
    );
    if (stopped()) {
      await w.stop();
      return;
    }
    watch = w;
  }

  function onWatchError(err: Error): void {
    watch = undefined;
    if (stopped()) return;
    const delayMs = reconnectDelays.step();
    log.error('stopped receiving PrepareForShutdown from logind; watching again soon', {
      err: err.message,
      retryIn: fmt(delayMs),
    });
    clearTimeout(reconnectTimer);
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      reconnecting = reconnect().finally(() => (reconnecting = undefined));
    }, delayMs);
  }

  async function reconnect(): Promise<void> {
    if (stopped()) return;
    try {
      await startWatch(stopSignal);
    } catch (err) {
      onWatchError(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    if (stopped()) return;
    reconnectDelays.reset();
    log.info('watching logind PrepareForShutdown again');
    enqueue(() => retakeLock());
  }

  function enqueue(work: () => Promise<void>): void {
    events = events.then(work).catch((err: unknown) => {
      log.error('node shutdown event handling failed', { err: describeError(err) });
    });
  }

  async function handleEvent(active: boolean): Promise<void> {
    // 'starting': the watch is up (and the lock held) but start() has not returned yet.
    if (phase !== 'running' && phase !== 'starting') return;
    log.info('logind PrepareForShutdown', { shuttingDown: active });
    shuttingDownNow = active;
    try {
      opts.onShuttingDownChange?.(active);
    } catch (err) {
      log.error('onShuttingDownChange failed', { err: describeError(err) });
    }
    if (active) await processShutdown();
    else await retakeLock();
  }

  /** Upstream processShutdownEvent: every active pod killed at once, critical ones after a wait. */
  async function processShutdown(): Promise<void> {
    let pods: readonly KubeletPod[] = [];
    try {
      pods = opts.activePods();
    } catch (err) {
      log.error('could not list the active pods to kill for node shutdown', { err: describeError(err) });
    }
    const nonCriticalMs = Math.max(0, totalMs - criticalMs);
    log.info('node is shutting down: killing pods', {
      pods: pods.length,
      gracePeriod: fmt(nonCriticalMs),
      criticalPodsGracePeriod: fmt(criticalMs),
    });
    const kills = Promise.all(pods.map((pod) => killForShutdown(pod, nonCriticalMs)));
    const timer = new AbortController();
    const outcome = await Promise.race([
      kills.then(() => 'done' as const),
      sleep(totalMs, AbortSignal.any([timer.signal, stopSignal])).then(
        () => 'timeout' as const,
        () => 'ended' as const,
      ),
    ]);
    timer.abort();
    if (outcome === 'timeout') {
      log.warn('pod kills did not finish within shutdownGracePeriod; letting the shutdown go on', {
        shutdownGracePeriod: fmt(totalMs),
      });
    }
    if (stopped()) return;
    // Said before it is done: once the lock is gone logind goes on at once, and systemd may stop
    // the kubelet before a line written after the release reaches the log.
    log.info('releasing the shutdown inhibitor lock: the node will shut down shortly');
    await releaseLock();
  }

  /** Never rejects: a failed kill is logged with its pod. */
  async function killForShutdown(pod: KubeletPod, nonCriticalMs: number): Promise<void> {
    const podLog = log.child({ pod: podFullName(pod), podUID: pod.metadata.uid });
    const critical = isCriticalPod(pod);
    // Upstream int64(duration.Seconds()): whole seconds, truncated.
    let gracePeriodSeconds = Math.trunc((critical ? criticalMs : nonCriticalMs) / 1000);
    if (critical && nonCriticalMs > 0) {
      try {
        await sleep(nonCriticalMs, stopSignal);
      } catch (err) {
        podLog.info('not killing critical pod: the node shutdown manager stopped', {
          err: describeError(err),
        });
        return;
      }
    }
    const own = pod.spec.terminationGracePeriodSeconds;
    if (own !== undefined && own <= gracePeriodSeconds) gracePeriodSeconds = Math.max(0, own);
    podLog.info('killing pod for node shutdown', { gracePeriodSeconds, critical });
    try {
      await opts.killPod(pod, gracePeriodSeconds, killStatus);
      podLog.info('killed pod for node shutdown');
    } catch (err) {
      podLog.error('failed to kill pod for node shutdown', { err: describeError(err) });
    }
  }

  async function doStart(signal: AbortSignal): Promise<ShutdownManagerState> {
    try {
      await ensureInhibitDelay(signal);
      await takeLock(signal);
      await startWatch(signal);
    } catch (err) {
      await releaseLock();
      if (stopped()) return status();
      phase = 'disabled';
      disabledReason = describeError(err);
      log.error('graceful node shutdown is disabled: the node shutdown manager could not start', {
        err: disabledReason,
        shutdownGracePeriod: fmt(totalMs),
      });
      return status();
    }
    if (stopped()) return status();
    phase = 'running';
    log.info('node shutdown manager started: holding a delay inhibitor lock for shutdown', {
      shutdownGracePeriod: fmt(totalMs),
      shutdownGracePeriodCriticalPods: fmt(criticalMs),
    });
    return status();
  }

  return {
    start(signal) {
      if (phase !== 'idle') return Promise.resolve(status());
      if (totalMs <= 0) {
        phase = 'disabled';
        disabledReason = 'shutdownGracePeriod is 0';
        log.info('graceful node shutdown is off (shutdownGracePeriod is 0)');
        return Promise.resolve(status());
      }
      phase = 'starting';
      const startSignal = signal ? AbortSignal.any([signal, stopSignal]) : stopSignal;
      starting = doStart(startSignal).finally(() => (starting = undefined));
      return starting;
    },
    shuttingDown,
    readyConditionError: () => (shuttingDown() ? NODE_SHUTTING_DOWN_ERROR : undefined),
    admitHandler: {
      name: 'NodeShutdown',
      admit: () =>
        shuttingDown()
          ? { admit: false, reason: NODE_SHUTDOWN_REASON, message: NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE }
          : { admit: true },
    },
    status,
    async stop() {
      if (phase === 'stopped') return;
      const wasActive = phase === 'running' || phase === 'starting';
      phase = 'stopped';
      stopper.abort(new KubeletError('Canceled', 'node shutdown manager', 'stopped'));
      clearTimeout(reconnectTimer);
      await starting;
      await reconnecting;
      const w = watch;
      watch = undefined;
      await w?.stop();
      await events;
      await releaseLock();
      if (wasActive) log.info('node shutdown manager stopped');
    },
  };
}
