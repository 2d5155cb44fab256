import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Container, Pod } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import type { EventRecorder } from '../api/events.ts';
import type { Logger } from '../util/logger.ts';
import type { Backoff } from '../util/backoff.ts';
import { describeError } from '../util/errors.ts';
import { abortReason, combineSignals } from '../util/abort.ts';
import {
  ANNOTATION_CONTAINER_HASH,
  ANNOTATION_CONTAINER_RESTART_COUNT,
  ANNOTATION_CONTAINER_TERMINATION_MESSAGE_PATH,
  ANNOTATION_CONTAINER_TERMINATION_MESSAGE_POLICY,
  ANNOTATION_POD_TERMINATION_GRACE_PERIOD,
  DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
  DEFAULT_TERMINATION_MESSAGE_PATH,
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
  KeyValue,
  Mount,
  PodSandboxConfig,
  PodSandboxStatus,
  RuntimeService,
} from './cri/types.ts';
import { isCriNotFound } from './cri/errors.ts';
import { ensureEtcHostsMount, wantsEtcHosts } from './etc-hosts.ts';
import { computePodActions, type PodActions, type ProbeVerdicts } from './compute-pod-actions.ts';
import {
  generateContainerConfig,
  requiresNonRoot,
  verifyRunAsNonRoot,
  type ImageUser,
} from './container-config.ts';
import { ImageError, type ImageManager } from './image-manager.ts';
import { intAnnotation } from './labels.ts';
import {
  findContainerStatus,
  type RuntimeContainerState,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
  type RuntimeSandboxStatus,
} from './runtime-pod.ts';
import { generateSandboxConfig, podHostname, podLogsDirectory, type ClusterDNS } from './sandbox-config.ts';
import type { SeccompOptions } from './security-profiles.ts';
import {
  createHookRunner,
  graceAfterPreStop,
  postStartTimeoutSeconds,
  restoreHookSpec,
  type HookRunner,
} from './hooks.ts';
import {
  createTerminationMessageMount,
  exitedContainerMessage,
  podContainerDir,
} from './termination-message.ts';

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
  syncPod(
    pod: Pod,
    status: RuntimePodStatus,
    signal?: AbortSignal,
    probes?: ProbeVerdicts,
  ): Promise<PodSyncResult>;
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
  /** clusterDNS/clusterDomain for ClusterFirst pods; absent: they get `hostDNS` (MissingClusterDNS). */
  clusterDNS?: ClusterDNS;
  /**
   * The pod's cgroup for the sandbox's cgroup_parent (the container manager; the caller has made
   * sure it exists). Absent or '': the runtime's default parent.
   */
  podCgroupParent?: (pod: Pod) => string;
  /** CRI mounts for a container's volumeMounts (the volume manager). */
  mountsFor: (pod: Pod, container: Container) => Promise<Mount[]>;
  /** The container environment (env.ts makeEnvironment); absent: literal values only. */
  makeEnv?: (pod: Pod, container: Container, podIPs: string[], signal?: AbortSignal) => Promise<KeyValue[]>;
  /** The image's configured user (CRI ImageStatus uid/username), for the runAsNonRoot check. */
  imageUser?: (imageRef: string, signal?: AbortSignal) => Promise<ImageUser | undefined>;
  /**
   * The kubelet root dir: termination-message files live under `<rootDir>/pods/<uid>/containers/`.
   * Absent: containers get no termination-message file (and their terminated state no message
   * from one); a warning says so once.
   */
  rootDir?: string;
  /** Seccomp profile root and `seccompDefault`; absent: `<DEFAULT_ROOT_DIR>/seccomp`, Unconfined. */
  seccomp?: SeccompOptions;
  /** Runs postStart/preStop handlers. Default: exec through `runtime.execSync`, HTTP from this host. */
  hooks?: HookRunner;
  now?: () => number;
}

/** The part of a container's status a kill needs. */
type KillTarget = Pick<
  RuntimeContainerStatus,
  'id' | 'name' | 'state' | 'podSandboxId' | 'terminationGracePeriodSeconds'
>;

/** How many exited containers' messages are remembered (an exited container's message never changes). */
const MESSAGE_CACHE_SIZE = 4096;
/** A log read this soon after the exit may miss lines the runtime is still copying: not cached. */
const LOG_SETTLE_MS = 2_000;

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

/**
 * Between a list call and the status call for one of its items, the object may be removed (the pod
 * worker prunes a container while the PLEG relists): as upstream, it is left out as if the list had
 * not seen it, rather than failing the whole status read.
 */
function unlessGone(err: unknown): undefined {
  if (isCriNotFound(err)) return undefined;
  throw err;
}

function present<T>(items: (T | undefined)[]): T[] {
  return items.filter((x): x is T => x !== undefined);
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
  const hooks =
    deps.hooks ??
    createHookRunner({
      exec: (id, cmd, timeout, opts) => runtime.execSync(id, cmd, timeout, opts),
      recorder: deps.recorder,
      logger: deps.logger,
    });
  if (deps.rootDir === undefined) {
    deps.logger.warn('no root dir given: containers get no termination-message file');
  }
  /** Termination messages of exited containers by container ID (upstream re-reads them every time). */
  const messages = new Map<string, string>();
  /** Containers whose preStop hook already ran: a repeated kill (shorter grace) does not run it again. */
  const preStopRan = new Set<string>();

  async function exitMessage(s: ContainerStatus, status: RuntimeContainerStatus): Promise<string> {
    const cached = messages.get(s.id);
    if (cached !== undefined) return cached;
    const r = await exitedContainerMessage({
      exitCode: s.exitCode,
      reason: s.reason,
      message: s.message,
      mounts: s.mounts ?? [],
      logPath: s.logPath ?? '',
      terminationMessagePath: status.terminationMessagePath,
      terminationMessagePolicy: status.terminationMessagePolicy,
    });
    if (!r.fromLogs || now() - status.finishedAt > LOG_SETTLE_MS) {
      messages.set(s.id, r.message);
      if (messages.size > MESSAGE_CACHE_SIZE) {
        const oldest = messages.keys().next();
        if (!oldest.done) messages.delete(oldest.value);
      }
    }
    return r.message;
  }

  async function removeContainer(id: string, signal?: AbortSignal): Promise<void> {
    await runtime.removeContainer(id, { signal });
    messages.delete(id);
    preStopRan.delete(id);
  }

  /** The pod IP a hook's httpGet goes to (upstream: the runtime's pod status IP). */
  function podIPFor(pod: Pod | undefined, sandboxId: string, signal?: AbortSignal) {
    return async (): Promise<string | undefined> => {
      const sb = await runtime.podSandboxStatus(sandboxId, { signal });
      const ip = sb.network?.ip ?? '';
      if (ip !== '') return ip;
      // Host-network sandboxes have no IP of their own (upstream fails such hooks, kubernetes#134285).
      if (pod?.spec.hostNetwork) return pod.status?.podIP ?? pod.status?.hostIP;
      return undefined;
    };
  }

  async function getPodStatus(uid: string, name: string, namespace: string, signal?: AbortSignal) {
    const selector = { [LABEL_POD_UID]: uid };
    const [sandboxes, containers] = await Promise.all([
      runtime.listPodSandbox({ labelSelector: selector }, { signal }),
      runtime.listContainers({ labelSelector: selector }, { signal }),
    ]);
    const sandboxStatuses = present(
      await Promise.all(
        sandboxes.map((s) => runtime.podSandboxStatus(s.id, { signal }).then(toSandboxStatus, unlessGone)),
      ),
    );
    const containerStatuses = present(
      await Promise.all(
        containers.map(async (c) => {
          const s = await runtime.containerStatus(c.id, { signal }).catch(unlessGone);
          if (!s) return undefined;
          const status = toContainerStatus(s, c.podSandboxId);
          if (status.state === 'exited') status.message = await exitMessage(s, status);
          return status;
        }),
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

  /** The container spec a kill works from: the pod's, or for orphans what the annotations kept. */
  async function killSpec(
    pod: Pod | undefined,
    c: KillTarget,
    signal?: AbortSignal,
  ): Promise<{ pod: Pod; container: Container } | undefined> {
    const spec = pod
      ? [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((x) => x.name === c.name)
      : undefined;
    if (pod && spec) return { pod, container: spec };
    // Upstream restoreSpecsFromContainerLabels: what was written at creation is what the kill uses.
    let s: ContainerStatus;
    try {
      s = await runtime.containerStatus(c.id, { signal });
    } catch (err) {
      deps.logger.warn('cannot read container annotations; killing without its preStop hook', {
        pod: pod ? podFullName(pod) : undefined,
        podUID: pod?.metadata.uid,
        containerID: c.id,
        err: describeError(err),
      });
      return undefined;
    }
    const restored = restoreHookSpec(c.name, s.annotations ?? {});
    if (restored.problems.length > 0) {
      deps.logger.warn('malformed container annotations; ignored', {
        podUID: s.labels?.[LABEL_POD_UID],
        containerID: c.id,
        problems: restored.problems,
      });
    }
    const labels = s.labels ?? {};
    const stub: Pod = pod ?? {
      metadata: {
        name: labels[LABEL_POD_NAME] ?? '',
        namespace: labels[LABEL_POD_NAMESPACE] ?? '',
        uid: labels[LABEL_POD_UID] ?? '',
      },
      spec: { containers: [restored.container] },
    };
    return { pod: stub, container: restored.container };
  }

  /**
   * Upstream killContainer: the preStop hook (if any, and if there is a grace period to run it in)
   * within the grace period, then StopContainer with what is left of it (at least the minimum).
   */
  async function killContainer(
    pod: Pod | undefined,
    c: KillTarget,
    gracePeriodOverride: number | undefined,
    reason: string,
    signal?: AbortSignal,
  ): Promise<void> {
    let grace = gracePeriodFor(pod, c.terminationGracePeriodSeconds, gracePeriodOverride);
    if (pod) {
      deps.recorder.event(pod, 'Normal', 'Killing', reason || `Stopping container ${c.name}`);
    }
    const logFields = {
      pod: `${pod?.metadata.namespace ?? ''}/${pod?.metadata.name ?? ''}`,
      podUID: pod?.metadata.uid,
      container: c.name,
      containerID: c.id,
    };
    // A container that never ran (created/unknown) has nothing a preStop hook could talk to.
    const hookable = grace > 0 && c.state === 'running' && !preStopRan.has(c.id);
    const target = hookable ? await killSpec(pod, c, signal) : undefined;
    const preStop = target?.container.lifecycle?.preStop;
    if (target && preStop) {
      preStopRan.add(c.id);
      deps.logger.debug('running preStop hook', { ...logFields, gracePeriod: grace });
      const started = now();
      const budget = AbortSignal.timeout(grace * 1000);
      const outcome = await hooks.run(
        preStop,
        { pod: target.pod, container: target.container, containerId: c.id },
        {
          timeoutSeconds: grace,
          podIP: podIPFor(pod, c.podSandboxId, signal),
          signal: combineSignals([signal, budget]),
        },
      );
      if (signal?.aborted) throw abortReason(signal);
      if (budget.aborted) {
        deps.logger.info('preStop hook not completed in grace period', { ...logFields, gracePeriod: grace });
      } else if (!outcome.ok) {
        deps.logger.warn('preStop hook failed', { ...logFields, message: outcome.message });
        if (pod) {
          deps.recorder.event(pod, 'Warning', 'FailedPreStopHook', outcome.message.replaceAll(c.id, c.name));
        }
      }
      grace = graceAfterPreStop(grace, now() - started);
    }
    deps.logger.debug('killing container', { ...logFields, gracePeriod: grace });
    // The call may legitimately take the whole grace period before the runtime SIGKILLs.
    await runtime.stopContainer(c.id, grace, { signal, timeoutMs: 120_000 + grace * 1000 });
    preStopRan.delete(c.id);
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
    for (const c of status.containers) await removeContainer(c.id, signal);
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
        await removeContainer(c.id, signal).catch((err: unknown) => {
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
      if (requiresNonRoot(pod, container)) {
        verifyRunAsNonRoot(pod, container, await deps.imageUser?.(imageRef, signal));
      }
      let sandboxIPs: string[] | undefined;
      const ipsOfSandbox = async (): Promise<string[]> => {
        if (sandboxIPs) return sandboxIPs;
        const sb = await runtime.podSandboxStatus(sandboxId, { signal });
        sandboxIPs = [sb.network?.ip ?? '', ...(sb.network?.additionalIps ?? []).map((a) => a.ip)].filter(
          (ip) => ip !== '',
        );
        return sandboxIPs;
      };
      const mounts = await deps.mountsFor(pod, container);
      const message = await terminationMessageMount(pod, container, log);
      const hosts = await etcHostsMount(pod, container, ipsOfSandbox);
      let envs: KeyValue[] | undefined;
      // Every container: service-link variables need the full environment even without valueFrom.
      if (deps.makeEnv) {
        // Only a fieldRef to status.podIP(s) needs the sandbox's IPs: spare the CRI call otherwise.
        const ips = refersToPodIPs(container) ? await ipsOfSandbox() : [];
        envs = await deps.makeEnv(pod, container, ips, signal);
      }
      config = generateContainerConfig(pod, container, {
        restartCount,
        imageRef,
        mounts: [...mounts, ...(message ? [message] : []), ...(hosts ? [hosts] : [])],
        ...(envs ? { envs } : {}),
        ...(deps.seccomp ? { seccomp: deps.seccomp } : {}),
      });
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
    const postStart = container.lifecycle?.postStart;
    if (postStart) {
      const outcome = await hooks.run(
        postStart,
        { pod, container, containerId: id },
        { timeoutSeconds: postStartTimeoutSeconds(pod), podIP: podIPFor(pod, sandboxId, signal), signal },
      );
      if (signal?.aborted) throw abortReason(signal);
      if (!outcome.ok) {
        // Upstream: the container is killed and the start reported as failed (ErrPostStartHook).
        log.warn('postStart hook failed', { containerID: id, message: outcome.message });
        deps.recorder.event(
          pod,
          'Warning',
          'FailedPostStartHook',
          outcome.message.replaceAll(id, container.name),
        );
        const target: KillTarget = {
          id,
          name: container.name,
          state: 'running',
          podSandboxId: sandboxId,
          terminationGracePeriodSeconds: pod.spec.terminationGracePeriodSeconds,
        };
        try {
          await killContainer(pod, target, undefined, 'FailedPostStartHook', signal);
        } catch (err) {
          if (signal?.aborted) throw abortReason(signal);
          log.error('failed to kill the container whose postStart hook failed', {
            containerID: id,
            err: describeError(err),
          });
        }
        result.startFailures.set(container.name, { reason: 'PostStartHookError', message: outcome.message });
        return;
      }
    }
    result.started.push(container.name);
  }

  /** Upstream makeMounts' termination-message part; a file that cannot be made is logged and skipped. */
  /** The kubelet-managed /etc/hosts (needs the root dir; a pod-network pod needs its IP). */
  async function etcHostsMount(
    pod: Pod,
    container: Container,
    ipsOfSandbox: () => Promise<string[]>,
  ): Promise<Mount | undefined> {
    if (deps.rootDir === undefined || !wantsEtcHosts(container)) return undefined;
    return ensureEtcHostsMount({
      pod,
      podDir: join(deps.rootDir, 'pods', pod.metadata.uid ?? ''),
      podIPs: pod.spec.hostNetwork ? [] : await ipsOfSandbox(),
      hostname: podHostname(pod),
      clusterDomain: deps.clusterDNS?.domain ?? '',
    });
  }

  async function terminationMessageMount(
    pod: Pod,
    container: Container,
    log: Logger,
  ): Promise<Mount | undefined> {
    const path = container.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH;
    if (deps.rootDir === undefined || path === '') return undefined;
    const dir = podContainerDir(deps.rootDir, pod.metadata.uid ?? '', container.name);
    try {
      return await createTerminationMessageMount(dir, path);
    } catch (err) {
      log.warn('cannot create the termination-message file; the container runs without one', {
        dir,
        err: describeError(err),
      });
      return undefined;
    }
  }

  async function syncPod(
    pod: Pod,
    status: RuntimePodStatus,
    signal?: AbortSignal,
    probes?: ProbeVerdicts,
  ): Promise<PodSyncResult> {
    const log = podLogger(pod);
    const result: PodSyncResult = {
      startFailures: new Map(),
      started: [],
      sandboxError: undefined,
      retryAfterMs: undefined,
    };
    const actions: PodActions = computePodActions(pod, status, probes);
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
        if (!cs) continue;
        await killContainer(pod, cs, k.gracePeriodSeconds, k.reason, signal);
      }
    }
    await pruneContainers(pod, status, signal);

    let sandboxId = actions.sandboxId;
    const sandboxConfig = generateSandboxConfig(pod, {
      podLogsDir: deps.podLogsDir,
      hostDNS: deps.hostDNS(),
      attempt: actions.attempt,
      cgroupParent: deps.podCgroupParent?.(pod) ?? '',
      ...(deps.clusterDNS ? { clusterDNS: deps.clusterDNS } : {}),
      // Upstream records DNS warnings on every sync; without event aggregation, once per sandbox.
      ...(actions.createSandbox
        ? { onDNSWarning: (w) => deps.recorder.event(pod, 'Warning', w.reason, w.message) }
        : {}),
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

    // Upstream SyncPod step 6: init containers in spec order. A regular one that fails to start ends
    // the sync; a sidecar (restartPolicy Always) that fails is skipped.
    for (const i of actions.initContainersToStart) {
      const init = pod.spec.initContainers?.[i];
      if (!init) continue;
      await startContainer(pod, init, status, sandboxId, sandboxConfig, result, signal);
      if (result.startFailures.has(init.name) && init.restartPolicy !== 'Always') return result;
    }
    // Start app containers concurrently (CRI does the heavy lifting), except that, as upstream, a
    // container with a postStart hook holds back the containers after it until the hook is done:
    // workloads rely on that order (e.g. a proxy that must be up before the app starts).
    let batch: Promise<void>[] = [];
    for (const i of actions.containersToStart) {
      const c = pod.spec.containers[i];
      if (!c) continue;
      batch.push(startContainer(pod, c, status, sandboxId, sandboxConfig, result, signal));
      if (c.lifecycle?.postStart) {
        await Promise.all(batch);
        batch = [];
      }
    }
    await Promise.all(batch);
    return result;
  }

  return { getPodStatus, listPods, syncPod, killPod, removePod };
}

function formatSeconds(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${s % 60 ? `${s % 60}s` : '0s'}`;
}

function refersToPodIPs(container: Container): boolean {
  return (container.env ?? []).some((e) => {
    const path = (e.valueFrom as { fieldRef?: { fieldPath?: string } } | undefined)?.fieldRef?.fieldPath;
    return path === 'status.podIP' || path === 'status.podIPs';
  });
}
