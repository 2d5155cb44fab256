/**
 * The one assembly of the kubelet (upstream NewMainKubelet, plus the wiring cmd/kubelet/app's
 * RunKubelet does around it): from the compiled config and the dependencies, every part —
 * the CRI client, pod sources, the cluster connection (API clients, node agent, mirror pods,
 * Secrets/ConfigMaps, Services), stats, pod cgroups, metrics, the timeline, the node console, the
 * healthz server and the kubelet API. The CLI, the tests, the benchmarks and the reliability suite
 * all assemble through `newKubelet`; a dependency they supply replaces the one built from the
 * config (tests: a fake CRI, a source they drive, a memory recorder).
 *
 * Nothing starts here: `run()` starts the listeners, the cluster agents and the kubelet core, and
 * resolves once `stop()` has finished; `runOnce()` runs the sources' pods once (--runonce).
 */
import { createLoggingRecorder } from '../api/events.ts';
import { type KubeletConfig, parseConsoleAddress } from '../config/index.ts';
import { DEFAULT_IMAGE_FS_PATH } from '../config/defaults.ts';
import { createContainerManager } from '../cm/index.ts';
import { createEventRing, tapNodeEvent, tapRecorder, type EventRing } from '../console/index.ts';
import {
  type KubeletMetrics,
  createKubeletMetrics,
  instrumentImageService,
  instrumentRuntimeService,
  metricsText,
} from '../metrics/index.ts';
import {
  createFileSource,
  createHttpSource,
  describeSourceProblem,
  type PodSource,
  type SourceProblem,
} from '../podsource/index.ts';
import { createContainerdEvents } from '../runtime/containerd-events/index.ts';
import {
  createCriClient,
  runtimeCgroupDriver,
  type ImageService,
  type RuntimeService,
} from '../runtime/cri/index.ts';
import { createLocalServer, type LocalServer } from '../server/index.ts';
import {
  containerLogStats,
  createStatsProvider,
  pvcVolumeStats,
  type StatsProvider,
} from '../stats/index.ts';
import { createTimelineRecorder, registerStepDurationHistogram } from '../timeline/index.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { detectNodeIP } from '../util/net.ts';
import { readOnlineCPUs } from '../node/index.ts';
import { connectCluster, nodeEventRecorder, registeringObjects } from './cluster-connection.ts';
import { kubeletVersionInfo } from './version-info.ts';
import { setupDataDirs } from './data-dirs.ts';
import { createKubelet } from './kubelet.ts';
import { buildNodeConsole } from './node-console.ts';
import {
  checkNodeAllocatable,
  kubepodsAllocatable,
  nodeAllocatablePlan,
  reservedCgroupOptions,
} from './node-allocatable.ts';
import { machineHugePages, machineNodeView, machineResources, nodeViewFromNode } from './node-view.ts';
import type { RunOnceResult } from './run-once.ts';
import { serveKubeletApi, type ServedApi } from './serve-api.ts';
import type { Kubelet, KubeletDependencies } from './types.ts';

/**
 * What `newKubelet` takes besides the config: the logger and the version always; any
 * KubeletDependencies field replaces the part it would build from the config.
 */
export type Dependencies = Partial<KubeletDependencies> & {
  logger: Logger;
  /** tskubelet's version (the Node's kubeletVersion, the console, logs). */
  version: string;
};

/** The assembled kubelet: the core's view (pods, health, why, …) plus the process's lifecycle. */
export interface AssembledKubelet extends Kubelet {
  /** The node's resolved primary IP. */
  readonly nodeIP: string | undefined;
  /** The listeners' state once `run()` started them (ports, the local socket). */
  served(): ServedApi | undefined;
  /** Ports of the healthz server once listening (0 when off or not bound). */
  healthzPort(): number;
}

/** The configured pod sources (file, HTTP); the API source joins them in cluster mode. */
function configuredSources(
  config: KubeletConfig,
  logger: Logger,
  onProblem: (p: SourceProblem) => void,
): PodSource[] {
  const sources: PodSource[] = [];
  if (config.staticPodPath) {
    sources.push(
      createFileSource({
        path: config.staticPodPath,
        nodeName: config.nodeName,
        checkFrequencyMs: config.fileCheckFrequencyMs,
        logger: logger.child({ source: 'file' }),
        onProblem,
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
        onProblem,
      }),
    );
  }
  return sources;
}

/** The runtime's services: the given ones, or an instrumented CRI client to the configured endpoint. */
function runtimeOf(
  config: KubeletConfig,
  deps: Dependencies,
  metrics: KubeletMetrics,
): { runtimeService: RuntimeService; imageService: ImageService; close(): void } {
  if (deps.runtimeService && deps.imageService) {
    return { runtimeService: deps.runtimeService, imageService: deps.imageService, close: () => undefined };
  }
  const cri = createCriClient({
    endpoint: config.containerRuntimeEndpoint,
    timeoutMs: config.runtimeRequestTimeoutMs,
    logger: deps.logger,
  });
  // Every CRI call the kubelet makes is counted and timed (kubelet_runtime_operations_*).
  return {
    runtimeService: instrumentRuntimeService(cri.runtime, metrics.runtime),
    imageService: instrumentImageService(cri.image, metrics.runtime),
    close: () => cri.close(),
  };
}

/** Says which runtime answers; one that does not yet is retried by the kubelet (healthz reports it). */
async function logRuntimeVersion(
  runtime: RuntimeService,
  config: KubeletConfig,
  logger: Logger,
): Promise<void> {
  try {
    const v = await runtime.version({ timeoutMs: 10_000 });
    logger.info('container runtime', {
      endpoint: config.containerRuntimeEndpoint,
      runtime: v.runtimeName,
      version: v.runtimeVersion,
      criVersion: v.runtimeApiVersion,
    });
  } catch (err) {
    logger.error('container runtime is not answering; will keep retrying', {
      endpoint: config.containerRuntimeEndpoint,
      err: describeError(err),
    });
  }
}

/** How long the start-up check of the runtime's cgroup driver waits for the runtime. */
const RUNTIME_DRIVER_CHECK_TIMEOUT_MS = 10_000;

/**
 * Assembles the kubelet from the compiled config. Cluster mode (config.kubeconfig, not with
 * --runonce) reads the kubeconfig here; nothing is started and nothing is listened on.
 */
export async function newKubelet(config: KubeletConfig, deps: Dependencies): Promise<AssembledKubelet> {
  const { logger, version, ...given } = deps;
  const nodeIP = deps.nodeIP ?? (config.nodeIP?.split(',')[0]?.trim() || detectNodeIP());
  // The reservations every allocatable is computed with; a bad one stops the assembly, as upstream's start.
  const allocatablePlan = nodeAllocatablePlan(config, await readOnlineCPUs(logger));
  checkNodeAllocatable(allocatablePlan, machineResources());
  const metrics =
    deps.metrics ??
    createKubeletMetrics({
      nodeName: config.nodeName,
      buildInfo: kubeletVersionInfo(version),
      debuggingHandlers: config.server.enableDebuggingHandlers,
    });

  // The runtime: the given services, or a CRI client on the configured endpoint (closed on stop).
  const runtime = runtimeOf(config, deps, metrics);
  const { runtimeService, imageService } = runtime;
  // containerd serves its event service on the CRI socket (--evented-pleg).
  const ownEvents =
    config.eventedPleg && !deps.runtimeEvents
      ? createContainerdEvents({ endpoint: config.containerRuntimeEndpoint, logger })
      : undefined;
  const runtimeEvents = deps.runtimeEvents ?? ownEvents;

  // The recent events the node console shows (every recorder below is tapped).
  const events: EventRing = createEventRing();
  const cluster =
    config.kubeconfig && !config.runOnce && !deps.cluster
      ? await connectCluster(config, logger, version, imageService, metrics, events, allocatablePlan)
      : undefined;
  // A manifest the kubelet cannot use is a Warning event on the Node, besides the log line (once
  // per file and problem; upstream only logs it, and the pod never exists to carry an event).
  const sourceProblem = (p: SourceProblem): void => nodeEvent('Warning', p.reason, describeSourceProblem(p));
  const sources = [...(deps.sources ?? configuredSources(config, logger, sourceProblem))];
  if (cluster) sources.push(cluster.source);
  // Cluster mode: every source's pods register the Secrets and ConfigMaps they reference.
  const podSources = cluster ? sources.map((s) => registeringObjects(s, cluster.volumeObjects)) : sources;
  if (sources.length === 0)
    logger.warn('no pod source configured (--pod-manifest-path, --manifest-url or --kubeconfig)');

  const recorder = deps.recorder ?? cluster?.recorder ?? tapRecorder(createLoggingRecorder(logger), events);
  const nodeEvent =
    deps.nodeEvent ??
    (cluster
      ? nodeEventRecorder(cluster.recorder, config.nodeName)
      : tapNodeEvent(
          (type, reason, message) => logger.warn(message, { node: config.nodeName, event: reason, type }),
          events,
          config.nodeName,
        ));
  const machine = machineNodeView(config.nodeName, config.maxPods, allocatablePlan);
  const node =
    deps.node ??
    (() => {
      const n = cluster?.nodeAgent.node();
      return n ? nodeViewFromNode(n) : machine;
    });

  // Read by the eviction manager, the console and the kubelet API; `core` is only used once it exists.
  const containerManager =
    deps.containerManager ??
    createContainerManager({
      cgroupsPerQOS: config.cgroupsPerQOS,
      cgroupRoot: config.cgroupRoot,
      cgroupDriver: config.cgroupDriver,
      runtimeCgroupDriver: (signal) =>
        runtimeCgroupDriver(runtimeService, { signal, timeoutMs: RUNTIME_DRIVER_CHECK_TIMEOUT_MS }),
      podPidsLimit: config.podPidsLimit,
      cpuCFSQuota: config.cpuCFSQuota,
      cpuCFSQuotaPeriodMs: config.cpuCFSQuotaPeriodMs,
      enforceNodeAllocatable: config.enforceNodeAllocatable,
      nodeCapacity: machineResources,
      nodeHugePages: () => machineHugePages(logger),
      nodeAllocatable: (capacity) => kubepodsAllocatable(allocatablePlan, capacity),
      ...reservedCgroupOptions(config, allocatablePlan),
      logger,
      nodeEvent,
      cgroupOperation: (operation, seconds) => metrics.cgroupOperation(operation, seconds),
    });
  const stats: StatsProvider = createStatsProvider({
    runtime: runtimeService,
    imageService,
    rootDir: config.rootDir,
    podLogsDir: config.podLogsDir,
    nodeName: config.nodeName,
    pods: () => core.pods().map((p) => p.pod),
    logger: logger.child({ component: 'stats' }),
    volumeStatsPeriodMs: config.volumeStatsAggPeriodMs,
    measuredVolumes: (uid) => core.measuredVolumes(uid),
    ...(containerManager.qosCgroups ? { podCgroups: containerManager.qosCgroups } : {}),
  });
  metrics.setContainerLogStatsProvider(async () => {
    try {
      return containerLogStats(await stats.summaryMs());
    } catch (err) {
      logger.debug('no container log stats for kubelet_container_log_filesystem_used_bytes', {
        err: describeError(err),
      });
      return undefined;
    }
  });
  metrics.setVolumeStatsProvider(async () => {
    try {
      return pvcVolumeStats(await stats.summaryMs());
    } catch (err) {
      logger.debug('no volume stats for kubelet_volume_stats_*', { err: describeError(err) });
      return undefined;
    }
  });

  const core = createKubelet(config, {
    ...given,
    nodeIP,
    runtimeService,
    imageService,
    ...(runtimeEvents ? { runtimeEvents } : {}),
    metrics,
    timeline:
      deps.timeline ?? createTimelineRecorder({ observe: registerStepDurationHistogram(metrics.registry) }),
    stats: deps.stats ?? {
      summary: () => stats.summaryMs(),
      hasDedicatedImageFs: () => stats.hasDedicatedImageFs(DEFAULT_IMAGE_FS_PATH),
    },
    sources: podSources,
    recorder,
    nodeEvent,
    logger,
    containerManager,
    node,
    ...(cluster
      ? {
          cluster: {
            api: cluster.api,
            mirrorPods: cluster.mirrorPods,
            volumeObjects: cluster.volumeObjects,
            services: cluster.services,
            runtimeClasses: cluster.runtimeClasses,
          },
        }
      : {}),
  });
  cluster?.bind(core);

  const nodeConsole = buildNodeConsole({
    nodeName: config.nodeName,
    version,
    kubelet: core,
    ...(cluster ? { apiNode: () => cluster.nodeAgent.node() } : {}),
    machine: machine.allocatable,
    stats,
    events,
    logger,
  });

  const dataDirs = { rootDir: config.rootDir, podLogsDir: config.podLogsDir };
  let healthz: LocalServer | undefined;
  let healthzPort = 0;
  let api: ServedApi | undefined;
  let stopping: Promise<void> | undefined;

  /** Closes what the assembly opened (listeners, cluster agents, the CRI client). */
  async function release(): Promise<void> {
    await api?.close();
    await cluster?.close();
    await healthz?.close();
    runtime.close();
    ownEvents?.close();
  }

  async function startHealthz(): Promise<void> {
    if (config.healthzPort <= 0) return;
    const server = createLocalServer(
      { host: config.healthzBindAddress, port: config.healthzPort },
      { healthz: () => core.healthz() },
      logger,
    );
    try {
      healthzPort = await server.listen();
      healthz = server;
    } catch (err) {
      logger.error('cannot serve healthz; continuing without it', {
        address: `${config.healthzBindAddress}:${config.healthzPort}`,
        err: describeError(err),
      });
    }
  }

  async function startApi(): Promise<void> {
    const consoleAddress = config.consoleAddress ? parseConsoleAddress(config.consoleAddress) : undefined;
    // The kubelet API and container log rotation; a bad TLS or client CA file stops the start here.
    api = await serveKubeletApi({
      console: nodeConsole,
      ...(consoleAddress?.ok ? { consoleAddress: consoleAddress.address } : {}),
      config,
      kubelet: core,
      runtime: runtimeService,
      imageService,
      events: () => events.list(),
      nodeIP,
      ...(cluster ? { api: cluster.api } : {}),
      ...(cluster?.certificates.serving ? { servingCertificate: cluster.certificates.serving } : {}),
      requestMetrics: metrics.http,
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
    });
  }

  return {
    ...core,
    nodeIP,
    served: () => api,
    healthzPort: () => healthzPort,
    async run() {
      logger.info('tskubelet version', { version, nodeName: config.nodeName });
      try {
        // Before the serving certificate, the local socket or a pod writes under the root dir.
        await setupDataDirs(dataDirs, logger);
        await logRuntimeVersion(runtimeService, config, logger);
        await startHealthz();
        await startApi();
        cluster?.services.start();
        cluster?.runtimeClasses.start();
        cluster?.nodeAgent.start();
        cluster?.startCertificates();
        // Rejects when the kubelet cannot start (e.g. the pod cgroup hierarchy cannot be set up).
        await core.run();
      } finally {
        await release();
      }
    },
    async runOnce(opts): Promise<RunOnceResult[]> {
      try {
        await setupDataDirs(dataDirs, logger);
        return await core.runOnce(opts);
      } finally {
        await release();
      }
    },
    stop() {
      stopping ??= core.stop();
      return stopping;
    },
  };
}
