import type { EventRecorder } from '../api/events.ts';
import type { KubeletPod } from '../api/types.ts';
import type { Logger } from '../util/logger.ts';
import type { ExecFn } from './exec-probe.ts';
import type { TimelineRecorder } from '../timeline/index.ts';

export type ProbeType = 'liveness' | 'readiness' | 'startup';

/** A container as the runtime last reported it: the current (newest) instance of one container name. */
export interface ProbeContainer {
  name: string;
  containerId: string;
  state: 'running' | 'exited' | 'created' | 'unknown';
  /** When the current instance started running, in ms since the epoch. */
  startedAt: number;
}

/** What the kubelet should do about a container whose liveness or startup probe failed. */
export interface RestartReason {
  /** `Container <name> failed liveness probe, will be restarted` (no suffix under restartPolicy Never). */
  message: string;
  /** The failed probe's own terminationGracePeriodSeconds, when it sets one. */
  terminationGracePeriodSeconds?: number;
  /** Which probe failed. */
  probe: 'liveness' | 'startup';
}

/**
 * Runs liveness, readiness and startup probes (upstream prober.Manager): one worker per (pod,
 * container, probe type), results kept per container instance (a new container ID starts afresh:
 * readiness false, liveness passing, startup not yet succeeded). Every method is synchronous and
 * cheap; probing happens on the workers' own timers. Never throws.
 */
export interface ProbeManager {
  /**
   * The pod's spec, seen or updated (idempotent; call on every sync, before `updateContainers`).
   * Starts a worker for each probe in the spec, restarts one whose probe changed, stops those whose
   * probe is gone. Regular containers and sidecar init containers (`restartPolicy: Always`) are probed.
   */
  addPod(pod: KubeletPod): void;
  /**
   * The pod is terminating (upstream StopLivenessAndStartup): stops its liveness and startup workers
   * (a container shutting down must not be killed for failing them) while readiness keeps probing,
   * so Ready turns False as containers stop and endpoints drain. The stopped workers keep their last
   * result. Call `removePod` once the containers are stopped.
   */
  stopLivenessAndStartup(uid: string): void;
  /** Pod gone: stops its workers (aborting probes in flight) and forgets its results. */
  removePod(uid: string): void;
  /**
   * After each runtime status read: the current container of each name. Ignored for a pod not
   * added. A container that (re)starts running has its readiness probed promptly.
   */
  updateContainers(uid: string, containers: ProbeContainer[]): void;
  /**
   * Readiness for the status: false unless running and started; then true without a readiness
   * probe, else the last readiness result (false until the first success).
   */
  isReady(uid: string, containerName: string): boolean;
  /** Started for the status: false unless running; true without a startup probe, else once it succeeded. */
  isStarted(uid: string, containerName: string): boolean;
  /**
   * Set for a running container whose liveness (or startup) probe failed failureThreshold times in
   * a row: the kubelet kills it (and restarts it per restartPolicy). The worker then holds until a
   * new container ID appears.
   */
  restartReason(uid: string, containerName: string): RestartReason | undefined;
  /**
   * Read-only, for `why`: each probe worker of the pod with its stored result for the current
   * container instance, the failures in a row, and its last probe's output. Empty for an unknown pod.
   */
  describe(uid: string): ProbeState[];
  /** Stops every worker and waits for probes in flight to wind down. */
  stop(): Promise<void>;
}

/** One probe worker as `ProbeManager.describe` reports it. */
export interface ProbeState {
  container: string;
  probe: ProbeType;
  /** Stored result for the current instance; undefined when no instance is probed yet. */
  result: 'success' | 'failure' | 'unknown' | undefined;
  /** Failures in a row of the current instance (0 after a success). */
  consecutiveFailures: number;
  failureThreshold: number;
  /** The last probe of the current instance: `error` when it could not conclude. */
  lastResult?: 'success' | 'failure' | 'error';
  lastOutput?: string;
  /** Wall ms of the last probe. */
  lastAt?: number;
}

/** Timer functions; tests pass a fake clock's. */
export interface ProbeTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The labels of upstream prober_probe_total, which identify one probe worker. */
export interface ProbeMetricLabels {
  /** Upstream's spelling: `Liveness`, `Readiness`, `Startup`. */
  probeType: 'Liveness' | 'Readiness' | 'Startup';
  container: string;
  pod: string;
  namespace: string;
  podUID: string;
}

/** Probe counts (upstream prober_probe_total); every method must be cheap and must not throw. */
export interface ProbeMetrics {
  /**
   * A probe concluded (after its retries). Probes that could not conclude are not counted, as
   * upstream discards them; `unknown` is never reported today and is there for upstream parity.
   */
  probed(labels: ProbeMetricLabels, result: 'successful' | 'failed' | 'unknown'): void;
  /** The worker stopped: its series should go (upstream deletes them when the worker exits). */
  workerStopped(labels: ProbeMetricLabels): void;
}

export interface ProbeManagerDeps {
  /** CRI ExecSync. */
  exec: ExecFn;
  /** The pod's IP, for httpGet/tcpSocket without a host and for grpc. */
  podIP(uid: string): string | undefined;
  recorder: EventRecorder;
  logger: Logger;
  /** A result changed (readiness flipped, liveness/startup failed or succeeded): re-sync the pod. */
  onChange(uid: string): void;
  /** Wall ms since the epoch (compared with containers' startedAt); defaults to Date.now. */
  now?: () => number;
  /** Monotonic ms (periods, initial delays, spread); defaults to util/clock's. */
  monotonic?: () => number;
  /** [0, 1); defaults to Math.random. Used for the start-up jitter. */
  random?: () => number;
  /** Defaults to the global setTimeout/clearTimeout. */
  timers?: ProbeTimers;
  /** Optional; absent, nothing is counted. */
  metrics?: ProbeMetrics;
  /** Told when a container's startup probe first succeeds (`startup-probe-passed`); absent: nothing. */
  timeline?: Pick<TimelineRecorder, 'record'>;
}
