import type { Pod, Probe } from '../api/types.ts';
import {
  DEFAULT_PROBE_FAILURE_THRESHOLD,
  DEFAULT_PROBE_PERIOD_SECONDS,
  DEFAULT_PROBE_SUCCESS_THRESHOLD,
} from '../config/defaults.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { ProbeContainer, ProbeTimers, ProbeType } from './types.ts';
import { wallAge } from '../util/clock.ts';

/** A worker's verdict for one container instance. `unknown`: startup not concluded yet. */
export type ProbeResult = 'success' | 'failure' | 'unknown';

/** What a worker needs from its manager. */
export interface WorkerHost {
  /** The pod's current spec (the worker reads deletionTimestamp and restartPolicy from it). */
  pod(): Pod | undefined;
  /** The current instance of the worker's container, as last reported by the runtime. */
  container(): ProbeContainer | undefined;
  /** Whether the startup probe of the current instance has succeeded (true without one). */
  isStarted(): boolean;
  /** One probe, retried when it errors; throws when it could not conclude. */
  probe(container: ProbeContainer, signal: AbortSignal): Promise<'success' | 'failure'>;
  /** The stored result for `containerId` changed (not called for the initial value of a new instance). */
  resultChanged(result: ProbeResult, containerId: string): void;
  /** Wall ms: compared with a container's startedAt, which the runtime stamps with wall time. */
  now(): number;
  /** Monotonic ms: periods, the initial delay once placed, the start-up spread. */
  monotonic(): number;
  random(): number;
  timers: ProbeTimers;
  /**
   * When the manager was created (monotonic ms): workers started within one period of it spread out
   * their first probe.
   */
  managerStartedAt: number;
  logger: Logger;
}

export interface Worker {
  readonly type: ProbeType;
  readonly spec: Probe;
  /** The stored result for this container instance, if this worker has one. */
  resultFor(containerId: string): ProbeResult | undefined;
  /** Probe as soon as the current probe (if any) is done, instead of at the next period. */
  trigger(): void;
  /**
   * Read-only, for `why`: the container instance probed, its stored result, and the run of equal
   * results just seen (`count` consecutive `result`s; reset for a new instance).
   */
  current():
    | { containerId: string; result: ProbeResult; run?: { result: 'success' | 'failure'; count: number } }
    | undefined;
  /** failureThreshold with the default applied. */
  readonly failureThreshold: number;
  /** Stops the loop and aborts a probe in flight; `done` resolves when the loop has exited. */
  stop(): void;
  readonly done: Promise<void>;
}

function positive(n: number | undefined, fallback: number): number {
  return n !== undefined && n > 0 ? n : fallback;
}

/**
 * Starts the periodic probing of one container by one probe (upstream prober worker). The loop
 * runs until `stop()`, or until the container exited for good (restartPolicy Never) or the pod is
 * being deleted (liveness/startup); a worker that ended keeps its last result until stopped.
 */
export function startWorker(type: ProbeType, spec: Probe, restartsAlways: boolean, host: WorkerHost): Worker {
  const initial: ProbeResult = type === 'readiness' ? 'failure' : type === 'liveness' ? 'success' : 'unknown';
  const periodMs = positive(spec.periodSeconds, DEFAULT_PROBE_PERIOD_SECONDS) * 1000;
  const successThreshold = positive(spec.successThreshold, DEFAULT_PROBE_SUCCESS_THRESHOLD);
  const failureThreshold = positive(spec.failureThreshold, DEFAULT_PROBE_FAILURE_THRESHOLD);
  const initialDelayMs = Math.max(0, spec.initialDelaySeconds ?? 0) * 1000;
  const abort = new AbortController();

  /**
   * The instance probed. `startedAt`: its start on the monotonic clock, placed (from the runtime's
   * wall stamp, through its age) the first time it is seen running, so a wall step neither holds
   * probes back for the step (upstream does: it compares startedAt with the wall clock) nor skips
   * the initial delay.
   */
  let current: { containerId: string; result: ProbeResult; startedAt?: number } | undefined;
  let onHold = false;
  let lastResult: 'success' | 'failure' | undefined;
  let resultRun = 0;
  let stopped = false;
  let pendingTrigger = false;
  let waiter: { wake: () => void; byTrigger: boolean } | undefined;

  function setResult(result: ProbeResult): void {
    if (!current || current.result === result) return;
    current.result = result;
    host.resultChanged(result, current.containerId);
  }

  /** Waits `ms`; stop() always ends the wait, trigger() only when `byTrigger`. */
  function wait(ms: number, byTrigger: boolean): Promise<void> {
    if (stopped) return Promise.resolve();
    if (byTrigger && pendingTrigger) {
      pendingTrigger = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const handle = host.timers.setTimeout(() => {
        waiter = undefined;
        resolve();
      }, ms);
      waiter = {
        byTrigger,
        wake: () => {
          host.timers.clearTimeout(handle);
          waiter = undefined;
          resolve();
        },
      };
    });
  }

  /** One round (upstream doProbe); false when the worker should end. */
  async function doProbe(): Promise<boolean> {
    const pod = host.pod();
    const c = host.container();
    // The container was not created yet, or was removed: wait for news.
    if (!pod || !c || c.containerId === '') return true;
    if (current?.containerId !== c.containerId) {
      // A new instance: its results start afresh, and a worker on hold resumes.
      current = { containerId: c.containerId, result: initial };
      onHold = false;
      lastResult = undefined;
      resultRun = 0;
    }
    if (onHold) return true;

    if (c.state !== 'running') {
      // Upstream marks every non-running instance failed. We do that for readiness, but for
      // liveness/startup only once it exited: a `created` or momentarily `unknown` instance that
      // then runs must not be killed for a failure it never had.
      if (type === 'readiness' || c.state === 'exited') setResult('failure');
      // A container that exited and will not be restarted needs no more probing.
      return !(c.state === 'exited' && !restartsAlways && pod.spec.restartPolicy === 'Never');
    }

    if (pod.metadata.deletionTimestamp && type !== 'readiness') {
      // Graceful deletion: liveness/startup must not kill the container while it shuts down.
      setResult('success');
      return false;
    }

    // initialDelaySeconds counts whole seconds since the instance started (as upstream truncates).
    current.startedAt ??= host.monotonic() - wallAge(c.startedAt, host.now());
    if (Math.trunc((host.monotonic() - current.startedAt) / 1000) * 1000 < initialDelayMs) return true;

    // Startup gates the others: it probes until the container started, they only after.
    if (host.isStarted() ? type === 'startup' : type !== 'startup') return true;

    const probed = c.containerId;
    let result: 'success' | 'failure';
    try {
      result = await host.probe(c, abort.signal);
    } catch (err) {
      // The probe could not conclude (already reported by the prober): no result this round.
      if (!stopped) host.logger.debug('probe result discarded', { error: describeError(err) });
      return true;
    }
    if (stopped || current.containerId !== probed) return true;

    if (lastResult === result) {
      resultRun++;
    } else {
      lastResult = result;
      resultRun = 1;
    }
    if (
      (result === 'failure' && resultRun < failureThreshold) ||
      (result === 'success' && resultRun < successThreshold)
    ) {
      return true; // below the threshold: the stored result stays
    }
    setResult(result);
    if (type !== 'readiness' && result === 'failure') {
      // The container will be killed: probe nothing until a new instance appears.
      onHold = true;
      resultRun = 0;
    }
    return true;
  }

  async function loop(): Promise<void> {
    // Let the manager register this worker before its first round looks at the manager's state.
    await Promise.resolve();
    // Right after a kubelet (re)start every worker starts at once: spread their first probes over a period.
    if (periodMs > host.monotonic() - host.managerStartedAt) await wait(host.random() * periodMs, false);
    while (!stopped) {
      const began = host.monotonic();
      // A trigger asks for one round starting after it: this one.
      pendingTrigger = false;
      let keepGoing = true;
      try {
        keepGoing = await doProbe();
      } catch (err) {
        // A bug, not a probe outcome: keep the worker alive, as upstream does after a panic.
        host.logger.error('probe worker round failed', { error: describeError(err) });
      }
      if (stopped) break;
      if (!keepGoing) {
        host.logger.debug('probe worker finished');
        break;
      }
      await wait(Math.max(0, periodMs - (host.monotonic() - began)), true);
    }
  }

  const done = loop();

  return {
    type,
    spec,
    done,
    resultFor(containerId) {
      return current?.containerId === containerId ? current.result : undefined;
    },
    current() {
      if (!current) return undefined;
      return {
        containerId: current.containerId,
        result: current.result,
        ...(lastResult ? { run: { result: lastResult, count: resultRun } } : {}),
      };
    },
    failureThreshold,
    trigger() {
      if (waiter?.byTrigger) waiter.wake();
      else pendingTrigger = true;
    },
    stop() {
      if (stopped) return;
      stopped = true;
      abort.abort(new Error('probe worker stopped'));
      waiter?.wake();
    },
  };
}
