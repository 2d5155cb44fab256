import { mkdir, readdir, readFile, writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod, PodStatus } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import type { EventRecorder } from '../api/events.ts';
import type { Logger } from '../util/logger.ts';
import { AsyncQueue } from '../util/async-queue.ts';
import { createBackoff, type Backoff } from '../util/backoff.ts';
import { describeError } from '../util/errors.ts';
import { sleep } from '../util/abort.ts';
import {
  HOUSEKEEPING_PERIOD_MS,
  POD_WORKER_RESYNC_AFTER_ERROR_MS,
  SYNC_LOOP_TICK_MS,
} from '../config/defaults.ts';
import type { ImageService, RuntimeService } from '../runtime/cri/types.ts';
import { createImageManager } from '../runtime/image-manager.ts';
import { createNodeCredentials } from '../runtime/node-credentials.ts';
import { createRuntimeManager, type RuntimeManager } from '../runtime/runtime-manager.ts';
import { makeEnvironment, type ServiceLister } from '../runtime/env.ts';
import type { RuntimePodStatus } from '../runtime/runtime-pod.ts';
import { readHostDNS } from '../runtime/sandbox-config.ts';
import { createPleg, type Pleg, type PodLifecycleEvent } from '../pleg/pleg.ts';
import { computePodStatus, isTerminalPhase, type WaitingReason } from '../status/pod-status.ts';
import { needToReconcilePodReadiness } from '../status/conditions.ts';
import { createStatusManager, type StatusManager } from '../status/status-manager.ts';
import {
  createPodConfig,
  type PodConfig,
  type PodSource,
  type PodSourceName,
  type PodUpdate,
} from '../podsource/index.ts';
import { createVolumeManager, type Secret, type VolumeObjectSource } from '../volume/index.ts';
import { createProbeManager, type ProbeContainer } from '../prober/index.ts';
import { createPodWorkers, type PodWorkers, type SyncOutcome } from './pod-workers.ts';
import {
  activeDeadlineRemainingMs,
  deadlineExceededStatus,
  DEADLINE_EXCEEDED_MESSAGE,
  DEADLINE_EXCEEDED_REASON,
} from './active-deadline.ts';
import type { KubeletMetrics } from '../metrics/index.ts';
import { createWorkQueue, type WorkQueue } from './work-queue.ts';
import {
  generalPredicatesAdmitHandler,
  runAdmitHandlers,
  type NodeView,
  type PodAdmitHandler,
} from './admission.ts';
import { sysctlAdmitHandler } from './sysctl-admission.ts';
import { appArmorAdmitHandler } from './apparmor-admission.ts';
import { seccompProfileRoot } from '../runtime/security-profiles.ts';
import type { ApiClient } from '../api/client-types.ts';
import { createStatusSyncer, type StatusSyncer } from '../status/api-syncer.ts';
import { isStaticPod, type MirrorPods } from './mirror-pods.ts';
import { isNotFound } from '../util/errors.ts';
import type { ContainerManager } from '../cm/index.ts';
import { PERIODIC_QOS_CGROUP_UPDATE_INTERVAL_MS } from '../config/defaults.ts';

/** The settings the kubelet core needs (compiled from KubeletConfiguration + flags by the CLI). */
export interface KubeletOptions {
  nodeName: string;
  nodeIP: string | undefined;
  rootDir: string;
  podLogsDir: string;
  maxPods: number;
  syncFrequencyMs: number;
  resolvConf?: string;
  /** KubeletConfiguration clusterDNS / clusterDomain (ClusterFirst pods); absent or empty: host DNS. */
  clusterDNS?: readonly string[];
  clusterDomain?: string;
  /**
   * Image pulls at once across pods (1 = serializeImagePulls; `Infinity` = no limit). Absent: the
   * image manager's default (DEFAULT_MAX_PARALLEL_IMAGE_PULLS).
   */
  maxParallelImagePulls?: number;
  /** registryPullQPS (0 = no limit) and registryBurst; absent: upstream defaults 5 / 10. */
  registryPullQPS?: number;
  registryBurst?: number;
  /** KubeletConfiguration seccompDefault: RuntimeDefault for containers that set no profile. */
  seccompDefault?: boolean;
  /** KubeletConfiguration allowedUnsafeSysctls (validated; names or `prefix*`). */
  allowedUnsafeSysctls?: readonly string[];
}

/** Everything from outside the kubelet, in one object that tests replace (upstream Dependencies). */
export interface KubeletDependencies {
  runtimeService: RuntimeService;
  imageService: ImageService;
  /** Pod sources; their names are the sources the kubelet waits for before cleaning up orphans. */
  sources: PodSource[];
  recorder: EventRecorder;
  logger: Logger;
  /** The node as admission sees it (the Node object in cluster mode, the machine standalone). */
  node: () => NodeView;
  /** Present in cluster mode: pod statuses, mirror pods and deletions go to the API server. */
  cluster?: {
    api: ApiClient;
    mirrorPods: MirrorPods;
    volumeObjects?: VolumeObjectSource;
    /** The Service informer, for service-link env vars (pods from the API wait for its first list). */
    services?: ServiceLister;
  };
  /** Pod cgroups per QoS class (src/cm); absent or disabled: the runtime's default cgroup parent. */
  containerManager?: ContainerManager;
  /** Prometheus metrics (src/metrics); absent: nothing is measured. */
  metrics?: KubeletMetrics;
  now?: () => number;
}

/** One item of the sync loop's queue: the only way anything reaches kubelet state. */
export type LoopEvent =
  | { kind: 'config'; update: PodUpdate }
  | { kind: 'pleg'; event: PodLifecycleEvent }
  | { kind: 'tick' }
  | { kind: 'housekeeping' }
  /** The API source saw the mirror pods bound to this node change. */
  | { kind: 'mirrors'; pods: Pod[] }
  /** A probe result changed for a pod. */
  | { kind: 'probe'; uid: string };

export interface PodView {
  pod: Pod;
  status: PodStatus | undefined;
}

export interface Kubelet {
  /** Starts sources, PLEG and the sync loop; resolves when `stop` has finished. */
  run(): Promise<void>;
  stop(): Promise<void>;
  /** The pods the kubelet manages, with their latest computed status (for /pods). */
  pods(): PodView[];
  healthz(): { ok: boolean; message: string };
  /**
   * Node readiness as upstream's runtimeState: the CRI runtime answered Status recently with
   * RuntimeReady and NetworkReady, and the PLEG is healthy. The message says what is wrong.
   */
  runtimeReady(): { ok: boolean; message: string };
  /** `<runtimeName>://<version>` from CRI Version, once known. */
  runtimeVersion(): string;
  /** Resolves once every configured source has delivered its first snapshot. */
  sourcesReady(): boolean;
  /** The API source reports the mirror pods bound to this node (cluster mode). */
  setMirrorPods(pods: Pod[]): void;
  /** Internals for run-once mode and tests. */
  readonly runtime: RuntimeManager;
  readonly podConfig: PodConfig;
  readonly pleg: Pleg;
  readonly statusManager: StatusManager;
  readonly workers: PodWorkers;
  computeStatus(pod: Pod, rs: RuntimePodStatus): PodStatus;
}

/** Upstream runtime status check period (kl.updateRuntimeUp every 5 s). */
const RUNTIME_STATUS_PERIOD_MS = 5_000;
/** Loop queue capacity (upstream plegChannelCapacity is 1000; config updates share it here). */
const LOOP_QUEUE_CAPACITY = 4096;
/** Jitter on periodic resyncs so pods started together don't resync together (upstream 0.5). */
const RESYNC_JITTER = 0.5;

/**
 * Wires the managers; starts nothing (upstream NewMainKubelet). `run()` starts.
 */
export function createKubelet(opts: KubeletOptions, deps: KubeletDependencies): Kubelet {
  const now = deps.now ?? Date.now;
  const log = deps.logger;
  const backoff: Backoff = createBackoff();
  const backoffFile = join(opts.rootDir, 'tskubelet', 'container-backoff.json');
  const volumes = createVolumeManager({
    rootDir: opts.rootDir,
    logger: log,
    ...(deps.cluster?.volumeObjects ? { objects: deps.cluster.volumeObjects } : {}),
  });
  // The node's own docker config (config.json / .dockercfg), root dir first (upstream sets its
  // preferred docker config path to the root directory).
  const nodeCredentials = createNodeCredentials({ rootDir: opts.rootDir, logger: log, now });
  const images = createImageManager({
    images: deps.imageService,
    recorder: deps.recorder,
    logger: log,
    now,
    nodeCredentials: () => nodeCredentials.keyring(),
    ...(opts.maxParallelImagePulls !== undefined ? { maxParallelPulls: opts.maxParallelImagePulls } : {}),
    ...(opts.registryPullQPS !== undefined ? { registryPullQPS: opts.registryPullQPS } : {}),
    ...(opts.registryBurst !== undefined ? { registryBurst: opts.registryBurst } : {}),
    ...(deps.cluster?.volumeObjects ? { pullSecrets: pullSecretsFor(deps.cluster.volumeObjects, log) } : {}),
  });
  const cm = deps.containerManager?.enabled ? deps.containerManager : undefined;
  let cgroupsStarted = false;
  const runtime = createRuntimeManager({
    runtime: deps.runtimeService,
    images,
    recorder: deps.recorder,
    logger: log,
    backoff,
    podLogsDir: opts.podLogsDir,
    rootDir: opts.rootDir,
    seccomp: {
      profileRoot: seccompProfileRoot(opts.rootDir),
      defaultToRuntimeDefault: opts.seccompDefault ?? false,
    },
    hostDNS: () => readHostDNS(opts.resolvConf ?? '/etc/resolv.conf'),
    clusterDNS: { servers: opts.clusterDNS ?? [], domain: opts.clusterDomain ?? '' },
    // Only once run() started the container manager: run-once syncs through the runtime directly
    // and keeps the runtime's default parent.
    ...(cm ? { podCgroupParent: (pod: Pod) => (cgroupsStarted ? cm.podCgroupParent(pod) : '') } : {}),
    mountsFor: (pod, container) => volumes.mountsFor(pod, container),
    imageUser: async (imageRef, signal) => {
      const img = await deps.imageService.imageStatus({ image: imageRef }, { signal });
      return img ? { ...(img.uid ? { uid: img.uid.value } : {}), username: img.username } : undefined;
    },
    makeEnv: (pod, container, podIPs, signal) => {
      const node = deps.node();
      return makeEnvironment({
        pod,
        container,
        // Upstream: a host-network pod's IPs are the node's.
        podIPs: pod.spec.hostNetwork && opts.nodeIP ? [opts.nodeIP] : podIPs,
        ...(opts.nodeIP ? { hostIP: opts.nodeIP } : {}),
        nodeName: opts.nodeName,
        ...(deps.cluster?.volumeObjects ? { objects: deps.cluster.volumeObjects } : {}),
        nodeAllocatable: { cpu: `${node.allocatable.milliCPU}m`, memory: String(node.allocatable.memory) },
        ...(deps.cluster?.services ? { services: deps.cluster.services } : {}),
        onWarning: (w) => deps.recorder.event(pod, 'Warning', w.reason, w.message),
        logger: log,
        ...(signal ? { signal } : {}),
      });
    },
    now,
  });
  const metrics = deps.metrics;
  const pleg = createPleg({ runtime, logger: log, now, ...(metrics ? { metrics: metrics.pleg } : {}) });
  metrics?.setRuntimePodsProvider(() => pleg.runtimePods());
  /** When each pod UID was first handed to a worker, until it first runs (pod start duration). */
  const firstSeen = new Map<string, number>();
  const probes = createProbeManager({
    exec: (containerId, cmd, timeoutSeconds, signal) =>
      deps.runtimeService.execSync(containerId, cmd, timeoutSeconds, { signal }),
    podIP: (uid) => statusManager.get(uid)?.podIP,
    recorder: deps.recorder,
    logger: log,
    onChange: (uid) => queue.push({ kind: 'probe', uid }),
    now,
    ...(metrics ? { metrics: metrics.prober } : {}),
  });
  const statusManager = createStatusManager();
  const workQueue: WorkQueue = createWorkQueue(now);
  const admitHandlers: PodAdmitHandler[] = [
    sysctlAdmitHandler({ allowedUnsafeSysctls: opts.allowedUnsafeSysctls ?? [] }),
    generalPredicatesAdmitHandler(deps.node),
    appArmorAdmitHandler(),
  ];
  const queue = new AsyncQueue<LoopEvent>(LOOP_QUEUE_CAPACITY);
  const expectedSources = new Set<PodSourceName>(deps.sources.map((s) => s.name));

  /** Desired pods by UID: what the sources say should run (upstream pod manager). */
  const desired = new Map<string, Pod>();
  /** Pods refused at admission; never started, reported Failed. */
  const rejected = new Set<string>();
  /** Why containers are waiting after the last sync, per pod (upstream ReasonCache). */
  const waitingReasons = new Map<string, Map<string, WaitingReason>>();
  /** When each pod's last sync finished; a cached runtime status newer than this is fresh enough. */
  const lastSyncEnd = new Map<string, number>();
  let lastLoopActivity = now();
  let runtimeState: { ok: boolean; message: string; at: number } = {
    ok: false,
    message: 'container runtime status check may not have completed yet',
    at: 0,
  };
  let runtimeVersionString = '';

  /** Upstream updateRuntimeUp (every 5 s): CRI Status conditions RuntimeReady and NetworkReady. */
  async function checkRuntime(): Promise<void> {
    try {
      if (runtimeVersionString === '') {
        const v = await deps.runtimeService.version({ timeoutMs: 5_000 });
        runtimeVersionString = `${v.runtimeName}://${v.runtimeVersion}`;
      }
      const st = await deps.runtimeService.status({ timeoutMs: 5_000 });
      const bad = st.conditions
        .filter((c) => (c.type === 'RuntimeReady' || c.type === 'NetworkReady') && !c.status)
        .map((c) => `${c.type}=false reason:${c.reason} message:${c.message}`);
      const missing = ['RuntimeReady', 'NetworkReady'].filter(
        (t) => !st.conditions.some((c) => c.type === t),
      );
      runtimeState = {
        ok: bad.length === 0 && missing.length === 0,
        message: [...bad, ...missing.map((m) => `${m} condition missing`)].join(', '),
        at: now(),
      };
    } catch (err) {
      runtimeState = { ok: false, message: `container runtime is down: ${describeError(err)}`, at: now() };
    }
  }
  let droppedEvents = 0;
  let stopping: Promise<void> | undefined;
  const timers: NodeJS.Timeout[] = [];

  const podConfig = createPodConfig({
    sources: deps.sources,
    logger: log,
    onUpdate: (update) => {
      if (!queue.push({ kind: 'config', update })) {
        // Never drop a config update: the loop is far behind; log loudly and retry shortly.
        log.error('sync loop queue full; config update delayed', { source: update.source, op: update.op });
        setTimeout(() => queue.push({ kind: 'config', update }), 100);
      }
    },
  });

  function podLog(pod: Pod): Logger {
    return log.child({ pod: podFullName(pod), podUID: pod.metadata.uid });
  }

  function computeStatus(pod: Pod, rs: RuntimePodStatus): PodStatus {
    return computePodStatus({
      pod,
      runtime: rs,
      // An API pod's own status seeds the first computation (keeps startTime, scheduler conditions).
      previous: statusManager.get(pod.metadata.uid ?? '') ?? pod.status,
      waiting: waitingReasons.get(pod.metadata.uid ?? '') ?? new Map(),
      hostIP: opts.nodeIP,
      probes: {
        isReady: (name) => probes.isReady(pod.metadata.uid ?? '', name),
        isStarted: (name) => probes.isStarted(pod.metadata.uid ?? '', name),
      },
      now,
    });
  }

  async function runtimeStatusFor(uid: string, name: string, namespace: string, signal: AbortSignal) {
    const cached = pleg.cache.get(uid);
    const since = lastSyncEnd.get(uid);
    if (cached && since !== undefined && cached.timestamp > since) return cached;
    const fresh = await runtime.getPodStatus(uid, name, namespace, signal);
    pleg.cache.set(uid, fresh);
    return fresh;
  }

  function requeue(uid: string, delayMs: number): void {
    workQueue.enqueue(uid, delayMs);
  }

  function jittered(ms: number): number {
    return ms + Math.random() * ms * RESYNC_JITTER;
  }

  // ---- pod worker handlers (upstream SyncHandler) ----

  async function syncPod(pod: Pod, signal: AbortSignal): Promise<SyncOutcome> {
    const uid = pod.metadata.uid ?? '';
    const plog = podLog(pod);
    if (metrics && !firstSeen.has(uid)) firstSeen.set(uid, now());
    let rs = await runtimeStatusFor(uid, pod.metadata.name ?? '', pod.metadata.namespace ?? '', signal);
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
    statusManager.set(uid, status);
    if (isTerminalPhase(status.phase)) return { terminal: true };
    // Sync again no later than the deadline.
    const requeueSync = (delayMs: number): void =>
      requeue(uid, deadlineMs === undefined ? delayMs : Math.min(delayMs, deadlineMs));
    if (cm) rs = await ensurePodCgroup(cm, pod, rs, signal);

    try {
      await volumes.setUpPodVolumes(pod, signal);
    } catch (err) {
      const message = `MountVolume.SetUp failed: ${describeError(err)}`;
      deps.recorder.event(pod, 'Warning', 'FailedMount', message);
      plog.warn('volumes not ready; containers wait', { err: describeError(err) });
      lastSyncEnd.set(uid, now());
      requeueSync(jittered(POD_WORKER_RESYNC_AFTER_ERROR_MS));
      return { terminal: false };
    }
    const result = await runtime.syncPod(pod, rs, signal, {
      restartReason: (name) => probes.restartReason(uid, name),
      isStarted: (name) => probes.isStarted(uid, name),
    });
    metrics?.recordContainerStarts(pod, result);
    const reasons = waitingReasons.get(uid) ?? new Map<string, WaitingReason>();
    for (const name of result.started) reasons.delete(name);
    for (const [name, f] of result.startFailures) reasons.set(name, f);
    waitingReasons.set(uid, reasons);
    if (result.started.length > 0 || result.startFailures.size > 0 || result.sandboxError !== undefined) {
      rs = await runtime.getPodStatus(uid, pod.metadata.name ?? '', pod.metadata.namespace ?? '', signal);
      pleg.cache.set(uid, rs);
      probes.updateContainers(uid, currentContainers(rs));
      status = computeStatus(pod, rs);
      statusManager.set(uid, status);
    }
    lastSyncEnd.set(uid, now());
    if (result.sandboxError !== undefined) {
      requeueSync(jittered(POD_WORKER_RESYNC_AFTER_ERROR_MS));
    } else if (result.retryAfterMs !== undefined) {
      requeueSync(result.retryAfterMs);
    } else if (result.startFailures.size > 0) {
      requeueSync(jittered(POD_WORKER_RESYNC_AFTER_ERROR_MS));
    } else {
      requeueSync(jittered(opts.syncFrequencyMs));
    }
    if (result.started.length > 0) plog.info('pod synced', { started: result.started, phase: status.phase });
    const seen = firstSeen.get(uid);
    if (metrics && seen !== undefined && status.phase === 'Running' && seen >= 0) {
      metrics.observePodStartDuration((now() - seen) / 1000);
      firstSeen.set(uid, -1);
    }
    return { terminal: isTerminalPhase(status.phase) };
  }

  async function syncTerminatingPod(
    uid: string,
    pod: Pod | undefined,
    gracePeriodOverride: number | undefined,
    identity: { name: string; namespace: string },
    signal: AbortSignal,
  ): Promise<void> {
    // Upstream: liveness/startup stop now, readiness keeps probing while containers shut down (so
    // Ready turns False and endpoints drain); every probe goes once the containers are stopped.
    probes.stopLivenessAndStartup(uid);
    const rs = await runtime.getPodStatus(uid, identity.name, identity.namespace, signal);
    await runtime.killPod(pod, rs, gracePeriodOverride, signal);
    probes.removePod(uid);
    const after = await runtime.getPodStatus(uid, identity.name, identity.namespace, signal);
    pleg.cache.set(uid, after);
    if (pod && desired.has(uid)) statusManager.set(uid, computeStatus(pod, after));
    workQueue.remove(uid);
    log.info('pod terminated', { pod: `${identity.namespace}/${identity.name}`, podUID: uid });
  }

  /**
   * Upstream syncPod's pod cgroup step. A pod whose containers run although its cgroup is missing
   * (started by a kubelet without cgroups per QoS, or the cgroup was removed) is killed so that it
   * restarts inside it; a restartPolicy Never pod killed that way is not restarted and gets no
   * cgroup. Before a pod cgroup is created the QoS tiers are updated to include the pod.
   */
  async function ensurePodCgroup(
    cm: ContainerManager,
    pod: Pod,
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
      rs = await runtime.getPodStatus(
        pod.metadata.uid ?? '',
        pod.metadata.name ?? '',
        pod.metadata.namespace ?? '',
        signal,
      );
      pleg.cache.set(pod.metadata.uid ?? '', rs);
    }
    if (killed && pod.spec.restartPolicy === 'Never') return rs;
    await updateQOS();
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

  let qosChain: Promise<void> = Promise.resolve();
  let qosQueued: Promise<void> | undefined;
  let lastQOSUpdate = 0;
  /**
   * Recomputes the QoS tiers' cpu shares from the active pods (upstream UpdateQOSCgroups).
   * Coalesced: calls made while an update waits to start share it, and an update always starts
   * after the latest call, so it sees the latest pods. Never rejects (failures are logged).
   */
  function updateQOS(): Promise<void> {
    if (!cm) return Promise.resolve();
    qosQueued ??= qosChain.then(async () => {
      qosQueued = undefined;
      lastQOSUpdate = now();
      try {
        await cm.updateQOSCgroups(activePods(), stopSignal.signal);
      } catch (err) {
        if (stopSignal.signal.aborted) return; // stopping: the next start updates them
        log.warn('failed to update the QoS cgroups; retried at the next change or within a minute', {
          err: describeError(err),
        });
      }
    });
    qosChain = qosQueued;
    return qosQueued;
  }

  async function syncTerminatedPod(uid: string, podArg: Pod | undefined, signal: AbortSignal): Promise<void> {
    const pod = desired.get(uid) ?? podArg;
    const deleting = !desired.has(uid) || pod?.metadata.deletionTimestamp !== undefined;
    if (!deleting) return; // a finished pod still in its source keeps its containers for logs
    const rs = await runtime.getPodStatus(
      uid,
      pod?.metadata.name ?? '',
      pod?.metadata.namespace ?? '',
      signal,
    );
    await runtime.removePod(rs, signal);
    await volumes.cleanUpPod(uid, signal);
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
      void updateQOS();
    }
    pleg.cache.delete(uid);
    waitingReasons.delete(uid);
    lastSyncEnd.delete(uid);
    firstSeen.delete(uid);
    for (const k of [...backoff.entries().keys()]) if (k.includes(`_${uid}_`)) backoff.reset(k);
    if (pod && desired.has(uid) && deps.cluster && !isStaticPod(pod)) {
      await finalizeDeletion(pod, signal);
    } else {
      statusManager.delete(uid);
    }
  }

  /**
   * Upstream status manager's final step of a graceful deletion: everything has stopped, so the
   * kubelet deletes the pod object with grace 0, guarded by its UID.
   */
  async function finalizeDeletion(pod: Pod, signal: AbortSignal): Promise<void> {
    const api = deps.cluster?.api;
    if (!api) return;
    try {
      await api.request({
        method: 'DELETE',
        path: `/api/v1/namespaces/${pod.metadata.namespace ?? 'default'}/pods/${pod.metadata.name ?? ''}`,
        body: {
          kind: 'DeleteOptions',
          apiVersion: 'v1',
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata.uid },
        },
        signal,
      });
      podLog(pod).info('pod deleted from the API after termination');
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  const workers = createPodWorkers(
    {
      syncPod,
      syncTerminatingPod,
      syncTerminatedPod,
      onSyncError: (uid) => requeue(uid, jittered(POD_WORKER_RESYNC_AFTER_ERROR_MS)),
    },
    log,
    metrics ? { metrics: metrics.podWorkers } : {},
  );

  const stopSignal = new AbortController();
  const statusSyncer: StatusSyncer | undefined = deps.cluster
    ? createStatusSyncer({
        api: deps.cluster.api,
        statuses: statusManager,
        logger: log,
        podFor: (uid) => desired.get(uid),
        targetFor: (uid) => {
          const pod = desired.get(uid);
          if (!pod) return undefined;
          if (isStaticPod(pod)) {
            const m = deps.cluster?.mirrorPods.mirrorFor(pod);
            return m
              ? {
                  namespace: m.metadata.namespace ?? '',
                  name: m.metadata.name ?? '',
                  uid: m.metadata.uid ?? '',
                  ...(m.status ? { status: m.status } : {}),
                  ...(m.metadata.resourceVersion ? { resourceVersion: m.metadata.resourceVersion } : {}),
                }
              : undefined;
          }
          return {
            namespace: pod.metadata.namespace ?? '',
            name: pod.metadata.name ?? '',
            uid,
            ...(pod.status ? { status: pod.status } : {}),
            ...(pod.metadata.resourceVersion ? { resourceVersion: pod.metadata.resourceVersion } : {}),
          };
        },
      })
    : undefined;

  // ---- the sync loop: dispatch only ----

  function activePods(): Pod[] {
    const out: Pod[] = [];
    for (const [uid, p] of desired) {
      if (rejected.has(uid)) continue;
      const ph = workers.phase(uid);
      if (ph === 'terminated') continue;
      if (isTerminalPhase(statusManager.get(uid)?.phase)) continue;
      out.push(p);
    }
    return out;
  }

  function handleAdd(pods: Pod[]): void {
    // Upstream sorts additions by creation time so admission is first-come first-served.
    const sorted = [...pods].sort((a, b) =>
      (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''),
    );
    for (const pod of sorted) {
      const uid = pod.metadata.uid ?? '';
      const active = activePods();
      desired.set(uid, pod);
      if (workers.phase(uid) === 'terminated') continue;
      const verdict = runAdmitHandlers(admitHandlers, pod, active);
      if (!verdict.admit) {
        rejected.add(uid);
        const message = verdict.message ?? 'rejected';
        deps.recorder.event(pod, 'Warning', verdict.reason ?? 'Rejected', message);
        statusManager.set(uid, { phase: 'Failed', reason: verdict.reason ?? 'Rejected', message });
        podLog(pod).warn('pod rejected at admission', { reason: verdict.reason, message });
        continue;
      }
      workers.update({ type: 'sync', pod });
    }
    void updateQOS();
  }

  function handleConfig(update: PodUpdate): void {
    switch (update.op) {
      case 'ADD':
        handleAdd(update.pods);
        return;
      case 'UPDATE':
        for (const pod of update.pods) {
          const uid = pod.metadata.uid ?? '';
          desired.set(uid, pod);
          if (!rejected.has(uid)) workers.update({ type: 'sync', pod });
        }
        return;
      case 'DELETE':
        for (const pod of update.pods) {
          const uid = pod.metadata.uid ?? '';
          desired.set(uid, pod);
          workers.update({
            type: 'kill',
            uid,
            pod,
            gracePeriodOverride: pod.metadata.deletionGracePeriodSeconds,
          });
        }
        return;
      case 'REMOVE':
        for (const pod of update.pods) {
          const uid = pod.metadata.uid ?? '';
          desired.delete(uid);
          rejected.delete(uid);
          if (workers.phase(uid) === undefined) statusManager.delete(uid);
          else workers.update({ type: 'kill', uid, pod });
        }
        void updateQOS();
        return;
      case 'RECONCILE':
        for (const pod of update.pods) {
          const uid = pod.metadata.uid ?? '';
          desired.set(uid, pod);
          // Upstream HandlePodReconcile: a readiness-gate condition changed in the API; sync so
          // Ready follows now rather than at the next resync.
          if (!rejected.has(uid) && needToReconcilePodReadiness(pod)) workers.update({ type: 'sync', pod });
        }
        return;
      case 'SET':
        log.error('unexpected SET update reached the sync loop', { source: update.source });
        return;
    }
  }

  function handlePleg(e: PodLifecycleEvent): void {
    const pod = desired.get(e.uid);
    if (!pod || rejected.has(e.uid)) return; // orphans are handled by housekeeping
    workers.update({ type: 'sync', pod });
  }

  function handleMirrors(pods: Pod[]): void {
    const mirrors = deps.cluster?.mirrorPods;
    if (!mirrors) return;
    mirrors.setMirrors(pods);
    // Static pods whose mirror just appeared can now have their status written.
    for (const [uid, p] of desired)
      if (isStaticPod(p) && mirrors.mirrorFor(p)) statusSyncer?.markDirty([uid]);
  }

  let mirrorPass: Promise<void> | undefined;
  function reconcileMirrors(): void {
    const mirrors = deps.cluster?.mirrorPods;
    if (!mirrors || mirrorPass) return;
    const statics = [...desired.values()].filter(isStaticPod);
    mirrorPass = mirrors
      .reconcile(statics, stopSignal.signal)
      .catch((err: unknown) => log.warn('mirror pod pass failed', { err: describeError(err) }))
      .finally(() => {
        mirrorPass = undefined;
      });
  }

  function handleTick(): void {
    for (const uid of workQueue.takeDue(now())) {
      const pod = desired.get(uid);
      if (pod && !rejected.has(uid)) workers.update({ type: 'sync', pod });
    }
  }

  function handleHousekeeping(): void {
    if (!podConfig.seenAllSources(expectedSources)) return;
    for (const uid of workers.uids()) {
      if (desired.has(uid)) continue;
      const phase = workers.phase(uid);
      if (phase === 'syncing') workers.update({ type: 'kill', uid, pod: undefined });
      else if (phase === 'terminated') workers.forget(uid);
    }
    for (const p of pleg.runtimePods() ?? []) {
      if (desired.has(p.uid) || workers.phase(p.uid) !== undefined) continue;
      const live = p.sandboxes.length > 0 || p.containers.length > 0;
      if (!live) continue;
      log.info('cleaning up pod no source claims', { pod: `${p.namespace}/${p.name}`, podUID: p.uid });
      workers.update({ type: 'kill', uid: p.uid, pod: undefined, name: p.name, namespace: p.namespace });
    }
    backoff.gc(now());
    void saveBackoff();
    reconcileMirrors();
    cleanupOrphanedPodDirs();
    cleanupPodCgroups();
    if (now() - lastQOSUpdate >= PERIODIC_QOS_CGROUP_UPDATE_INTERVAL_MS) void updateQOS();
  }

  let cgroupCleanup: Promise<void> | undefined;
  /**
   * Upstream cleanupOrphanedPodCgroups: removes the cgroups of pods that cannot be running any
   * more: no worker syncing or terminating them, not a desired pod about to start, and nothing
   * live in the runtime (known only once the PLEG has relisted).
   */
  function cleanupPodCgroups(): void {
    const runtimePods = pleg.runtimePods();
    if (!cm || cgroupCleanup || runtimePods === undefined) return;
    const live = new Set(
      runtimePods
        .filter(
          (p) =>
            p.sandboxes.some((s) => s.state === 'ready') || p.containers.some((c) => c.state === 'running'),
        )
        .map((p) => p.uid),
    );
    const isActive = (uid: string): boolean => {
      const phase = workers.phase(uid);
      if (phase === 'syncing' || phase === 'terminating') return true;
      // A finished pod still in its source keeps its cgroup (its sandbox and shim may live there)
      // until it is deleted; upstream likewise waits while the pod's volumes exist.
      if (desired.has(uid) && !rejected.has(uid)) return true;
      return live.has(uid);
    };
    cgroupCleanup = cm
      .cleanupOrphanedPodCgroups(isActive, stopSignal.signal)
      .then((removed) => {
        if (removed.length > 0) void updateQOS();
      })
      .catch((err: unknown) => {
        if (!stopSignal.signal.aborted) log.warn('pod cgroup cleanup failed', { err: describeError(err) });
      })
      .finally(() => {
        cgroupCleanup = undefined;
      });
  }

  let dirCleanup: Promise<void> | undefined;
  /**
   * Upstream cleanupOrphanedPodDirs: pod directories (and their volume mounts) of pods that no
   * source claims, no worker runs and the runtime no longer has, e.g. pods removed while the
   * kubelet was down.
   */
  function cleanupOrphanedPodDirs(): void {
    if (dirCleanup) return;
    const runtimeUids = new Set((pleg.runtimePods() ?? []).map((p) => p.uid));
    if (pleg.runtimePods() === undefined) return;
    dirCleanup = (async () => {
      const uids = await readdir(join(opts.rootDir, 'pods')).catch(() => [] as string[]);
      for (const uid of uids) {
        if (desired.has(uid) || workers.phase(uid) !== undefined || runtimeUids.has(uid)) continue;
        try {
          await volumes.cleanUpPod(uid, stopSignal.signal);
          log.info('removed orphaned pod directory', { podUID: uid });
        } catch (err) {
          log.warn('failed to remove orphaned pod directory; will retry', {
            podUID: uid,
            err: describeError(err),
          });
        }
      }
    })().finally(() => {
      dirCleanup = undefined;
    });
  }

  let lastSavedBackoff = '';
  async function saveBackoff(): Promise<void> {
    const data = JSON.stringify(Object.fromEntries(backoff.entries()));
    if (data === lastSavedBackoff) return;
    lastSavedBackoff = data;
    try {
      await mkdir(join(opts.rootDir, 'tskubelet'), { recursive: true });
      await writeFile(`${backoffFile}.tmp`, data);
      await rename(`${backoffFile}.tmp`, backoffFile);
    } catch (err) {
      log.warn('failed to save container back-off state', { file: backoffFile, err: describeError(err) });
    }
  }

  async function loadBackoff(): Promise<void> {
    let text: string;
    try {
      text = await readFile(backoffFile, 'utf8');
    } catch {
      return; // first start: nothing saved
    }
    try {
      const data = JSON.parse(text) as Record<string, { delayMs: number; lastUpdateMs: number }>;
      for (const [k, v] of Object.entries(data)) backoff.restore(k, v.delayMs, v.lastUpdateMs);
      lastSavedBackoff = text;
    } catch (err) {
      log.warn('ignoring unreadable back-off state', { file: backoffFile, err: describeError(err) });
    }
  }

  async function loop(): Promise<void> {
    for await (const ev of queue) {
      lastLoopActivity = now();
      try {
        switch (ev.kind) {
          case 'config':
            handleConfig(ev.update);
            break;
          case 'pleg':
            handlePleg(ev.event);
            break;
          case 'tick':
            handleTick();
            break;
          case 'housekeeping':
            handleHousekeeping();
            break;
          case 'mirrors':
            handleMirrors(ev.pods);
            break;
          case 'probe': {
            const pod = desired.get(ev.uid);
            if (!pod || rejected.has(ev.uid)) break;
            // A terminating pod's worker is busy stopping it: readiness results reach its status here.
            const cached = workers.phase(ev.uid) === 'terminating' ? pleg.cache.get(ev.uid) : undefined;
            if (cached) statusManager.set(ev.uid, computeStatus(pod, cached));
            else workers.update({ type: 'sync', pod });
            break;
          }
        }
      } catch (err) {
        log.error('sync loop handler failed', { event: ev.kind, err: describeError(err) });
      }
    }
  }

  let loopDone: Promise<void> | undefined;

  const kubelet: Kubelet = {
    runtime,
    podConfig,
    pleg,
    statusManager,
    workers,
    computeStatus,
    async run() {
      log.info('starting tskubelet', { nodeName: opts.nodeName, nodeIP: opts.nodeIP });
      await mkdir(join(opts.rootDir, 'pods'), { recursive: true });
      await mkdir(opts.podLogsDir, { recursive: true });
      await loadBackoff();
      if (cm) {
        await cm.start(stopSignal.signal);
        cgroupsStarted = true;
        void updateQOS();
      }
      loopDone = loop();
      pleg.start((event) => {
        if (!queue.push({ kind: 'pleg', event })) {
          droppedEvents++;
          log.error('sync loop queue full; dropped a PLEG event (the next relist catches up)', {
            dropped: droppedEvents,
          });
        }
      });
      podConfig.start();
      statusSyncer?.start();
      timers.push(setInterval(() => queue.push({ kind: 'tick' }), SYNC_LOOP_TICK_MS));
      timers.push(setInterval(() => queue.push({ kind: 'housekeeping' }), HOUSEKEEPING_PERIOD_MS));
      void checkRuntime();
      timers.push(setInterval(() => void checkRuntime(), RUNTIME_STATUS_PERIOD_MS));
      await loopDone;
    },
    stop() {
      stopping ??= (async () => {
        for (const t of timers) clearInterval(t);
        stopSignal.abort();
        await podConfig.stop();
        await statusSyncer?.stop();
        await mirrorPass;
        await dirCleanup;
        await cgroupCleanup;
        await qosChain;
        await pleg.stop();
        await probes.stop();
        await workers.stop();
        await saveBackoff();
        queue.close();
        await loopDone;
        log.info('tskubelet stopped');
      })();
      return stopping;
    },
    pods() {
      return [...desired.values()].map((pod) => ({ pod, status: statusManager.get(pod.metadata.uid ?? '') }));
    },
    healthz() {
      const p = pleg.healthy();
      if (!p.ok) return p;
      const idle = now() - lastLoopActivity;
      if (loopDone && idle > 3 * 60_000)
        return { ok: false, message: `sync loop stalled for ${Math.round(idle / 1000)}s` };
      return { ok: true, message: 'ok' };
    },
    sourcesReady: () => podConfig.seenAllSources(expectedSources),
    runtimeReady() {
      const p = pleg.healthy();
      const problems: string[] = [];
      if (!runtimeState.ok) problems.push(runtimeState.message);
      else if (now() - runtimeState.at > 3 * RUNTIME_STATUS_PERIOD_MS) {
        problems.push(
          `container runtime status check is stale (${Math.round((now() - runtimeState.at) / 1000)}s old)`,
        );
      }
      if (!p.ok) problems.push(p.message);
      return problems.length === 0 ? { ok: true, message: '' } : { ok: false, message: problems.join('; ') };
    },
    runtimeVersion: () => runtimeVersionString,
    setMirrorPods(pods) {
      queue.push({ kind: 'mirrors', pods });
    },
  };
  return kubelet;
}

/**
 * Upstream getPullSecretsForPod: the pod's imagePullSecrets read from the API; a missing one is
 * logged and left out (the pull may still work anonymously).
 */
function pullSecretsFor(objects: VolumeObjectSource, log: Logger) {
  return async (pod: Pod, signal?: AbortSignal) => {
    const out: Secret[] = [];
    for (const ref of pod.spec.imagePullSecrets ?? []) {
      const secret = await objects.getSecret(pod.metadata.namespace ?? 'default', ref.name, signal);
      if (secret) out.push(secret);
      else
        log.warn('image pull secret not found', {
          pod: podFullName(pod),
          podUID: pod.metadata.uid,
          secret: ref.name,
        });
    }
    return out;
  };
}

/** The newest container of each name, as the prober tracks them. */
function currentContainers(rs: RuntimePodStatus): ProbeContainer[] {
  const seen = new Set<string>();
  const out: ProbeContainer[] = [];
  for (const c of rs.containers) {
    if (seen.has(c.name)) continue;
    seen.add(c.name);
    out.push({ name: c.name, containerId: c.id, state: c.state, startedAt: c.startedAt });
  }
  return out;
}

/** Waits until `check` is true, polling; for run-once and tests. */
export async function waitFor(
  check: () => boolean,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await sleep(50, signal);
  }
  return true;
}
