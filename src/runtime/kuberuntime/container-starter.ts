/**
 * The start path of one container (upstream startContainer + doBackOff): crash-loop back-off, image,
 * container config, CreateContainer, StartContainer, postStart hook. Each step ends the start with a
 * typed failure (the waiting reason the pod status shows) or hands its result to the next. Only an
 * abort or an unexpected error rejects.
 */
import type { Container, KubeletPod } from '../../api/types.ts';
import { podFullName } from '../../api/types.ts';
import type { EventRecorder } from '../../api/events.ts';
import type { Logger } from '../../util/logger.ts';
import type { Backoff } from '../../util/backoff.ts';
import { describeError } from '../../util/errors.ts';
import { abortReason } from '../../util/abort.ts';
import type { ContainerConfig, PodSandboxConfig, RuntimeService } from '../cri/index.ts';
import type { ContainerSetup } from './container-setup.ts';
import { postStartTimeoutSeconds, type HookRunner, hookPodIP } from '../lifecycle/index.ts';
import { ImageError, type ImageErrorReason, type ImageManager } from '../images/index.ts';
import type { KillContainerRequest } from './pod-killer.ts';
import { findContainerStatus, type RuntimeContainerStatus, type RuntimePodStatus } from './runtime-pod.ts';
import type { RuntimePacer } from './pacer.ts';
import { noopTimeline, type TimelineRecorder, type TimelineStep } from '../../timeline/index.ts';

/** Why a container did not start; the strings are upstream's waiting reasons. */
export type ContainerStartFailure =
  | {
      reason: 'CrashLoopBackOff';
      message: string;
      /** From now until the end of the back-off window, when a new attempt can start it. */
      retryAfterMs: number;
    }
  | {
      reason:
        | ImageErrorReason
        | 'CreateContainerConfigError'
        | 'CreateContainerError'
        | 'RunContainerError'
        | 'PostStartHookError';
      message: string;
    };

export type StartStep<T> = { ok: true; value: T } | { ok: false; failure: ContainerStartFailure };

export interface StartContainerRequest {
  pod: KubeletPod;
  container: Container;
  /** The runtime's status of the pod the sync works from: the last run sets back-off and restart count. */
  status: RuntimePodStatus;
  sandboxId: string;
  /** The sandbox's IPs, read once per sync (empty for a host-network pod). */
  podIPs: string[];
  sandboxConfig: PodSandboxConfig;
  signal?: AbortSignal;
}

/** Starts one container of a pod whose sandbox exists; the value of a success is the container ID. */
export type ContainerStarter = (req: StartContainerRequest) => Promise<StartStep<string>>;

export interface ContainerStarterDeps {
  runtime: RuntimeService;
  images: ImageManager;
  recorder: EventRecorder;
  logger: Logger;
  /** Crash-loop back-off, shared by all pods (key: backoffKey). */
  backoff: Backoff;
  hooks: HookRunner;
  setup: ContainerSetup;
  /** Kills a container whose postStart hook failed. */
  killContainer: (req: KillContainerRequest) => Promise<void>;
  /** Wall ms (the runtime stamps a container's finish with wall time). */
  now: () => number;
  /** Monotonic ms: the back-off table's clock. */
  monotonic: () => number;
  /** Paces CreateContainer and StartContainer across pods (pacer.ts). */
  pacer: RuntimePacer;
  /** `container-created`, `container-started`, `post-start-done`, and `failed`; default: none. */
  timeline?: Pick<TimelineRecorder, 'record'>;
}

/** Upstream getStableKey: the crash-loop back-off key of one container spec of one pod. */
export function backoffKey(pod: KubeletPod, container: Container, hash: string): string {
  return `${pod.metadata.name}_${pod.metadata.namespace}_${pod.metadata.uid}_${container.name}_${hash}`;
}

const OK: StartStep<void> = { ok: true, value: undefined };

export function createContainerStarter(deps: ContainerStarterDeps): ContainerStarter {
  const { runtime } = deps;
  const clock = { now: deps.now, monotonic: deps.monotonic };
  const timeline = deps.timeline ?? noopTimeline;

  function stepFailed(req: StartContainerRequest, failedStep: TimelineStep, error: string): void {
    if (req.signal?.aborted) return;
    timeline.record(req.pod.metadata.uid, 'failed', { failedStep, container: req.container.name, error });
  }

  /**
   * A step's error, as an event on the pod and the container's failure. A step cut short because
   * the sync was aborted (the pod is being killed) is no failure of the container: it rejects.
   */
  function failed(
    pod: KubeletPod,
    reason: 'CreateContainerConfigError' | 'CreateContainerError' | 'RunContainerError',
    err: unknown,
    signal: AbortSignal | undefined,
  ) {
    if (signal?.aborted) throw abortReason(signal);
    const message = describeError(err);
    deps.recorder.event(pod, 'Warning', 'Failed', `Error: ${message}`);
    return { ok: false, failure: { reason, message } } as const;
  }

  /**
   * Upstream doBackOff, measured from when the last run finished. Upstream compares that wall stamp
   * with the wall clock, so a backward step holds the container back for as long as the step; here
   * the finish is pinned on the monotonic clock when first seen, and only real time ends the window.
   */
  function crashLoopBackOff(
    pod: KubeletPod,
    container: Container,
    previous: RuntimeContainerStatus | undefined,
  ): StartStep<void> {
    if (previous?.state !== 'exited') return OK;
    const key = backoffKey(pod, container, previous.hash);
    const t = clock.monotonic();
    const finished = deps.backoff.eventTime(key, previous.finishedAt, clock);
    if (!deps.backoff.isInBackoffSince(key, finished, t)) {
      deps.backoff.next(key, finished, t);
      return OK;
    }
    const delay = deps.backoff.get(key);
    deps.recorder.event(pod, 'Warning', 'BackOff', `Back-off restarting failed container ${container.name}`);
    const message = `back-off ${formatSeconds(delay)} restarting failed container=${container.name} pod=${podFullName(pod)}`;
    const retryAfterMs = Math.max(0, finished + delay - t);
    return { ok: false, failure: { reason: 'CrashLoopBackOff', message, retryAfterMs } };
  }

  async function ensureImage(req: StartContainerRequest): Promise<StartStep<string>> {
    try {
      return {
        ok: true,
        value: await deps.images.ensureImage(req.pod, req.container, req.sandboxConfig, req.signal),
      };
    } catch (err) {
      if (err instanceof ImageError)
        return { ok: false, failure: { reason: err.reason, message: err.message } };
      throw err;
    }
  }

  async function containerConfig(
    req: StartContainerRequest,
    imageRef: string,
    restartCount: number,
    log: Logger,
  ): Promise<StartStep<ContainerConfig>> {
    const { pod, container, podIPs, signal } = req;
    try {
      return {
        ok: true,
        value: await deps.setup({ pod, container, podIPs, imageRef, restartCount, log, signal }),
      };
    } catch (err) {
      stepFailed(req, 'container-created', describeError(err));
      return failed(pod, 'CreateContainerConfigError', err, signal);
    }
  }

  async function create(req: StartContainerRequest, config: ContainerConfig): Promise<StartStep<string>> {
    let id: string;
    try {
      id = await deps.pacer.run(
        req.pod.metadata.uid,
        'CreateContainer',
        () => runtime.createContainer(req.sandboxId, config, req.sandboxConfig, { signal: req.signal }),
        req.signal,
      );
    } catch (err) {
      stepFailed(req, 'container-created', describeError(err));
      return failed(req.pod, 'CreateContainerError', err, req.signal);
    }
    timeline.record(req.pod.metadata.uid, 'container-created', { container: req.container.name });
    deps.recorder.event(req.pod, 'Normal', 'Created', `Created container ${req.container.name}`);
    return { ok: true, value: id };
  }

  async function start(req: StartContainerRequest, id: string): Promise<StartStep<void>> {
    try {
      await deps.pacer.run(
        req.pod.metadata.uid,
        'StartContainer',
        () => runtime.startContainer(id, { signal: req.signal }),
        req.signal,
      );
    } catch (err) {
      stepFailed(req, 'container-started', describeError(err));
      return failed(req.pod, 'RunContainerError', err, req.signal);
    }
    timeline.record(req.pod.metadata.uid, 'container-started', { container: req.container.name });
    deps.recorder.event(req.pod, 'Normal', 'Started', `Started container ${req.container.name}`);
    return OK;
  }

  /** Upstream: a failed postStart hook kills the container and fails the start (ErrPostStartHook). */
  async function postStart(req: StartContainerRequest, id: string, log: Logger): Promise<StartStep<void>> {
    const { pod, container, sandboxId, signal } = req;
    const hook = container.lifecycle?.postStart;
    if (!hook) return OK;
    const outcome = await deps.hooks.run(
      hook,
      { pod, container, containerId: id },
      {
        timeoutSeconds: postStartTimeoutSeconds(pod),
        podIP: hookPodIP(runtime, pod, sandboxId, signal),
        signal,
      },
    );
    if (signal?.aborted) throw abortReason(signal);
    if (outcome.ok) {
      timeline.record(pod.metadata.uid, 'post-start-done', { container: container.name });
      return OK;
    }
    stepFailed(req, 'post-start-done', outcome.message);
    log.warn('postStart hook failed', { containerID: id, message: outcome.message });
    deps.recorder.event(
      pod,
      'Warning',
      'FailedPostStartHook',
      outcome.message.replaceAll(id, container.name),
    );
    try {
      await deps.killContainer({
        pod,
        container: {
          id,
          name: container.name,
          state: 'running',
          podSandboxId: sandboxId,
          terminationGracePeriodSeconds: pod.spec.terminationGracePeriodSeconds,
        },
        reason: 'FailedPostStartHook',
        signal,
      });
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      log.error('failed to kill the container whose postStart hook failed', {
        containerID: id,
        err: describeError(err),
      });
    }
    return { ok: false, failure: { reason: 'PostStartHookError', message: outcome.message } };
  }

  return async (req) => {
    const { pod, container } = req;
    const log = deps.logger.child({
      pod: podFullName(pod),
      podUID: pod.metadata.uid,
      container: container.name,
    });
    const previous = findContainerStatus(req.status, container.name);
    const backOff = crashLoopBackOff(pod, container, previous);
    if (!backOff.ok) return backOff;
    const image = await ensureImage(req);
    if (!image.ok) return image;
    const restartCount = previous ? previous.restartCount + 1 : 0;
    const config = await containerConfig(req, image.value, restartCount, log);
    if (!config.ok) return config;
    const created = await create(req, config.value);
    if (!created.ok) return created;
    const started = await start(req, created.value);
    if (!started.ok) return started;
    log.debug('container started', { containerID: created.value, restartCount });
    const hook = await postStart(req, created.value, log);
    if (!hook.ok) return hook;
    return created;
  };
}

function formatSeconds(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${s % 60 ? `${s % 60}s` : '0s'}`;
}
