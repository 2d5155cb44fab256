import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Container, Pod } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import type { EventRecorder } from '../api/events.ts';
import type { Logger } from '../util/logger.ts';
import type { Backoff } from '../util/backoff.ts';
import { describeError } from '../util/errors.ts';
import { abortReason } from '../util/abort.ts';
import {
  ANNOTATION_CONTAINER_HASH,
  ANNOTATION_CONTAINER_RESTART_COUNT,
  ANNOTATION_CONTAINER_TERMINATION_MESSAGE_PATH,
  ANNOTATION_CONTAINER_TERMINATION_MESSAGE_POLICY,
  ANNOTATION_POD_TERMINATION_GRACE_PERIOD,
  DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
  LABEL_CONTAINER_NAME,
  LABEL_POD_NAME,
  LABEL_POD_NAMESPACE,
  LABEL_POD_UID,
  MIN_GRACE_PERIOD_SECONDS,
} from '../config/defaults.ts';
import type {
  ContainerState,
  ContainerStatus,
  DNSConfig,
  Mount,
  PodSandboxConfig,
  PodSandboxStatus,
  RuntimeService,
} from './cri/types.ts';
import { computePodActions, type PodActions } from './compute-pod-actions.ts';
import { generateContainerConfig } from './container-config.ts';
import { ImageError, type ImageManager } from './image-manager.ts';
import { intAnnotation } from './labels.ts';
import {
  findContainerStatus,
  type RuntimeContainerState,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
  type RuntimeSandboxStatus,
} from './runtime-pod.ts';
import { generateSandboxConfig, podLogsDirectory } from './sandbox-config.ts';

/** Why a container is not running after a sync; becomes `state.waiting.reason` in the pod status. */
export interface StartFailure {
  reason: string;
  message: string;
}

export interface PodSyncResult {
  /** Per container name: why it could not be started this time. Absent = no failure. */
  startFailures: Map<string, StartFailure>;
  /** Containers started by this sync (names). */
  started: string[];
  /** Sandbox-level failure (creation failed): the sync must be retried. */
  sandboxError: string | undefined;
  /** When a container is in back-off, the earliest moment a new sync can make progress. */
  retryAfterMs: number | undefined;
}

/** The runtime side of the kubelet (upstream kubeGenericRuntimeManager): CRI operations by pod. */
export interface RuntimeManager {
  /** Reads everything the runtime holds for a pod UID. */
  getPodStatus(uid: string, name: string, namespace: string, signal?: AbortSignal): Promise<RuntimePodStatus>;
  /** Every pod the runtime holds (from labels), without per-container status calls. */
  listPods(signal?: AbortSignal): Promise<RuntimePodSummary[]>;
  /** Brings the runtime in line with the pod spec: sandbox, init containers, app containers. */
  syncPod(pod: Pod, status: RuntimePodStatus, signal?: AbortSignal): Promise<PodSyncResult>;
  /**
   * Stops every running container of the pod with its grace period (SIGTERM, SIGKILL at the end of
   * it), then stops the sandboxes. `pod` may be undefined for orphans (grace read from annotations).
   */
  killPod(
    pod: Pod | undefined,
    status: RuntimePodStatus,
    gracePeriodOverride?: number,
    signal?: AbortSignal,
  ): Promise<void>;
  /** Removes all containers and sandboxes of a pod that has been killed. */
  removePod(status: RuntimePodStatus, signal?: AbortSignal): Promise<void>;
}

/** One pod as seen by a cheap relist: sandboxes and containers with their states. */
export interface RuntimePodSummary {
  uid: string;
  name: string;
  namespace: string;
  sandboxes: { id: string; state: 'ready' | 'notready'; createdAt: number }[];
  containers: {
    id: string;
    name: string;
    state: RuntimeContainerState;
    createdAt: number;
    podSandboxId: string;
  }[];
}

export interface RuntimeManagerDeps {
  runtime: RuntimeService;
  images: ImageManager;
  recorder: EventRecorder;
  logger: Logger;
  /** Crash-loop back-off, shared by all pods (key: pod/container/hash). */
  backoff: Backoff;
  podLogsDir: string;
  hostDNS: () => DNSConfig;
  /** CRI mounts for a container's volumeMounts (the volume manager). */
  mountsFor: (pod: Pod, container: Container) => Promise<Mount[]>;
  now?: () => number;
}

const nsToMs = (ns: number) => Math.floor(ns / 1e6);

function criState(s: ContainerState): RuntimeContainerState {
  switch (s) {
    case 'CONTAINER_CREATED':
      return 'created';
    case 'CONTAINER_RUNNING':
      return 'running';
    case 'CONTAINER_EXITED':
      return 'exited';
    case 'CONTAINER_UNKNOWN':
      return 'unknown';
  }
}

function toContainerStatus(s: ContainerStatus, podSandboxId: string): RuntimeContainerStatus {
  const a = s.annotations ?? {};
  return {
    id: s.id,
    name: s.labels?.[LABEL_CONTAINER_NAME] ?? s.metadata.name,
    state: criState(s.state),
    createdAt: nsToMs(s.createdAt),
    startedAt: nsToMs(s.startedAt),
    finishedAt: nsToMs(s.finishedAt),
    exitCode: s.exitCode,
    reason: s.reason,
    message: s.message,
    image: s.image?.image ?? '',
    imageRef: s.imageRef,
    hash: a[ANNOTATION_CONTAINER_HASH] ?? '',
    restartCount: intAnnotation(a, ANNOTATION_CONTAINER_RESTART_COUNT) ?? 0,
    podSandboxId,
    attempt: s.metadata.attempt,
    terminationMessagePath: a[ANNOTATION_CONTAINER_TERMINATION_MESSAGE_PATH] ?? '',
    terminationMessagePolicy: a[ANNOTATION_CONTAINER_TERMINATION_MESSAGE_POLICY] ?? '',
    terminationGracePeriodSeconds: intAnnotation(a, ANNOTATION_POD_TERMINATION_GRACE_PERIOD),
  };
}

function toSandboxStatus(s: PodSandboxStatus): RuntimeSandboxStatus {
  const network = s.network;
  return {
    id: s.id,
    ready: s.state === 'SANDBOX_READY',
    createdAt: nsToMs(s.createdAt),
    attempt: s.metadata.attempt,
    ip: network?.ip ?? '',
    ips: (network?.additionalIps ?? []).map((p) => p.ip),
    // containerd reports no IP for host-network sandboxes; the namespace mode is what tells.
    hostNetwork: s.linux?.namespaces?.options?.network === 'NODE',
  };
}

/** Upstream getStableKey: the crash-loop back-off key of one container spec of one pod. */
export function backoffKey(pod: Pod, container: Container, hash: string): string {
  return `${pod.metadata.name ?? ''}_${pod.metadata.namespace ?? ''}_${pod.metadata.uid ?? ''}_${container.name}_${hash}`;
}

/** Upstream killContainer grace-period rules. */
export function gracePeriodFor(
  pod: Pod | undefined,
  fallback: number | undefined,
  override?: number,
): number {
  if (override !== undefined) return Math.max(0, override);
  let g =
    pod?.metadata.deletionGracePeriodSeconds ??
    pod?.spec.terminationGracePeriodSeconds ??
    fallback ??
    DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
  if (g < MIN_GRACE_PERIOD_SECONDS) g = MIN_GRACE_PERIOD_SECONDS;
  return g;
}

export function createRuntimeManager(deps: RuntimeManagerDeps): RuntimeManager {
  const { runtime } = deps;
  const now = deps.now ?? Date.now;

  async function getPodStatus(uid: string, name: string, namespace: string, signal?: AbortSignal) {
    const selector = { [LABEL_POD_UID]: uid };
    const [sandboxes, containers] = await Promise.all([
      runtime.listPodSandbox({ labelSelector: selector }, { signal }),
      runtime.listContainers({ labelSelector: selector }, { signal }),
    ]);
    const sandboxStatuses = await Promise.all(
      sandboxes.map((s) => runtime.podSandboxStatus(s.id, { signal }).then(toSandboxStatus)),
    );
    const containerStatuses = await Promise.all(
      containers.map((c) =>
        runtime.containerStatus(c.id, { signal }).then((s) => toContainerStatus(s, c.podSandboxId)),
      ),
    );
    sandboxStatuses.sort((a, b) => b.createdAt - a.createdAt);
    containerStatuses.sort((a, b) => b.createdAt - a.createdAt);
    return {
      uid,
      name,
      namespace,
      sandboxes: sandboxStatuses,
      containers: containerStatuses,
      timestamp: now(),
    };
  }

  async function listPods(signal?: AbortSignal): Promise<RuntimePodSummary[]> {
    const [sandboxes, containers] = await Promise.all([
      runtime.listPodSandbox(undefined, { signal }),
      runtime.listContainers(undefined, { signal }),
    ]);
    const pods = new Map<string, RuntimePodSummary>();
    const podFor = (labels: Record<string, string>, fallbackUid: string) => {
      const uid = labels[LABEL_POD_UID] ?? fallbackUid;
      let p = pods.get(uid);
      if (!p) {
        p = {
          uid,
          name: labels[LABEL_POD_NAME] ?? '',
          namespace: labels[LABEL_POD_NAMESPACE] ?? '',
          sandboxes: [],
          containers: [],
        };
        pods.set(uid, p);
      }
      return p;
    };
    for (const s of sandboxes) {
      podFor(s.labels ?? {}, s.metadata.uid).sandboxes.push({
        id: s.id,
        state: s.state === 'SANDBOX_READY' ? 'ready' : 'notready',
        createdAt: nsToMs(s.createdAt),
      });
    }
    for (const c of containers) {
      const labels = c.labels ?? {};
      if (labels[LABEL_POD_UID] === undefined) continue; // not created by a kubelet
      podFor(labels, '').containers.push({
        id: c.id,
        name: labels[LABEL_CONTAINER_NAME] ?? c.metadata.name,
        state: criState(c.state),
        createdAt: nsToMs(c.createdAt),
        podSandboxId: c.podSandboxId,
      });
    }
    return [...pods.values()];
  }

  function podLogger(pod: Pod) {
    return deps.logger.child({ pod: podFullName(pod), podUID: pod.metadata.uid });
  }

  async function killContainer(
    pod: Pod | undefined,
    c: RuntimeContainerStatus,
    gracePeriodOverride: number | undefined,
    reason: string,
    signal?: AbortSignal,
  ): Promise<void> {
    const grace = gracePeriodFor(pod, c.terminationGracePeriodSeconds, gracePeriodOverride);
    if (pod) {
      deps.recorder.event(pod, 'Normal', 'Killing', reason || `Stopping container ${c.name}`);
    }
    deps.logger.debug('killing container', {
      pod: `${pod?.metadata.namespace ?? ''}/${pod?.metadata.name ?? ''}`,
      podUID: pod?.metadata.uid,
      container: c.name,
      containerID: c.id,
      gracePeriod: grace,
    });
    // The call may legitimately take the whole grace period before the runtime SIGKILLs.
    await runtime.stopContainer(c.id, grace, { signal, timeoutMs: 120_000 + grace * 1000 });
  }

  async function killPod(
    pod: Pod | undefined,
    status: RuntimePodStatus,
    gracePeriodOverride?: number,
    signal?: AbortSignal,
  ): Promise<void> {
    const running = status.containers.filter(
      (c) => c.state === 'running' || c.state === 'unknown' || c.state === 'created',
    );
    const results = await Promise.allSettled(
      running.map((c) => killContainer(pod, c, gracePeriodOverride, `Stopping container ${c.name}`, signal)),
    );
    const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    // Aborted (e.g. a shorter grace period arrived): the caller runs the kill again.
    if (signal?.aborted) throw abortReason(signal);
    for (const sb of status.sandboxes) {
      if (!sb.ready) continue;
      await runtime.stopPodSandbox(sb.id, { signal });
    }
    if (failures.length > 0) {
      throw new Error(
        `failed to kill ${failures.length} container(s): ${failures.map((f) => describeError(f.reason)).join('; ')}`,
        {
          cause: failures[0]?.reason,
        },
      );
    }
  }

  async function removePod(status: RuntimePodStatus, signal?: AbortSignal): Promise<void> {
    for (const c of status.containers) await runtime.removeContainer(c.id, { signal });
    for (const sb of status.sandboxes) await runtime.removePodSandbox(sb.id, { signal });
  }

  /** Removes exited containers no status needs any more: per name, all but the newest two. */
  async function pruneContainers(pod: Pod, status: RuntimePodStatus, signal?: AbortSignal): Promise<void> {
    const seen = new Map<string, number>();
    const initNames = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
    for (const c of status.containers) {
      const n = (seen.get(c.name) ?? 0) + 1;
      seen.set(c.name, n);
      // Init containers keep only their newest run (upstream pruneInitContainersBeforeStart).
      const keep = initNames.has(c.name) ? 1 : 2;
      if (n > keep && c.state === 'exited') {
        await runtime.removeContainer(c.id, { signal }).catch((err: unknown) => {
          deps.logger.warn('failed to prune exited container', {
            pod: podFullName(pod),
            podUID: pod.metadata.uid,
            containerID: c.id,
            err: describeError(err),
          });
        });
      }
    }
  }

  async function startContainer(
    pod: Pod,
    container: Container,
    status: RuntimePodStatus,
    sandboxId: string,
    sandboxConfig: PodSandboxConfig,
    result: PodSyncResult,
    signal?: AbortSignal,
  ): Promise<void> {
    const log = podLogger(pod).child({ container: container.name });
    const previous = findContainerStatus(status, container.name);
    // Crash-loop back-off (upstream doBackOff), measured from when the last run finished.
    if (previous && previous.state === 'exited') {
      const key = backoffKey(pod, container, previous.hash);
      const t = now();
      if (deps.backoff.isInBackoffSince(key, previous.finishedAt, t)) {
        const delay = deps.backoff.get(key);
        const message = `back-off ${formatSeconds(delay)} restarting failed container=${container.name} pod=${podFullName(pod)}`;
        deps.recorder.event(
          pod,
          'Warning',
          'BackOff',
          `Back-off restarting failed container ${container.name}`,
        );
        result.startFailures.set(container.name, { reason: 'CrashLoopBackOff', message });
        const readyAt = previous.finishedAt + delay;
        result.retryAfterMs = Math.min(result.retryAfterMs ?? Infinity, Math.max(0, readyAt - t));
        return;
      }
      deps.backoff.next(key, previous.finishedAt, t);
    }
    let imageRef: string;
    try {
      imageRef = await deps.images.ensureImage(pod, container, sandboxConfig, signal);
    } catch (err) {
      if (err instanceof ImageError) {
        result.startFailures.set(container.name, { reason: err.reason, message: err.message });
        return;
      }
      throw err;
    }
    const restartCount = previous ? previous.restartCount + 1 : 0;
    let config;
    try {
      const mounts = await deps.mountsFor(pod, container);
      config = generateContainerConfig(pod, container, { restartCount, imageRef, mounts });
      await mkdir(join(podLogsDirectory(deps.podLogsDir, pod), container.name), { recursive: true });
    } catch (err) {
      const message = describeError(err);
      deps.recorder.event(pod, 'Warning', 'Failed', `Error: ${message}`);
      result.startFailures.set(container.name, { reason: 'CreateContainerConfigError', message });
      return;
    }
    let id: string;
    try {
      id = await runtime.createContainer(sandboxId, config, sandboxConfig, { signal });
    } catch (err) {
      const message = describeError(err);
      deps.recorder.event(pod, 'Warning', 'Failed', `Error: ${message}`);
      result.startFailures.set(container.name, { reason: 'CreateContainerError', message });
      return;
    }
    deps.recorder.event(pod, 'Normal', 'Created', `Created container ${container.name}`);
    try {
      await runtime.startContainer(id, { signal });
    } catch (err) {
      const message = describeError(err);
      deps.recorder.event(pod, 'Warning', 'Failed', `Error: ${message}`);
      result.startFailures.set(container.name, { reason: 'RunContainerError', message });
      return;
    }
    deps.recorder.event(pod, 'Normal', 'Started', `Started container ${container.name}`);
    log.debug('container started', { containerID: id, restartCount });
    result.started.push(container.name);
  }

  async function syncPod(pod: Pod, status: RuntimePodStatus, signal?: AbortSignal): Promise<PodSyncResult> {
    const log = podLogger(pod);
    const result: PodSyncResult = {
      startFailures: new Map(),
      started: [],
      sandboxError: undefined,
      retryAfterMs: undefined,
    };
    const actions: PodActions = computePodActions(pod, status);
    if (log.isDebugEnabled()) log.debug('computed pod actions', { actions });

    if (actions.killPod) {
      const reason = actions.createSandbox ? 'SandboxChanged' : 'PodCompleted';
      if (actions.createSandbox && status.sandboxes.length > 0) {
        deps.recorder.event(
          pod,
          'Normal',
          'SandboxChanged',
          'Pod sandbox changed, it will be killed and re-created.',
        );
      }
      log.debug('killing pod before sync', { reason });
      await killPod(pod, status, undefined, signal);
      if (actions.createSandbox) {
        // Old sandboxes and their containers are no longer needed once a new sandbox replaces them.
        for (const sb of status.sandboxes) {
          await runtime.removePodSandbox(sb.id, { signal }).catch((err: unknown) => {
            log.warn('failed to remove old sandbox', { sandboxID: sb.id, err: describeError(err) });
          });
        }
      }
    } else {
      for (const k of actions.containersToKill) {
        const cs = status.containers.find((c) => c.id === k.id);
        if (cs) await killContainer(pod, cs, undefined, k.reason, signal);
      }
    }
    await pruneContainers(pod, status, signal);

    let sandboxId = actions.sandboxId;
    const sandboxConfig = generateSandboxConfig(pod, {
      podLogsDir: deps.podLogsDir,
      hostDNS: deps.hostDNS(),
      attempt: actions.attempt,
    });
    if (actions.createSandbox) {
      try {
        await mkdir(sandboxConfig.logDirectory ?? deps.podLogsDir, { recursive: true });
        sandboxId = await runtime.runPodSandbox(sandboxConfig, undefined, { signal });
        log.debug('sandbox created', { sandboxID: sandboxId, attempt: actions.attempt });
      } catch (err) {
        const message = `Failed to create pod sandbox: ${describeError(err)}`;
        deps.recorder.event(pod, 'Warning', 'FailedCreatePodSandBox', message);
        result.sandboxError = message;
        return result;
      }
    }
    if (!actions.createSandbox && actions.killPod) return result;

    if (actions.nextInitContainer !== undefined) {
      const init = pod.spec.initContainers?.[actions.nextInitContainer];
      if (init) await startContainer(pod, init, status, sandboxId, sandboxConfig, result, signal);
      return result;
    }
    // Start app containers concurrently: each is independent, and CRI does the heavy lifting.
    await Promise.all(
      actions.containersToStart.map((i) => {
        const c = pod.spec.containers[i];
        return c
          ? startContainer(pod, c, status, sandboxId, sandboxConfig, result, signal)
          : Promise.resolve();
      }),
    );
    return result;
  }

  return { getPodStatus, listPods, syncPod, killPod, removePod };
}

function formatSeconds(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${s % 60 ? `${s % 60}s` : '0s'}`;
}
