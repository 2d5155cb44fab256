import type { KubeletPod, Pod } from '../api/types.ts';
import { createEvictionManager, type EvictionDeps, type EvictionManager } from '../eviction/index.ts';
import {
  createShutdownManager,
  createSystemdLogind,
  type ShutdownManager,
  type ShutdownManagerOptions,
} from '../shutdown/index.ts';
import { podFullName } from '../api/types.ts';
import type { Logger } from '../util/logger.ts';
import type { Backoff } from '../util/backoff.ts';
import {
  createImageManager,
  createNodeCredentials,
  createRuntimeManager,
  type RuntimeManager,
  createRuntimePacer,
  unpacedRuntime,
  makeEnvironment,
  readHostDNS,
  seccompProfileRoot,
} from '../runtime/index.ts';
import { createPleg, type Pleg } from '../pleg/index.ts';
import {
  createStatusManager,
  type StatusManager,
  createStatusSyncer,
  type StatusSyncer,
} from '../status/index.ts';
import {
  createTokenManager,
  createVolumeManager,
  type Secret,
  type VolumeManager,
  type VolumeObjectSource,
} from '../volume/index.ts';
import { createProbeManager, type ProbeManager } from '../prober/index.ts';
import {
  createCsi,
  createCsiInlinePlugin,
  createCsiPvPlugin,
  createCsiVolumeStats,
  type Csi,
} from '../volume/csi/index.ts';
import {
  createContainerGC,
  createImageFsUsage,
  createImageGC,
  type ContainerGC,
  type ContainerGCDeps,
  type ImageGC,
} from '../gc/index.ts';
import { DEFAULT_POD_SANDBOX_IMAGE, DEFAULT_IMAGE_FS_PATH } from '../config/defaults.ts';
import { generalPredicatesAdmitHandler, type NodeView, type PodAdmitHandler } from './admission.ts';
import { sysctlAdmitHandler } from './sysctl-admission.ts';
import { appArmorAdmitHandler } from './apparmor-admission.ts';
import { statusTargetFor } from './mirror-pods.ts';
import type { KubeletConfig } from '../config/index.ts';
import type { KubeletDependencies } from './types.ts';
import { monotonicNow } from '../util/clock.ts';
import { isCgroup2UnifiedMode, machineHugePageSizes } from '../cm/index.ts';

/** The managers the kubelet core drives; each can be replaced through KubeletDependencies.managers. */
export interface KubeletManagers {
  volumes: VolumeManager;
  runtime: RuntimeManager;
  pleg: Pleg;
  probes: ProbeManager;
  statuses: StatusManager;
  /** CSI: driver registration through `<root-dir>/plugins_registry` and the CSI volume mounter. */
  csi: Csi;
}

/** What the managers need from the kubelet that builds them. */
export interface ManagerHooks {
  backoff: Backoff;
  /** A probe result changed for a pod (the sync loop is told). */
  onProbeChange(uid: string): void;
  /** The pod cgroup to hand CRI as cgroup_parent ('' = the runtime's default); absent: none. */
  podCgroupParent?: (pod: KubeletPod) => string;
}

/**
 * Builds the default managers (upstream NewMainKubelet's manager construction), each one only if
 * the dependencies do not already supply it. Starts nothing.
 */
export function buildManagers(
  config: KubeletConfig,
  deps: KubeletDependencies,
  hooks: ManagerHooks,
): KubeletManagers {
  const log = deps.logger;
  const now = deps.now ?? Date.now;
  const monotonic = deps.monotonic ?? monotonicNow;
  const given = deps.managers ?? {};
  const objects = deps.cluster?.volumeObjects;
  const statuses = given.statuses ?? createStatusManager(deps.timeline ? { timeline: deps.timeline } : {});
  const csi =
    given.csi ??
    createCsi({
      rootDir: config.rootDir,
      nodeName: config.nodeName,
      ...(deps.cluster ? { api: deps.cluster.api } : {}),
      logger: log,
      nodeEvent: deps.nodeEvent,
      callTimeoutMs: config.csiCallTimeoutMs,
    });
  // Published CSI volumes' usage (NodeGetVolumeStats, cached per volumeStatsAggPeriod): PVs and inline.
  const csiStats = createCsiVolumeStats({
    mounter: csi.mounter,
    periodMs: config.volumeStatsAggPeriodMs,
    logger: log,
  });
  const volumes =
    given.volumes ??
    createVolumeManager({
      rootDir: config.rootDir,
      logger: log,
      recorder: deps.recorder,
      ...(deps.metrics ? { metrics: deps.metrics.volumes } : {}),
      ...(deps.timeline ? { timeline: deps.timeline } : {}),
      ...(objects ? { objects } : {}),
      node: () => {
        const n = deps.node();
        return { name: n.name, labels: n.labels };
      },
      ...(deps.cluster
        ? { tokens: createTokenManager({ api: deps.cluster.api, logger: log, monotonic }) }
        : {}),
      // A PV with spec.csi, or a csi: volume in the pod: stage and publish through the driver.
      pvPlugins: { csi: createCsiPvPlugin(csi, csiStats) },
      inlineCsi: createCsiInlinePlugin(csi, config.rootDir, csiStats),
    });
  const runtime = given.runtime ?? defaultRuntime(config, deps, hooks, volumes);
  const pleg =
    given.pleg ??
    createPleg({
      runtime,
      logger: log,
      monotonic,
      ...(deps.metrics ? { metrics: deps.metrics.pleg } : {}),
      ...(config.eventedPleg && deps.runtimeEvents ? { events: deps.runtimeEvents } : {}),
    });
  const probes =
    given.probes ??
    createProbeManager({
      exec: (containerId, cmd, timeoutSeconds, signal) =>
        deps.runtimeService.execSync(containerId, cmd, timeoutSeconds, { signal }),
      podIP: (uid) => statuses.get(uid)?.podIP,
      recorder: deps.recorder,
      ...(deps.timeline ? { timeline: deps.timeline } : {}),
      logger: log,
      onChange: (uid) => hooks.onProbeChange(uid),
      now,
      monotonic,
      ...(deps.metrics ? { metrics: deps.metrics.prober } : {}),
    });
  return { volumes, runtime, pleg, probes, statuses, csi };
}

function defaultRuntime(
  config: KubeletConfig,
  deps: KubeletDependencies,
  hooks: ManagerHooks,
  volumes: VolumeManager,
): RuntimeManager {
  const log = deps.logger;
  const now = deps.now ?? Date.now;
  const objects = deps.cluster?.volumeObjects;
  // The node's own docker config (config.json / .dockercfg), root dir first (upstream sets its
  // preferred docker config path to the root directory).
  const nodeCredentials = createNodeCredentials({
    rootDir: config.rootDir,
    logger: log,
    monotonic: deps.monotonic ?? monotonicNow,
  });
  const images = createImageManager({
    images: deps.imageService,
    recorder: deps.recorder,
    ...(deps.timeline ? { timeline: deps.timeline } : {}),
    logger: log,
    monotonic: deps.monotonic ?? monotonicNow,
    nodeCredentials: () => nodeCredentials.keyring(),
    // Absent in the config means no limit (serializeImagePulls false, no maxParallelImagePulls).
    maxParallelPulls: config.maxParallelImagePulls ?? Infinity,
    registryPullQPS: config.registryPullQPS,
    registryBurst: config.registryBurst,
    ...(objects ? { pullSecrets: pullSecretsFor(objects, log) } : {}),
  });
  return createRuntimeManager({
    runtime: deps.runtimeService,
    pacer: !config.runtimePacing
      ? unpacedRuntime
      : createRuntimePacer({ monotonic: deps.monotonic ?? monotonicNow }),
    images,
    recorder: deps.recorder,
    ...(deps.timeline ? { timeline: deps.timeline } : {}),
    logger: log,
    backoff: hooks.backoff,
    podLogsDir: config.podLogsDir,
    rootDir: config.rootDir,
    seccomp: {
      profileRoot: seccompProfileRoot(config.rootDir),
      defaultToRuntimeDefault: config.seccompDefault,
    },
    groupOomKill: !config.singleProcessOOMKill && isCgroup2UnifiedMode(),
    hugePageSizes: machineHugePageSizes(log),
    hostDNS: () => readHostDNS(config.resolvConf),
    clusterDNS: { servers: config.clusterDNS, domain: config.clusterDomain },
    ...(hooks.podCgroupParent ? { podCgroupParent: hooks.podCgroupParent } : {}),
    ...(deps.cluster?.runtimeClasses ? { runtimeClasses: deps.cluster.runtimeClasses } : {}),
    mountsFor: (pod, container) => volumes.mountsFor(pod, container),
    devicesFor: (pod, container) => volumes.devicesFor(pod, container),
    extraSupplementalGroups: (pod) => volumes.extraSupplementalGroups(pod),
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
        podIPs: pod.spec.hostNetwork && deps.nodeIP ? [deps.nodeIP] : podIPs,
        ...(deps.nodeIP ? { hostIP: deps.nodeIP } : {}),
        nodeName: config.nodeName,
        ...(objects ? { objects } : {}),
        nodeAllocatable: { cpu: `${node.allocatable.milliCPU}m`, memory: String(node.allocatable.memory) },
        ...(deps.cluster?.services ? { services: deps.cluster.services } : {}),
        onWarning: (w) => deps.recorder.event(pod, 'Warning', w.reason, w.message),
        logger: log,
        ...(signal ? { signal } : {}),
      });
    },
    now,
    monotonic: deps.monotonic ?? monotonicNow,
  });
}

/**
 * Upstream getPullSecretsForPod: the pod's imagePullSecrets read from the API; a missing one is
 * logged and left out (the pull may still work anonymously).
 */
function pullSecretsFor(objects: VolumeObjectSource, log: Logger) {
  return async (pod: KubeletPod, signal?: AbortSignal) => {
    const out: Secret[] = [];
    for (const ref of pod.spec.imagePullSecrets ?? []) {
      const secret = await objects.getSecret(pod.metadata.namespace, ref.name, signal);
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

/** The admit handlers in upstream's order around the general predicates (eviction's first). */
export function defaultAdmitHandlers(
  config: KubeletConfig,
  node: () => NodeView,
  eviction?: EvictionManager,
  shutdown?: ShutdownManager,
): PodAdmitHandler[] {
  return [
    ...(eviction ? [{ name: 'eviction', admit: (pod: Pod) => eviction.admit(pod) }] : []),
    sysctlAdmitHandler({ allowedUnsafeSysctls: config.allowedUnsafeSysctls }),
    generalPredicatesAdmitHandler(node),
    ...(shutdown ? [shutdown.admitHandler] : []),
    appArmorAdmitHandler(),
  ];
}

/**
 * Cluster mode's status syncer: each desired pod's status goes to the pod itself, a static pod's to
 * its mirror pod (none yet: nowhere). Undefined standalone.
 */
export function buildStatusSyncer(
  deps: KubeletDependencies,
  statuses: StatusManager,
  desired: ReadonlyMap<string, KubeletPod>,
): StatusSyncer | undefined {
  const cluster = deps.cluster;
  if (!cluster) return undefined;
  return createStatusSyncer({
    api: cluster.api,
    statuses,
    logger: deps.logger,
    podFor: (uid) => desired.get(uid),
    targetFor: (uid) => {
      const pod = desired.get(uid);
      return pod ? statusTargetFor(pod, cluster.mirrorPods) : undefined;
    },
  });
}

/** The eviction manager when the config has thresholds and the dependencies supply stats. */
export function buildEviction(
  config: KubeletConfig,
  deps: KubeletDependencies,
  hooks: Pick<EvictionDeps, 'activePods' | 'killPod' | 'podCleanedUp'> & {
    containerGC: ContainerGC;
    imageGC: ImageGC;
  },
): EvictionManager | undefined {
  // No thresholds: nothing to observe or enforce (tests' configs; an operator's `evictionHard: {}`).
  if (!deps.stats || config.evictionThresholds.length === 0) return undefined;
  const log = deps.logger;
  const stats = deps.stats;
  const eviction = {
    thresholds: config.evictionThresholds,
    pressureTransitionPeriodMs: config.evictionPressureTransitionPeriodMs,
    maxPodGracePeriodSeconds: config.evictionMaxPodGracePeriodSeconds,
  };
  const metrics = deps.metrics;
  return createEvictionManager(eviction, {
    summary: (signal) => stats.summary(signal),
    hasDedicatedImageFs: (signal) => stats.hasDedicatedImageFs(signal),
    activePods: hooks.activePods,
    killPod: hooks.killPod,
    podCleanedUp: hooks.podCleanedUp,
    deleteAllUnusedContainers: async () => {
      const r = await hooks.containerGC.deleteAllUnused();
      if (r.errors.length > 0) throw new Error(r.errors.slice(0, 3).join('; '));
    },
    deleteUnusedImages: async () => {
      const r = await hooks.imageGC.deleteUnusedImages();
      if (r.errors.length > 0) throw new Error(r.errors.slice(0, 3).join('; '));
    },
    recorder: deps.recorder,
    nodeEvent: deps.nodeEvent,
    ...(metrics && {
      recordEviction: (signal: string) => metrics.recordEviction(signal),
      recordEvictionStatsAge: (signal: string, seconds: number) =>
        metrics.recordEvictionStatsAge(signal, seconds),
    }),
    logger: log,
    ...(deps.now ? { now: deps.now } : {}),
  });
}

/** The graceful node shutdown manager when shutdownGracePeriod is set (upstream nodeshutdown). */
export function buildShutdown(
  config: KubeletConfig,
  deps: KubeletDependencies,
  hooks: Pick<ShutdownManagerOptions, 'activePods' | 'killPod'>,
): ShutdownManager | undefined {
  if (!config.shutdownGracePeriodMs) return undefined;
  return createShutdownManager({
    shutdownGracePeriodMs: config.shutdownGracePeriodMs,
    shutdownGracePeriodCriticalPodsMs: config.shutdownGracePeriodCriticalPodsMs,
    logind: deps.logind ?? createSystemdLogind({ logger: deps.logger }),
    activePods: hooks.activePods,
    killPod: hooks.killPod,
    ...(deps.onShuttingDownChange ? { onShuttingDownChange: deps.onShuttingDownChange } : {}),
    logger: deps.logger,
  });
}

/** The container and image GCs, with the configured policies (upstream's defaults when none is given). */
export function buildGCs(
  config: KubeletConfig,
  deps: KubeletDependencies,
  hooks: Pick<ContainerGCDeps, 'sourcesReady' | 'isPodDeleted' | 'isPodTerminated' | 'signal'>,
): { containerGC: ContainerGC; imageGC: ImageGC } {
  return {
    containerGC: buildContainerGC(config, deps, hooks),
    imageGC: buildImageGC(config, deps, hooks.signal),
  };
}

function buildContainerGC(
  config: KubeletConfig,
  deps: KubeletDependencies,
  hooks: Pick<ContainerGCDeps, 'sourcesReady' | 'isPodDeleted' | 'isPodTerminated' | 'signal'>,
): ContainerGC {
  return createContainerGC({
    runtime: deps.runtimeService,
    policy: {
      minAgeMs: config.minimumGCAgeMs,
      maxPerPodContainer: config.maxPerPodContainerCount,
      maxContainers: config.maxContainerCount,
    },
    podLogsDir: config.podLogsDir,
    ...hooks,
    logger: deps.logger,
    now: deps.now ?? Date.now,
  });
}

function buildImageGC(config: KubeletConfig, deps: KubeletDependencies, signal: AbortSignal): ImageGC {
  const log = deps.logger;
  return createImageGC({
    images: deps.imageService,
    runtime: deps.runtimeService,
    policy: {
      highThresholdPercent: config.imageGCHighThresholdPercent,
      lowThresholdPercent: config.imageGCLowThresholdPercent,
      minAgeMs: config.imageMinimumGCAgeMs,
    },
    sandboxImage: DEFAULT_POD_SANDBOX_IMAGE,
    imageFsUsage:
      deps.imageFsUsage ??
      createImageFsUsage({
        images: deps.imageService,
        fallbackPath: DEFAULT_IMAGE_FS_PATH,
        logger: log,
        callTimeoutMs: 60_000,
      }),
    nodeEvent: deps.nodeEvent,
    signal,
    logger: log,
    monotonic: deps.monotonic ?? monotonicNow,
  });
}
