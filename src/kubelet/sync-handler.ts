import type { KubeletPod, PodStatus } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import type { EventRecorder, NodeEventSink } from '../api/events.ts';
import type { Logger } from '../util/logger.ts';
import type { Backoff } from '../util/backoff.ts';
import { describeError } from '../util/errors.ts';
import { POD_WORKER_RESYNC_AFTER_ERROR_MS } from '../config/defaults.ts';
import type { RuntimeManager, RuntimePodStatus } from '../runtime/index.ts';
import type { PodStatusCache } from '../pleg/index.ts';
import {
  computePodStatus,
  isTerminalPhase,
  type WaitingReason,
  type StatusManager,
} from '../status/index.ts';
import { mountsUnder, podDir, type VolumeManager } from '../volume/index.ts';
import { ORPHANED_POD_CLEANED_UP, orphanCleanedUpMessage } from './orphan-events.ts';
import type { ProbeContainer, ProbeManager } from '../prober/index.ts';
import type { ContainerManager, QosUpdater } from '../cm/index.ts';
import type { KubeletMetrics } from '../metrics/index.ts';
import type { PodSyncHandlers, SyncOutcome } from './pod-workers.ts';
import type { PodState } from './pod-state.ts';
import type { WorkQueue } from './work-queue.ts';
import { isStaticPod } from '../api/pod-source.ts';
import { stoppedPodStatus } from './stop-pod.ts';
import {
  activeDeadlineRemainingMs,
  deadlineExceededStatus,
  DEADLINE_EXCEEDED_MESSAGE,
  DEADLINE_EXCEEDED_REASON,
} from './active-deadline.ts';

/** Upstream pkg/kubelet/events FailedUnMountVolume. */
const FAILED_UNMOUNT_REASON = 'FailedUnMount';

/** Jitter on periodic resyncs so pods started together don't resync together (upstream 0.5). */
const RESYNC_JITTER = 0.5;

export interface SyncHandlerDeps {
  runtime: RuntimeManager;
  /** The PLEG's pod status cache: read when fresh, refreshed after every sync. */
  cache: PodStatusCache;
  probes: ProbeManager;
  statuses: StatusManager;
  volumes: VolumeManager;
  state: PodState;
  workQueue: WorkQueue;
  backoff: Backoff;
  qos: QosUpdater;
  /** The container manager once started (pod cgroups); undefined: the runtime's default parent. */
  cgroups(): ContainerManager | undefined;
  /** Cluster mode: deletes a terminated API pod with grace 0 (upstream status manager's last step). */
  deletePod?: (pod: KubeletPod, signal: AbortSignal) => Promise<void>;
  recorder: EventRecorder;
  /** Events about the node (an orphan's volumes torn down); absent: logged only. */
  nodeEvent?: NodeEventSink;
  /** The kubelet root dir (pod directories: an orphan's mounts are listed before its cleanup). */
  rootDir: string;
  logger: Logger;
  metrics?: KubeletMetrics;
  nodeIP: string | undefined;
  syncFrequencyMs: number;
  /** Wall ms: status times, the active deadline (from the API's startTime). */
  now(): number;
  /** Monotonic ms: the order of status reads and syncs, durations. */
  monotonic(): number;
  random?: () => number;
}

/** The pod workers' handlers (upstream SyncHandler) plus the status computation they share. */
export interface SyncHandler extends PodSyncHandlers {
  /** A pod's API status from its runtime status, previous status, waiting reasons and probes. */
  computeStatus(pod: KubeletPod, rs: RuntimePodStatus): PodStatus;
}

/** The newest container of each name, as the prober tracks them. */
export function currentContainers(rs: RuntimePodStatus): ProbeContainer[] {
  const seen = new Set<string>();
  const out: ProbeContainer[] = [];
  for (const c of rs.containers) {
    if (seen.has(c.name)) continue;
    seen.add(c.name);
    out.push({ name: c.name, containerId: c.id, state: c.state, startedAt: c.startedAt });
  }
  return out;
}

export function createSyncHandler(deps: SyncHandlerDeps): SyncHandler {
  const { runtime, cache, probes, statuses, volumes, state } = deps;
  const now = (): number => deps.now();
  const monotonic = (): number => deps.monotonic();
  const random = deps.random ?? Math.random;
  const log = deps.logger;

  const podLog = (pod: KubeletPod): Logger => log.child({ pod: podFullName(pod), podUID: pod.metadata.uid });
  const jittered = (ms: number): number => ms + random() * ms * RESYNC_JITTER;

  function computeStatus(pod: KubeletPod, rs: RuntimePodStatus): PodStatus {
    const uid = pod.metadata.uid;
    const status = computePodStatus({
      pod,
      runtime: rs,
      // An API pod's own status seeds the first computation (keeps startTime, scheduler conditions).
      previous: statuses.get(uid) ?? pod.status,
      waiting: state.waitingReasons.get(uid) ?? new Map(),
      hostIP: deps.nodeIP,
      probes: {
        isReady: (name) => probes.isReady(uid, name),
        isStarted: (name) => probes.isStarted(uid, name),
      },
      now,
    });
    const override = state.statusOverrides.get(uid);
    return override ? stoppedPodStatus(status, override) : status;
  }

  async function readStatus(pod: KubeletPod, signal: AbortSignal): Promise<RuntimePodStatus> {
    const uid = pod.metadata.uid;
    const rs = await runtime.getPodStatus(uid, pod.metadata.name, pod.metadata.namespace, signal);
    cache.set(uid, rs);
    return rs;
  }

  /** The cached runtime status if a relist refreshed it since the pod's last sync, else a fresh read. */
  async function runtimeStatusFor(pod: KubeletPod, signal: AbortSignal): Promise<RuntimePodStatus> {
    const uid = pod.metadata.uid;
    const cached = cache.get(uid);
    const since = state.lastSyncEnd.get(uid);
    if (cached && since !== undefined && cached.timestamp > since) return cached;
    return readStatus(pod, signal);
  }

  async function syncPod(pod: KubeletPod, signal: AbortSignal): Promise<SyncOutcome> {
    const uid = pod.metadata.uid;
    const plog = podLog(pod);
    if (deps.metrics && !state.firstSeen.has(uid)) state.firstSeen.set(uid, monotonic());
    let rs = await runtimeStatusFor(pod, signal);
    probes.addPod(pod);
    probes.updateContainers(uid, currentContainers(rs));
    let status = computeStatus(pod, rs);
    const deadlineMs = isTerminalPhase(status.phase)
      ? undefined
      : activeDeadlineRemainingMs(pod, status, now());
    if (deadlineMs !== undefined && deadlineMs <= 0) {
      // Upstream activeDeadlineHandler: the pod fails and its containers are killed.
      deps.recorder.event(pod, 'Normal', DEADLINE_EXCEEDED_REASON, DEADLINE_EXCEEDED_MESSAGE);
      status = deadlineExceededStatus(status);
    }
    statuses.set(uid, status);
    if (isTerminalPhase(status.phase)) return { terminal: true };
    // Sync again no later than the deadline.
    const requeue = (delayMs: number): void =>
      deps.workQueue.enqueue(uid, deadlineMs === undefined ? delayMs : Math.min(delayMs, deadlineMs));
    const cm = deps.cgroups();
    if (cm) rs = await ensurePodCgroup(cm, pod, rs, signal);

    try {
      await volumes.setUpPodVolumes(pod, signal);
    } catch (err) {
      const message = `MountVolume.SetUp failed: ${describeError(err)}`;
      deps.recorder.event(pod, 'Warning', 'FailedMount', message);
      plog.warn('volumes not ready; containers wait', { err: describeError(err) });
      state.syncErrors.set(uid, { step: 'volumes', message: describeError(err), at: monotonic() });
      state.lastSyncEnd.set(uid, monotonic());
      requeue(jittered(POD_WORKER_RESYNC_AFTER_ERROR_MS));
      return { terminal: false };
    }
    const result = await runtime.syncPod(pod, rs, signal, {
      restartReason: (name) => probes.restartReason(uid, name),
      isStarted: (name) => probes.isStarted(uid, name),
    });
    deps.metrics?.recordContainerStarts(pod, result);
    const reasons = state.waitingReasons.get(uid) ?? new Map<string, WaitingReason>();
    for (const name of result.started) reasons.delete(name);
    for (const [name, f] of result.startFailures) reasons.set(name, f);
    state.waitingReasons.set(uid, reasons);
    if (result.started.length > 0 || result.startFailures.size > 0 || result.sandboxError !== undefined) {
      rs = await readStatus(pod, signal);
      probes.updateContainers(uid, currentContainers(rs));
      status = computeStatus(pod, rs);
      statuses.set(uid, status);
    }
    state.lastSyncEnd.set(uid, monotonic());
    if (result.sandboxError !== undefined) {
      state.syncErrors.set(uid, { step: 'sandbox', message: result.sandboxError, at: monotonic() });
    } else {
      state.syncErrors.delete(uid);
    }
    if (result.sandboxError !== undefined) {
      requeue(jittered(POD_WORKER_RESYNC_AFTER_ERROR_MS));
    } else if (result.retryAfterMs !== undefined) {
      requeue(result.retryAfterMs);
    } else if (result.startFailures.size > 0) {
      requeue(jittered(POD_WORKER_RESYNC_AFTER_ERROR_MS));
    } else {
      requeue(jittered(deps.syncFrequencyMs));
    }
    if (result.started.length > 0) plog.info('pod synced', { started: result.started, phase: status.phase });
    const seen = state.firstSeen.get(uid);
    if (deps.metrics && seen !== undefined && status.phase === 'Running' && seen >= 0) {
      deps.metrics.observePodStartDuration((monotonic() - seen) / 1000);
      state.firstSeen.set(uid, -1);
    }
    return { terminal: isTerminalPhase(status.phase) };
  }

  /**
   * Upstream syncPod's pod cgroup step. A pod whose containers run although its cgroup is missing
   * (started by a kubelet without cgroups per QoS, or the cgroup was removed) is killed so that it
   * restarts inside it; a restartPolicy Never pod killed that way is not restarted and gets no
   * cgroup. Before a pod cgroup is created the QoS tiers are updated to include the pod.
   */
  async function ensurePodCgroup(
    cm: ContainerManager,
    pod: KubeletPod,
    rs: RuntimePodStatus,
    signal: AbortSignal,
  ): Promise<RuntimePodStatus> {
    if (await cm.podCgroupExists(pod)) {
      await cm.ensurePodCgroup(pod, signal); // the first time after start: rewrites the values
      return rs;
    }
    const plog = podLog(pod);
    let killed = false;
    if (rs.containers.some((c) => c.state === 'running')) {
      plog.info('pod runs outside its pod cgroup; killing it so that it restarts inside', {
        cgroup: cm.podCgroupParent(pod),
      });
      try {
        await runtime.killPod(pod, rs, undefined, signal);
        killed = true;
      } catch (err) {
        if (signal.aborted) throw err;
        plog.error('failed to kill the pod running outside its cgroup', { err: describeError(err) });
      }
      rs = await readStatus(pod, signal);
    }
    if (killed && pod.spec.restartPolicy === 'Never') return rs;
    await deps.qos.update();
    try {
      await cm.ensurePodCgroup(pod, signal);
    } catch (err) {
      if (!signal.aborted) {
        deps.recorder.event(
          pod,
          'Warning',
          'FailedToCreatePodContainer',
          `unable to ensure pod container exists: ${describeError(err)}`,
        );
      }
      throw err;
    }
    return rs;
  }

  async function syncTerminatingPod(
    uid: string,
    pod: KubeletPod | undefined,
    gracePeriodOverride: number | undefined,
    identity: { name: string; namespace: string },
    signal: AbortSignal,
  ): Promise<void> {
    // Upstream: liveness/startup stop now, readiness keeps probing while containers shut down (so
    // Ready turns False and endpoints drain); every probe goes once the containers are stopped.
    probes.stopLivenessAndStartup(uid);
    state.killStarted.set(uid, { at: state.killStarted.get(uid)?.at ?? monotonic(), gracePeriodOverride });
    const rs = await runtime.getPodStatus(uid, identity.name, identity.namespace, signal);
    await runtime.killPod(pod, rs, gracePeriodOverride, signal);
    probes.removePod(uid);
    const after = await runtime.getPodStatus(uid, identity.name, identity.namespace, signal);
    cache.set(uid, after);
    if (pod && state.desired.has(uid)) statuses.set(uid, computeStatus(pod, after));
    deps.workQueue.remove(uid);
    log.info('pod terminated', { pod: `${identity.namespace}/${identity.name}`, podUID: uid });
  }

  /**
   * A volume teardown whose failure (a CSI driver that hangs or is gone, a busy mount) is recorded
   * as a FailedUnMount Warning on the pod, then rethrown so the pod worker retries the cleanup.
   * Upstream's reconciler only logs a failed UnmountVolume.TearDown and retries; the event is ours,
   * so a pod stuck in Terminating says why.
   */
  async function unmountReported(
    pod: KubeletPod | undefined,
    tearDown: () => Promise<void>,
    signal: AbortSignal,
  ): Promise<void> {
    try {
      await tearDown();
    } catch (err) {
      if (pod && !signal.aborted)
        deps.recorder.event(
          pod,
          'Warning',
          FAILED_UNMOUNT_REASON,
          `UnmountVolume.TearDown failed: ${describeError(err)}; will be retried`,
        );
      throw err;
    }
  }

  async function syncTerminatedPod(
    uid: string,
    podArg: KubeletPod | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    const pod = state.desired.get(uid) ?? podArg;
    const deleting = !state.desired.has(uid) || pod?.metadata.deletionTimestamp !== undefined;
    if (!deleting) {
      // A finished pod still in its source keeps its containers (for logs) but not its volumes
      // (upstream's volume manager unmounts a terminated pod's): an evicted pod's emptyDir and
      // memory-backed volumes are freed here.
      await unmountReported(pod, () => volumes.tearDownVolumes(uid, signal), signal);
      return;
    }
    const rs = await runtime.getPodStatus(
      uid,
      pod?.metadata.name ?? '',
      pod?.metadata.namespace ?? '',
      signal,
    );
    // Every container is stopped by now: the volumes and the pod cgroup go even when the runtime
    // cannot remove a record (upstream's volume manager and cgroup cleanup do not wait for the
    // container GC either). containerd 1.6 keeps a stopped task whose StartContainer was cancelled
    // and then refuses RemoveContainer for good (containerd#11037); the pod's mounts, directory
    // and cgroup must not stay on the node for that. The removal error ends this pass and the
    // worker retries it.
    let removeError: Error | undefined;
    try {
      await runtime.removePod(rs, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      removeError = err instanceof Error ? err : new Error(describeError(err));
      log.warn(
        'failed to remove the pod from the runtime; its volumes and cgroup are cleaned up and the removal retried',
        {
          pod: pod ? podFullName(pod) : undefined,
          podUID: uid,
          err: describeError(err),
          ...(describeError(err).includes('cannot delete running task')
            ? {
                hint: 'containerd kept a stopped task (containerd#11037): `ctr -n k8s.io tasks delete <id>` or a containerd restart frees it',
              }
            : {}),
        },
      );
    }
    // An orphan no source knows (found in the runtime, e.g. deleted while the kubelet was down):
    // the mounts it leaves are told as a Node event, so none goes silently.
    const orphanMounts = pod ? [] : (await mountsUnder(podDir(deps.rootDir, uid))).map((m) => m.mountPoint);
    await unmountReported(pod, () => volumes.cleanUpPod(uid, signal), signal);
    if (orphanMounts.length > 0) {
      const name = rs.name ? `${rs.namespace}/${rs.name}` : undefined;
      log.info('removed orphaned pod volumes', { pod: name, podUID: uid, unmounted: orphanMounts });
      deps.nodeEvent?.('Normal', ORPHANED_POD_CLEANED_UP, orphanCleanedUpMessage(uid, orphanMounts, name));
    }
    const cm = deps.cgroups();
    if (cm) {
      try {
        await cm.destroyPodCgroup(uid, signal);
      } catch (err) {
        if (signal.aborted) throw err;
        log.warn('failed to remove the pod cgroup; housekeeping retries', {
          pod: pod ? podFullName(pod) : undefined,
          podUID: uid,
          err: describeError(err),
        });
      }
      void deps.qos.update();
    }
    if (removeError !== undefined) throw removeError;
    cache.delete(uid);
    state.forgetRuntime(uid);
    for (const k of [...deps.backoff.entries().keys()]) if (k.includes(`_${uid}_`)) deps.backoff.reset(k);
    if (pod && state.desired.has(uid) && deps.deletePod && !isStaticPod(pod)) {
      await deps.deletePod(pod, signal);
    } else {
      statuses.delete(uid);
    }
  }

  return {
    syncPod,
    syncTerminatingPod,
    syncTerminatedPod,
    onSyncError: (uid, err) => {
      state.syncErrors.set(uid, { step: 'sync', message: describeError(err), at: monotonic() });
      deps.workQueue.enqueue(uid, jittered(POD_WORKER_RESYNC_AFTER_ERROR_MS));
    },
    computeStatus,
  };
}
