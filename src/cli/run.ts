import type { KubeletConfig } from '../config/index.ts';
import { createLogger, type Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import { detectNodeIP } from '../util/net.ts';
import { monotonicNow } from '../util/clock.ts';
import { createCriClient } from '../runtime/cri/index.ts';
import { createContainerdEvents } from '../runtime/containerd-events/index.ts';
import type { ImageService } from '../runtime/cri/types.ts';
import { createLoggingRecorder, type EventType } from '../api/events.ts';
import { createApiSource, createFileSource, createHttpSource, type PodSource } from '../podsource/index.ts';
import { createKubelet, type Kubelet } from '../kubelet/kubelet.ts';
import { createContainerManager } from '../cm/index.ts';
import { machineNodeView, nodeViewFromNode } from '../kubelet/node-view.ts';
import { createApiClient } from '../api/client.ts';
import { createApiEventRecorder, type ApiEventRecorder } from '../api/event-recorder.ts';
import { createApiObjectSource, objectTTLSeconds, type PodObjectManager } from '../api/object-source.ts';
import { registerSnapshots } from '../api/pod-registration.ts';
import { createServiceInformer } from '../api/service-informer.ts';

import { createMirrorPods } from '../kubelet/mirror-pods.ts';
import { createNodeAgent } from '../node/index.ts';
import { DEFAULT_IMAGE_FS_PATH, KUBERNETES_API_VERSION } from '../config/defaults.ts';
import { createLocalServer, type LocalServer } from '../server/index.ts';
import {
  createKubeletMetrics,
  instrumentImageService,
  instrumentRuntimeService,
  metricsText,
  type KubeletMetrics,
  type RestClientRequest,
} from '../metrics/index.ts';
import { createStatsProvider } from '../stats/index.ts';
import { serveKubeletApi } from './serve-api.ts';
import {
  createEventRing,
  tapApiRecorder,
  tapNodeEvent,
  tapRecorder,
  type EventRing,
} from '../console/index.ts';
import { parseConsoleAddress } from '../config/index.ts';
import { buildNodeConsole } from './console.ts';
import { createTimelineRecorder, registerStepDurationHistogram } from '../timeline/index.ts';

function buildSources(config: KubeletConfig, logger: Logger): PodSource[] {
  const sources: PodSource[] = [];
  if (config.staticPodPath) {
    sources.push(
      createFileSource({
        path: config.staticPodPath,
        nodeName: config.nodeName,
        checkFrequencyMs: config.fileCheckFrequencyMs,
        logger: logger.child({ source: 'file' }),
      }),
    );
  }
  if (config.staticPodURL) {
    const headers: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(config.staticPodURLHeader)) headers[k] = [...v];
    sources.push(
      createHttpSource({
        url: config.staticPodURL,
        headers,
        nodeName: config.nodeName,
        checkFrequencyMs: config.httpCheckFrequencyMs,
        logger: logger.child({ source: 'http' }),
      }),
    );
  }
  return sources;
}

/**
 * Runs the kubelet with a compiled config until SIGTERM/SIGINT (or, with --runonce, until every
 * pod ran). Returns the process exit code.
 */
export async function runKubelet(
  config: KubeletConfig,
  warnings: readonly string[],
  version: string,
): Promise<number> {
  const logger = createLogger({ verbosity: config.verbosity, format: config.logFormat });
  for (const w of warnings) logger.warn(w);
  const nodeIP = config.nodeIP?.split(',')[0]?.trim() || detectNodeIP();
  const cri = createCriClient({
    endpoint: config.containerRuntimeEndpoint,
    timeoutMs: config.runtimeRequestTimeoutMs,
    logger,
  });
  const metrics = createKubeletMetrics({ nodeName: config.nodeName });
  // Every CRI call the kubelet makes is counted and timed (kubelet_runtime_operations_*).
  const runtimeService = instrumentRuntimeService(cri.runtime, metrics.runtime);
  const imageService = instrumentImageService(cri.image, metrics.runtime);
  try {
    const v = await cri.runtime.version({ timeoutMs: 10_000 });
    logger.info('container runtime', {
      endpoint: config.containerRuntimeEndpoint,
      runtime: v.runtimeName,
      version: v.runtimeVersion,
      criVersion: v.runtimeApiVersion,
    });
  } catch (err) {
    // Keep running: pods sync as soon as the runtime answers; healthz reports it meanwhile.
    logger.error('container runtime is not answering; will keep retrying', {
      endpoint: config.containerRuntimeEndpoint,
      err: describeError(err),
    });
  }
  const sources = buildSources(config, logger);
  // The recent events the node console shows (every recorder below is tapped).
  const events = createEventRing();
  const cluster =
    config.kubeconfig && !config.runOnce
      ? await connectCluster(config, logger, version, imageService, metrics, events)
      : undefined;
  if (cluster) sources.push(cluster.source);
  // Cluster mode: every source's pods register the Secrets and ConfigMaps they reference.
  const podSources = cluster ? sources.map((s) => registeringObjects(s, cluster.volumeObjects)) : sources;
  if (sources.length === 0)
    logger.warn('no pod source configured (--pod-manifest-path, --manifest-url or --kubeconfig)');
  // Read by the eviction manager and the kubelet API; `kubelet` is only used once it exists.
  const stats = createStatsProvider({
    runtime: runtimeService,
    imageService,
    rootDir: config.rootDir,
    podLogsDir: config.podLogsDir,
    nodeName: config.nodeName,
    pods: () => kubelet.pods().map((p) => p.pod),
    logger: logger.child({ component: 'stats' }),
    volumeStatsPeriodMs: config.volumeStatsAggPeriodMs,
    ...(config.cgroupsPerQOS ? { podsCgroup: `${config.cgroupRoot.replace(/\/$/, '')}/kubepods` } : {}),
  });
  const machine = machineNodeView(config.nodeName, config.maxPods);
  // containerd serves its event service on the CRI socket (--evented-pleg).
  const runtimeEvents = config.eventedPleg
    ? createContainerdEvents({ endpoint: config.containerRuntimeEndpoint, logger })
    : undefined;
  const kubelet = createKubelet(
    {
      nodeName: config.nodeName,
      nodeIP,
      rootDir: config.rootDir,
      podLogsDir: config.podLogsDir,
      maxPods: config.maxPods,
      syncFrequencyMs: config.syncFrequencyMs,
      clusterDNS: config.clusterDNS,
      clusterDomain: config.clusterDomain,
      seccompDefault: config.seccompDefault,
      runtimePacing: config.runtimePacing,
      eventedPleg: config.eventedPleg,
      allowedUnsafeSysctls: config.allowedUnsafeSysctls,
      // Absent in the config means no limit (serializeImagePulls false, no maxParallelImagePulls).
      maxParallelImagePulls: config.maxParallelImagePulls ?? Infinity,
      registryPullQPS: config.registryPullQPS,
      registryBurst: config.registryBurst,
      containerGC: {
        minAgeMs: config.minimumGCAgeMs,
        maxPerPodContainer: config.maxPerPodContainerCount,
        maxContainers: config.maxContainerCount,
      },
      imageGC: {
        highThresholdPercent: config.imageGCHighThresholdPercent,
        lowThresholdPercent: config.imageGCLowThresholdPercent,
        minAgeMs: config.imageMinimumGCAgeMs,
      },
      eviction: {
        thresholds: config.evictionThresholds,
        pressureTransitionPeriodMs: config.evictionPressureTransitionPeriodMs,
        maxPodGracePeriodSeconds: config.evictionMaxPodGracePeriodSeconds,
      },
      shutdownGracePeriodMs: config.shutdownGracePeriodMs,
      shutdownGracePeriodCriticalPodsMs: config.shutdownGracePeriodCriticalPodsMs,
    },
    {
      runtimeService,
      imageService,
      ...(runtimeEvents ? { runtimeEvents } : {}),
      metrics,
      timeline: createTimelineRecorder({ observe: registerStepDurationHistogram(metrics.registry) }),
      stats: {
        summary: () => stats.summaryMs(),
        hasDedicatedImageFs: () => stats.hasDedicatedImageFs(DEFAULT_IMAGE_FS_PATH),
      },
      sources: podSources,
      recorder: cluster?.recorder ?? tapRecorder(createLoggingRecorder(logger), events),
      nodeEvent: cluster
        ? nodeEventRecorder(cluster.recorder, config.nodeName)
        : tapNodeEvent(
            (type, reason, message) => logger.warn(message, { node: config.nodeName, event: reason, type }),
            events,
            config.nodeName,
          ),
      logger,
      containerManager: createContainerManager({
        cgroupsPerQOS: config.cgroupsPerQOS,
        cgroupRoot: config.cgroupRoot,
        cgroupDriver: config.cgroupDriver,
        podPidsLimit: config.podPidsLimit,
        cpuCFSQuota: config.cpuCFSQuota,
        cpuCFSQuotaPeriodMs: config.cpuCFSQuotaPeriodMs,
        enforceNodeAllocatable: config.enforceNodeAllocatable,
        // No system/kube reservations are implemented: allocatable for kubepods is the capacity.
        nodeCapacity: () => ({ milliCPU: machine.allocatable.milliCPU, memory: machine.allocatable.memory }),
        logger,
      }),
      node: () => {
        const n = cluster?.nodeAgent.node();
        return n ? nodeViewFromNode(n) : machine;
      },
      ...(cluster
        ? {
            cluster: {
              api: cluster.api,
              mirrorPods: cluster.mirrorPods,
              volumeObjects: cluster.volumeObjects,
              services: cluster.services,
            },
          }
        : {}),
    },
  );
  cluster?.bind(kubelet);
  logger.info('tskubelet version', { version, nodeName: config.nodeName });

  if (config.runOnce) {
    const ac = new AbortController();
    const onSignal = () => ac.abort(new Error('interrupted'));
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      const results = await kubelet.runOnce({
        sourceTimeoutMs: config.runOnceTimeoutMs,
        signal: ac.signal,
      });
      for (const r of results) {
        process.stdout.write(`${r.ok ? 'ok    ' : 'FAILED'} ${r.pod} (${r.podUID}): ${r.detail}\n`);
      }
      const failed = results.filter((r) => !r.ok).length;
      process.stdout.write(`run-once: ${results.length - failed} started, ${failed} failed\n`);
      return failed === 0 ? 0 : 1;
    } catch (err) {
      logger.error('run-once failed', { err: describeError(err) });
      return 1;
    } finally {
      cri.close();
    }
  }

  let server: LocalServer | undefined;
  if (config.healthzPort > 0) {
    server = createLocalServer(
      { host: config.healthzBindAddress, port: config.healthzPort },
      { healthz: () => kubelet.healthz(), pods: () => kubelet.pods() },
      logger,
    );
    try {
      await server.listen();
    } catch (err) {
      logger.error('cannot serve healthz; continuing without it', {
        address: `${config.healthzBindAddress}:${config.healthzPort}`,
        err: describeError(err),
      });
      server = undefined;
    }
  }
  const nodeConsole = buildNodeConsole({
    nodeName: config.nodeName,
    version,
    kubelet,
    ...(cluster ? { apiNode: () => cluster.nodeAgent.node() } : {}),
    machine: machine.allocatable,
    stats,
    events,
    logger,
  });
  const consoleAddress = config.consoleAddress ? parseConsoleAddress(config.consoleAddress) : undefined;
  // The kubelet API and container log rotation; a bad TLS or client CA file stops the start here.
  const api = await serveKubeletApi({
    console: nodeConsole,
    ...(consoleAddress?.ok ? { consoleAddress: consoleAddress.address } : {}),
    config,
    kubelet,
    runtime: runtimeService,
    nodeIP,
    ...(cluster ? { api: cluster.api } : {}),
    providers: {
      metrics: (which) => {
        switch (which) {
          case 'main':
            return metricsText(metrics.registry);
          case 'probes':
            return metricsText(metrics.probeRegistry);
          case 'resource':
            return stats.resourceMetricsText();
          case 'cadvisor':
            return stats.cadvisorMetricsText();
        }
      },
      statsSummary: (onlyCpuAndMemory) => stats.summary({ onlyCpuAndMemory }),
    },
    logger,
  }).catch(async (err: unknown) => {
    // Nothing else may keep the process alive (e.g. a live local socket refused the start).
    await server?.close();
    cri.close();
    throw err;
  });
  const shutdown = (signal: string) => {
    logger.info('shutting down', { signal });
    void kubelet.stop();
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  cluster?.services.start();
  cluster?.nodeAgent.start();
  try {
    // Rejects when the kubelet cannot start (e.g. the pod cgroup hierarchy cannot be set up).
    await kubelet.run();
  } finally {
    await api.close();
    await cluster?.close();
    await server?.close();
    cri.close();
    runtimeEvents?.close();
  }
  return 0;
}

/**
 * The source as the kubelet sees it, except that each snapshot first registers its pods' Secrets
 * and ConfigMaps with the managers (upstream's pod manager does so on every pod update).
 */
function registeringObjects(source: PodSource, objects: PodObjectManager): PodSource {
  return {
    name: source.name,
    start(send) {
      const register = registerSnapshots(objects);
      source.start((pods) => {
        register(pods);
        send(pods);
      });
    },
    stop: () => source.stop(),
  };
}

/** The kubelet version reported in the Node object: the Kubernetes API level we implement + ours. */
function reportedKubeletVersion(version: string): string {
  return `${KUBERNETES_API_VERSION}-tskubelet.${version.replace(/^v/, '')}`;
}

/**
 * Cluster mode (--kubeconfig): two API clients (pods/status/events, and heartbeats on their own so
 * they never queue behind pod traffic), the API pod source, events to the API, mirror pods, volume
 * objects, and the node agent (registration, node status, Lease).
 */
/** Events on this kubelet's Node (upstream nodeRef: the node name doubles as UID). */
function nodeEventRecorder(recorder: ApiEventRecorder, nodeName: string) {
  const ref = { apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeName };
  return (type: EventType, reason: string, message: string) => recorder.eventFor(ref, type, reason, message);
}

async function connectCluster(
  config: KubeletConfig,
  logger: Logger,
  version: string,
  imageService: ImageService,
  metrics: KubeletMetrics,
  events: EventRing,
) {
  const kubeconfig = config.kubeconfig ?? '';
  const client = {
    kubeconfig,
    qps: config.kubeAPIQPS,
    burst: config.kubeAPIBurst,
    onRequestDone: (r: RestClientRequest) => metrics.restClient.requestDone(r),
  };
  const api = await createApiClient(client);
  const leaseApi = await createApiClient(client);
  logger.info('cluster mode', { server: api.server, nodeName: config.nodeName });
  const recorder = tapApiRecorder(
    createApiEventRecorder({
      api,
      nodeName: config.nodeName,
      logger,
      qps: config.eventRecordQPS,
      burst: config.eventBurst,
    }),
    events,
  );
  let kubelet: Kubelet | undefined;
  let connectionClosures = 0;
  let lastClosureLogMs = -Infinity;
  const nodeAgent = createNodeAgent({
    api,
    leaseApi,
    logger,
    recorder,
    nodeName: config.nodeName,
    ...(config.nodeIP ? { nodeIP: config.nodeIP.split(',')[0]?.trim() } : {}),
    maxPods: config.maxPods,
    rootDir: config.rootDir,
    kubeletVersion: reportedKubeletVersion(version),
    kubeletPort: config.port,
    labels: { ...config.nodeLabels },
    taints: config.registerWithTaints.map((t) => ({ ...t })),
    nodeStatusUpdateFrequencyMs: config.nodeStatusUpdateFrequencyMs,
    nodeStatusReportFrequencyMs: config.nodeStatusReportFrequencyMs,
    nodeLeaseDurationSeconds: config.nodeLeaseDurationSeconds,
    nodeStatusMaxImages: config.nodeStatusMaxImages,
    // Allocatable subtracts the hard memory and nodefs thresholds (upstream GetNodeAllocatableReservation).
    evictionHard: {
      ...(config.evictionHard['memory.available'] !== undefined
        ? { memoryAvailable: config.evictionHard['memory.available'] }
        : {}),
      ...(config.evictionHard['nodefs.available'] !== undefined
        ? { nodefsAvailable: config.evictionHard['nodefs.available'] }
        : {}),
    },
    listImages: (signal) => imageService.listImages(undefined, { signal }),
    // Upstream closeAllConns: connections a partition froze (watches included) are not waited on.
    onRepeatedHeartbeatFailure: () => {
      // Called on every failed retry of both heartbeats: said once a minute, the rest at debug.
      connectionClosures++;
      const now = monotonicNow();
      if (now - lastClosureLogMs >= 60_000) {
        lastClosureLogMs = now;
        logger.info('heartbeats failing repeatedly; closing every API connection', { connectionClosures });
      } else {
        logger.debug('heartbeats still failing; closing every API connection again', { connectionClosures });
      }
      api.closeConnections();
      leaseApi.closeConnections();
    },
    inputs: {
      runtimeReady: () => kubelet?.runtimeReady() ?? { ok: false, message: 'kubelet is starting' },
      runtimeVersion: () => kubelet?.runtimeVersion() ?? '',
      pressure: () => kubelet?.pressure() ?? { memory: false, disk: false, pid: false },
      nodeShutdownError: () => kubelet?.nodeShutdownError(),
    },
  });
  const mirrorPods = createMirrorPods({
    api,
    logger,
    nodeName: config.nodeName,
    nodeUID: () => nodeAgent.node()?.metadata.uid,
  });
  const source = createApiSource({
    api,
    nodeName: config.nodeName,
    logger: logger.child({ source: 'api' }),
    onMirrorPods: (pods) => kubelet?.setMirrorPods(pods),
  });
  const volumeObjects = createApiObjectSource({
    api,
    strategy: config.configMapAndSecretChangeDetectionStrategy,
    logger: logger.child({ component: 'secrets-configmaps' }),
    nodeTtlSeconds: () => objectTTLSeconds(nodeAgent.node()?.metadata.annotations),
  });
  logger.info('secret and configMap change detection', {
    strategy: config.configMapAndSecretChangeDetectionStrategy,
  });
  // Service-link env vars; pods from the API wait for its first list (upstream serviceHasSynced).
  const services = createServiceInformer({ api, logger: logger.child({ informer: 'services' }) });
  return {
    api,
    recorder,
    nodeAgent,
    mirrorPods,
    source,
    services,
    volumeObjects,
    bind(k: Kubelet) {
      kubelet = k;
    },
    async close() {
      await services.stop();
      await volumeObjects.stop();
      await nodeAgent.stop();
      await recorder.stop();
      api.close();
      leaseApi.close();
    },
  };
}
