import type { KubeletConfig } from '../config/index.ts';
import { createLogger, type Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import { detectNodeIP } from '../util/net.ts';
import { createCriClient } from '../runtime/cri/index.ts';
import { createContainerdEvents } from '../runtime/containerd-events/index.ts';
import { createLoggingRecorder } from '../api/events.ts';
import { createFileSource, createHttpSource, type PodSource } from '../podsource/index.ts';
import { createKubelet } from '../kubelet/kubelet.ts';
import { createContainerManager } from '../cm/index.ts';
import { machineNodeView, nodeViewFromNode } from '../kubelet/node-view.ts';

import { DEFAULT_IMAGE_FS_PATH } from '../config/defaults.ts';
import { createLocalServer, type LocalServer } from '../server/index.ts';
import {
  createKubeletMetrics,
  instrumentImageService,
  instrumentRuntimeService,
  metricsText,
} from '../metrics/index.ts';
import { createStatsProvider } from '../stats/index.ts';
import { serveKubeletApi } from './serve-api.ts';
import { connectCluster, nodeEventRecorder, registeringObjects } from './connect-cluster.ts';
import { createEventRing, tapNodeEvent, tapRecorder } from '../console/index.ts';
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
      { healthz: () => kubelet.healthz() },
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
