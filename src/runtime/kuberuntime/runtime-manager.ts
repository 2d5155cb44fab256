import { mkdir } from 'node:fs/promises';
import { KUBELET_DIR_MODE } from '../../util/private-dir.ts';
import type { Container, KubeletPod } from '../../api/types.ts';
import { podFullName } from '../../api/types.ts';
import type { EventRecorder } from '../../api/events.ts';
import type { Logger } from '../../util/logger.ts';
import type { Backoff } from '../../util/backoff.ts';
import { describeError } from '../../util/errors.ts';
import type { DNSConfig, PodSandboxConfig } from '../cri/index.ts';
import { computePodActions, type PodActions, type ProbeVerdicts } from './compute-pod-actions.ts';
import { createContainerSetup, type ContainerSetupDeps } from './container-setup.ts';
import { createContainerStarter, type StartContainerRequest, type StartStep } from './container-starter.ts';
import type { ImageManager, ImagePullState } from '../images/index.ts';
import { createHookRunner, type HookRunner } from '../lifecycle/index.ts';
import { createPodKiller, type PodKiller } from './pod-killer.ts';
import { createPodStatusReader, toSandboxStatus, type RuntimePodSummary } from './pod-status-reader.ts';
import { podIPs, sandboxIPs, type RuntimePodStatus } from './runtime-pod.ts';
import { generateSandboxConfig } from './sandbox-config.ts';
import { monotonicNow } from '../../util/clock.ts';
import { MAX_PARALLEL_CONTAINER_STARTS } from '../../config/defaults.ts';
import { unpacedRuntime, type RuntimePacer } from './pacer.ts';
import { noopTimeline, type TimelineRecorder } from '../../timeline/index.ts';
import type { RuntimeClassLookup } from '../../api/runtime-class-informer.ts';

export type { RuntimePodSummary } from './pod-status-reader.ts';
export { backoffKey } from './container-starter.ts';
export { gracePeriodFor } from './pod-killer.ts';

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

/**
 * The runtime side of the kubelet (upstream kubeGenericRuntimeManager): CRI operations by pod.
 * killPod / removePod are the kill path's (pod-killer.ts): `pod` may be undefined for orphans.
 */
export interface RuntimeManager extends Pick<PodKiller, 'killPod' | 'removePod'> {
  /**
   * Read-only, for `why` (optional: fakes need not answer): the pod's image pulls in flight and in
   * back-off (image-manager.ts), and its preStop hooks running now (pod-killer.ts).
   */
  imagePulls?(podUID: string): ImagePullState[];
  preStopsRunning?: PodKiller['preStopsRunning'];
  /** Reads everything the runtime holds for a pod UID. */
  getPodStatus(uid: string, name: string, namespace: string, signal?: AbortSignal): Promise<RuntimePodStatus>;
  /** Every pod the runtime holds (from labels), without per-container status calls. */
  listPods(signal?: AbortSignal): Promise<RuntimePodSummary[]>;
  /** Brings the runtime in line with the pod spec: sandbox, init containers, app containers. */
  syncPod(
    pod: KubeletPod,
    status: RuntimePodStatus,
    signal?: AbortSignal,
    probes?: ProbeVerdicts,
  ): Promise<PodSyncResult>;
}

/** Container setup's dependencies (mounts, environment, root dir, seccomp …) and the manager's own. */
export interface RuntimeManagerDeps extends ContainerSetupDeps {
  images: ImageManager;
  recorder: EventRecorder;
  logger: Logger;
  /** Crash-loop back-off, shared by all pods (key: pod/container/hash). */
  backoff: Backoff;
  hostDNS: () => DNSConfig;
  /**
   * The pod's cgroup for the sandbox's cgroup_parent (the container manager; the caller has made
   * sure it exists). Absent or '': the runtime's default parent.
   */
  podCgroupParent?: (pod: KubeletPod) => string;
  /** Runs postStart/preStop handlers. Default: exec through `runtime.execSync`, HTTP from this host. */
  hooks?: HookRunner;
  /** Wall ms (compared with the runtime's stamps); default Date.now. */
  now?: () => number;
  /** Monotonic ms (intervals, the order of status reads); default util/clock's. */
  monotonic?: () => number;
  /**
   * Paces RunPodSandbox, CreateContainer and StartContainer across pods (pacer.ts); default
   * unpaced (every call at once).
   */
  pacer?: RuntimePacer;
  /** Each pod's startup timeline (sandbox, network, containers, kill steps); default: none. */
  timeline?: TimelineRecorder;
  /**
   * Resolves `spec.runtimeClassName` to the CRI runtime handler (cluster mode: the RuntimeClass
   * informer). Absent (standalone, as upstream without an API client): every pod gets the runtime's
   * default handler and a runtimeClassName is only warned about.
   */
  runtimeClasses?: RuntimeClassLookup;
}

/**
 * Wires the status reader, the kill path and the start path; `syncPod` carries out what
 * `computePodActions` decides.
 */
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
  const monotonic = deps.monotonic ?? monotonicNow;
  const pacer = deps.pacer ?? unpacedRuntime;
  const timeline = deps.timeline ?? noopTimeline;
  const reader = createPodStatusReader({ runtime, now, monotonic });
  const killer = createPodKiller({
    runtime,
    recorder: deps.recorder,
    logger: deps.logger,
    hooks,
    monotonic,
    timeline,
    onContainerRemoved: (id) => reader.forgetContainer(id),
  });
  const startContainer = createContainerStarter({
    runtime,
    images: deps.images,
    recorder: deps.recorder,
    logger: deps.logger,
    backoff: deps.backoff,
    hooks,
    setup: createContainerSetup(deps),
    killContainer: (req) => killer.killContainer(req),
    now,
    monotonic,
    pacer,
    timeline,
  });

  function sandboxConfigFor(pod: KubeletPod, actions: PodActions): PodSandboxConfig {
    return generateSandboxConfig(pod, {
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
  }

  /**
   * RunPodSandbox, then (upstream SyncPod) one PodSandboxStatus for the new sandbox's IPs, which
   * every container of this sync is set up with (/etc/hosts, status.podIP). The runtime set the
   * network up (CNI ADD) inside RunPodSandbox: `network-ready` follows `sandbox-created` with the
   * IP. A failure of either is the sync's `sandboxError` (upstream FailedCreatePodSandBox,
   * FailedStatusPodSandBox).
   */
  async function runSandbox(
    pod: KubeletPod,
    config: PodSandboxConfig,
    signal?: AbortSignal,
  ): Promise<{ ok: true; sandboxId: string; podIPs: string[] } | { ok: false; message: string }> {
    const uid = pod.metadata.uid;
    const log = deps.logger.child({ pod: podFullName(pod), podUID: uid });
    const failed = (step: 'sandbox-created', err: string) => {
      if (!signal?.aborted) timeline.record(uid, 'failed', { failedStep: step, error: err });
      // Upstream: createPodSandbox's error, as the FailedCreatePodSandBox event and an error log.
      const message = `Failed to create pod sandbox: ${err}`;
      log.warn('failed to create pod sandbox', { err });
      deps.recorder.event(pod, 'Warning', 'FailedCreatePodSandBox', message);
      return { ok: false as const, message };
    };
    const runtimeClassName = pod.spec.runtimeClassName;
    let handler = '';
    if (deps.runtimeClasses) {
      const found = deps.runtimeClasses.lookupRuntimeHandler(runtimeClassName);
      if (!found.ok) return failed('sandbox-created', found.message);
      handler = found.handler;
      if (handler !== '') log.debug('running pod with runtime handler', { runtimeHandler: handler });
    } else if (runtimeClassName) {
      log.warn('no API server to resolve the runtimeClassName: the runtime default handler runs the pod', {
        runtimeClassName,
      });
    }
    let sandboxId: string;
    try {
      // Upstream makes it 0755; 0750 here: the logs are only for root (and the log dir's group).
      await mkdir(config.logDirectory ?? deps.podLogsDir, { recursive: true, mode: KUBELET_DIR_MODE });
      sandboxId = await pacer.run(
        uid,
        'RunPodSandbox',
        () => {
          // Here, not before the pacer: a turn waited for is the kubelet's queueing, not the sandbox's.
          timeline.record(uid, 'sandbox-requested');
          return runtime.runPodSandbox(config, handler, { signal });
        },
        signal,
      );
    } catch (err) {
      return failed('sandbox-created', describeError(err));
    }
    timeline.record(uid, 'sandbox-created');
    // A host-network sandbox has no IP of its own (its containers get the host's).
    if (pod.spec.hostNetwork) {
      timeline.record(uid, 'network-ready');
      return { ok: true, sandboxId, podIPs: [] };
    }
    try {
      const ips = sandboxIPs(toSandboxStatus(await runtime.podSandboxStatus(sandboxId, { signal })));
      timeline.record(uid, 'network-ready', { podIP: ips[0] ?? '' });
      return { ok: true, sandboxId, podIPs: ips };
    } catch (err) {
      if (!signal?.aborted) {
        timeline.record(uid, 'failed', { failedStep: 'network-ready', error: describeError(err) });
      }
      const message = `Unable to get pod sandbox status: ${describeError(err)}`;
      deps.recorder.event(pod, 'Warning', 'FailedStatusPodSandBox', message);
      return { ok: false, message };
    }
  }

  async function syncPod(
    pod: KubeletPod,
    status: RuntimePodStatus,
    signal?: AbortSignal,
    probes?: ProbeVerdicts,
  ): Promise<PodSyncResult> {
    const log = deps.logger.child({ pod: podFullName(pod), podUID: pod.metadata.uid });
    const result: PodSyncResult = {
      startFailures: new Map(),
      started: [],
      sandboxError: undefined,
      retryAfterMs: undefined,
    };
    const record = (name: string, outcome: StartStep<string>): boolean => {
      if (outcome.ok) {
        result.started.push(name);
        return true;
      }
      const { reason, message } = outcome.failure;
      result.startFailures.set(name, { reason, message });
      if (outcome.failure.reason === 'CrashLoopBackOff') {
        result.retryAfterMs = Math.min(result.retryAfterMs ?? Infinity, outcome.failure.retryAfterMs);
      }
      return false;
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
      await killer.killPod(pod, status, undefined, signal);
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
        await killer.killContainer({
          pod,
          container: cs,
          gracePeriodOverride: k.gracePeriodSeconds,
          reason: k.reason,
          signal,
        });
      }
    }
    await killer.pruneContainers(pod, status, signal);

    let sandboxId = actions.sandboxId;
    // The IPs of the sandbox the containers join: the runtime's status has them unless it is new.
    let ips = pod.spec.hostNetwork ? [] : podIPs(status);
    const sandboxConfig = sandboxConfigFor(pod, actions);
    if (actions.createSandbox) {
      const sandbox = await runSandbox(pod, sandboxConfig, signal);
      if (!sandbox.ok) {
        result.sandboxError = sandbox.message;
        return result;
      }
      sandboxId = sandbox.sandboxId;
      ips = sandbox.podIPs;
      log.debug('sandbox created', { sandboxID: sandboxId, attempt: actions.attempt });
    }
    if (!actions.createSandbox && actions.killPod) return result;

    const request = (container: Container): StartContainerRequest => ({
      pod,
      container,
      status,
      sandboxId,
      podIPs: ips,
      sandboxConfig,
      signal,
    });
    // Upstream SyncPod step 6: init containers in spec order. A regular one that fails to start ends
    // the sync; a sidecar (restartPolicy Always) that fails is skipped.
    for (const i of actions.initContainersToStart) {
      const init = pod.spec.initContainers?.[i];
      if (!init) continue;
      const started = record(init.name, await startContainer(request(init)));
      if (!started && init.restartPolicy !== 'Always') return result;
    }
    // Start app containers concurrently (CRI does the heavy lifting), except that, as upstream, a
    // container with a postStart hook holds back the containers after it until the hook is done:
    // workloads rely on that order (e.g. a proxy that must be up before the app starts).
    // At most MAX_PARALLEL_CONTAINER_STARTS in flight: a pod of hundreds of containers would
    // otherwise set all of them up in one burst (seconds of event-loop stalls, measured).
    const inFlight = new Set<Promise<boolean>>();
    for (const i of actions.containersToStart) {
      const c = pod.spec.containers[i];
      if (!c) continue;
      while (inFlight.size >= MAX_PARALLEL_CONTAINER_STARTS) await Promise.race(inFlight);
      const started: Promise<boolean> = startContainer(request(c)).then((outcome) => {
        inFlight.delete(started);
        return record(c.name, outcome);
      });
      inFlight.add(started);
      if (c.lifecycle?.postStart) await Promise.all(inFlight);
    }
    await Promise.all(inFlight);
    return result;
  }

  return {
    getPodStatus: (uid, name, namespace, signal) => reader.getPodStatus(uid, name, namespace, signal),
    listPods: (signal) => reader.listPods(signal),
    syncPod,
    killPod: (pod, status, gracePeriodOverride, signal) =>
      killer.killPod(pod, status, gracePeriodOverride, signal),
    removePod: (status, signal) => killer.removePod(status, signal),
    preStopsRunning: (uid) => killer.preStopsRunning(uid),
    imagePulls: (uid) => deps.images.pullState(uid),
  };
}
