import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Pod } from '../api/types.ts';
import type { PodWorkerMetrics } from '../kubelet/index.ts';
import type { PlegMetrics } from '../pleg/index.ts';
import type { ProbeMetricLabels, ProbeMetrics } from '../prober/index.ts';
import type { PodSyncResult, RuntimePodSummary } from '../runtime/index.ts';
import { DEF_BUCKETS, REST_CLIENT_BUCKETS, RUNTIME_OPERATION_BUCKETS } from './buckets.ts';
import { restClientURLTemplate } from './rest-client.ts';
import { createCertificateMetrics, type CertificateMetrics } from './certificate-metrics.ts';
import { registerBuildInfo } from './build-info.ts';
import { registerProcessStartTime, registerVirtualMemoryMax } from './process-metrics.ts';
import { createHttpRequestMetrics, type HttpRequestMetrics } from './http-metrics.ts';
import { createVolumeMetrics, type VolumeOperationMetrics } from './volume-metrics.ts';
import type { VersionInfo } from '../kubelet/index.ts';

/** Container states as kubelet_running_containers labels them (upstream kubecontainer.State). */
const CONTAINER_STATES = ['created', 'running', 'exited', 'unknown'] as const;

/** Runtime calls, timed by `instrumentRuntimeService` (upstream instrumentedRuntimeService). */
export interface RuntimeOperationMetrics {
  /** One CRI call `operation` (upstream's operation_type name) took `seconds`; `failed` if it threw. */
  operation(operation: string, seconds: number, failed: boolean): void;
  /** RunPodSandbox also counts per runtime handler and as a started pod. */
  runPodSandbox(runtimeHandler: string, seconds: number, failed: boolean): void;
}

/** One finished request of the API client (client-go's request metrics). */
export interface RestClientRequest {
  /** HTTP method, upper case (`GET` for watches too). */
  verb: string;
  /** The full request URL (query included); only its host and templated path become labels. */
  url: URL;
  /** The HTTP status; undefined when the request failed without one (label `<error>`). */
  status: number | undefined;
  durationSeconds: number;
}

export interface RestClientMetrics {
  requestDone(r: RestClientRequest): void;
}

/** The kubelet's own view of what the runtime holds: the PLEG's last relist. */
export type RuntimePodsProvider = () => readonly RuntimePodSummary[] | undefined;

/**
 * The kubelet's Prometheus metrics (upstream pkg/kubelet/metrics), in two registries of their own
 * (never prom-client's global one): `registry` for /metrics, `probeRegistry` for /metrics/probes.
 * Components get narrow hook objects (`pleg`, `podWorkers`, `prober`, `runtime`, `restClient`);
 * gauges about runtime state are computed when scraped, from the provider the kubelet sets.
 * Every method is cheap and never throws.
 */
export interface KubeletMetrics {
  readonly registry: Registry;
  readonly probeRegistry: Registry;
  readonly pleg: PlegMetrics;
  readonly podWorkers: PodWorkerMetrics;
  readonly prober: ProbeMetrics;
  readonly runtime: RuntimeOperationMetrics;
  readonly restClient: RestClientMetrics;
  /** The client and serving certificate managers' TTL gauges and renewal error counters. */
  readonly certificates: CertificateMetrics;
  /** The kubelet API's kubelet_http_requests_total, _duration_seconds and kubelet_http_inflight_requests. */
  readonly http: HttpRequestMetrics;
  /** storage_operation_* and volume_manager_total_volumes, fed by the volume manager. */
  readonly volumes: VolumeOperationMetrics;
  /** kubelet_running_pods / kubelet_running_containers read this at each scrape. */
  setRuntimePodsProvider(provider: RuntimePodsProvider): void;
  /** kubelet_pod_start_duration_seconds: from first seeing a pod to seeing it Running. */
  observePodStartDuration(seconds: number): void;
  /**
   * kubelet_started_containers_total / _errors_total from one RuntimeManager.syncPod result:
   * every container it tried to start, by type (`container`, `init_container`); failures by code
   * (the waiting reason). A crash-loop back-off is not an attempt, as upstream.
   */
  recordContainerStarts(pod: Pod, result: Pick<PodSyncResult, 'started' | 'startFailures'>): void;
  /** kubelet_evictions{eviction_signal}: the eviction manager reports each pod it evicts. */
  recordEviction(signal: string): void;
  /** kubelet_eviction_stats_age_seconds{eviction_signal}: how old the stats an eviction acts on are. */
  recordEvictionStatsAge(signal: string, seconds: number): void;
  /** kubelet_cgroup_manager_duration_seconds{operation_type}: one create, update or destroy of a cgroup. */
  cgroupOperation(operation: string, seconds: number): void;
  /** kubelet_volume_stats_* read this at each scrape (the summary's volumes with a pvcRef). */
  setVolumeStatsProvider(provider: VolumeStatsProvider): void;
  /** kubelet_container_log_filesystem_used_bytes reads this at each scrape. */
  setContainerLogStatsProvider(provider: ContainerLogStatsProvider): void;
}

/** One container's log bytes (upstream logMetricsCollector's input: the pod stats' logs). */
export interface ContainerLogStats {
  uid: string;
  namespace: string;
  pod: string;
  container: string;
  usedBytes: number;
}

/** The containers' log bytes now, or undefined when they cannot be read (the gauge is then empty). */
export type ContainerLogStatsProvider = () => Promise<readonly ContainerLogStats[] | undefined>;

/** One persistentVolumeClaim's volume numbers (upstream volumeStatsCollector's input). */
export interface PvcVolumeStats {
  namespace: string;
  persistentvolumeclaim: string;
  capacityBytes?: number;
  availableBytes?: number;
  usedBytes?: number;
  inodes?: number;
  inodesFree?: number;
  inodesUsed?: number;
}

/** The PVC volume stats now, or undefined when they cannot be read (the gauges are then left empty). */
export type VolumeStatsProvider = () => Promise<readonly PvcVolumeStats[] | undefined>;

/** Upstream collectors/volume_stats.go: name suffix, help, and the field it reports. */
const VOLUME_STATS: readonly [string, string, keyof PvcVolumeStats][] = [
  ['capacity_bytes', 'Capacity in bytes of the volume', 'capacityBytes'],
  ['available_bytes', 'Number of available bytes in the volume', 'availableBytes'],
  ['used_bytes', 'Number of used bytes in the volume', 'usedBytes'],
  ['inodes', 'Maximum number of inodes in the volume', 'inodes'],
  ['inodes_free', 'Number of free inodes in the volume', 'inodesFree'],
  ['inodes_used', 'Number of used inodes in the volume', 'inodesUsed'],
];

export interface KubeletMetricsOptions {
  nodeName: string;
  /** kubernetes_build_info's labels; absent, the family is left out (tests). */
  buildInfo?: VersionInfo;
  /** enableDebuggingHandlers: which paths the HTTP request metrics name (default true, upstream's). */
  debuggingHandlers?: boolean;
  /**
   * Node.js process metrics (prom-client's default collectors: process_*, nodejs_*) in `registry`.
   * Default true; tests turn them off.
   */
  processMetrics?: boolean;
}

/** prober_probe_total's labels for one probe worker's `result`. */
function probeLabels(l: ProbeMetricLabels, result: string) {
  return {
    probe_type: l.probeType,
    result,
    container: l.container,
    pod: l.pod,
    namespace: l.namespace,
    pod_uid: l.podUID,
  };
}

/** Upstream marks these metrics ALPHA and says so in front of the help text. */
function help(text: string): string {
  return `[ALPHA] ${text}`;
}

export function createKubeletMetrics(opts: KubeletMetricsOptions): KubeletMetrics {
  const registry = new Registry();
  const probeRegistry = new Registry();
  const registers = [registry];
  let runtimePods: RuntimePodsProvider = () => undefined;
  let volumeStats: VolumeStatsProvider = () => Promise.resolve(undefined);
  let logStats: ContainerLogStatsProvider = () => Promise.resolve(undefined);
  // The counters and histograms of `registry` (the probe counter has its own registry).
  const counter = <L extends string = string>(name: string, text: string, labelNames: readonly L[] = []) =>
    new Counter<L>({ name, help: help(text), labelNames, registers });
  const histogram = <L extends string = string>(
    name: string,
    text: string,
    buckets: readonly number[],
    labelNames: readonly L[] = [],
  ) => new Histogram<L>({ name, help: help(text), labelNames, buckets: [...buckets], registers });

  new Gauge({
    name: 'kubelet_node_name',
    help: help("The node's name. The count is always 1."),
    labelNames: ['node'],
    registers,
  }).set({ node: opts.nodeName }, 1);

  // Upstream volumeStatsCollector: one series per claim (the first pod's numbers when several pods
  // use it), recomputed at every scrape.
  for (const [suffix, text, field] of VOLUME_STATS) {
    new Gauge({
      name: `kubelet_volume_stats_${suffix}`,
      help: help(text),
      labelNames: ['namespace', 'persistentvolumeclaim'],
      registers,
      async collect(this: Gauge<'namespace' | 'persistentvolumeclaim'>) {
        this.reset();
        const seen = new Set<string>();
        for (const v of (await volumeStats()) ?? []) {
          const key = `${v.namespace}/${v.persistentvolumeclaim}`;
          const value = v[field];
          if (seen.has(key) || typeof value !== 'number') continue;
          seen.add(key);
          this.set({ namespace: v.namespace, persistentvolumeclaim: v.persistentvolumeclaim }, value);
        }
      },
    });
  }

  // Upstream logMetricsCollector: one series per container with log stats, at every scrape.
  new Gauge({
    name: 'kubelet_container_log_filesystem_used_bytes',
    help: help("Bytes used by the container's logs on the filesystem."),
    labelNames: ['uid', 'namespace', 'pod', 'container'],
    registers,
    async collect(this: Gauge<'uid' | 'namespace' | 'pod' | 'container'>) {
      this.reset();
      for (const l of (await logStats()) ?? []) {
        this.set({ uid: l.uid, namespace: l.namespace, pod: l.pod, container: l.container }, l.usedBytes);
      }
    },
  });

  new Gauge({
    name: 'kubelet_running_pods',
    help: help('Number of pods currently running'),
    registers,
    collect(this: Gauge) {
      const pods = runtimePods();
      if (!pods) return;
      this.set(pods.filter((p) => p.sandboxes.some((s) => s.state === 'ready')).length);
    },
  });

  new Gauge({
    name: 'kubelet_running_containers',
    help: help('Number of containers currently running'),
    labelNames: ['container_state'],
    registers,
    collect(this: Gauge<'container_state'>) {
      const pods = runtimePods();
      if (!pods) return;
      const counts = new Map<string, number>(CONTAINER_STATES.map((s) => [s, 0]));
      for (const p of pods) for (const c of p.containers) counts.set(c.state, (counts.get(c.state) ?? 0) + 1);
      for (const [state, n] of counts) this.set({ container_state: state }, n);
    },
  });

  const podStart = histogram(
    'kubelet_pod_start_duration_seconds',
    'Duration in seconds for a single pod to go from pending to running.',
    DEF_BUCKETS,
  );
  const podWorker = histogram(
    'kubelet_pod_worker_duration_seconds',
    'Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync',
    DEF_BUCKETS,
    ['operation_type'],
  );
  const podWorkerStart = histogram(
    'kubelet_pod_worker_start_duration_seconds',
    'Duration in seconds from seeing a pod to starting a worker.',
    DEF_BUCKETS,
  );
  const relistDuration = histogram(
    'kubelet_pleg_relist_duration_seconds',
    'Duration in seconds for relisting pods in PLEG.',
    DEF_BUCKETS,
  );
  const relistInterval = histogram(
    'kubelet_pleg_relist_interval_seconds',
    'Interval in seconds between relisting in PLEG.',
    DEF_BUCKETS,
  );
  const runtimeOps = counter(
    'kubelet_runtime_operations_total',
    'Cumulative number of runtime operations by operation type.',
    ['operation_type'],
  );
  const runtimeOpErrors = counter(
    'kubelet_runtime_operations_errors_total',
    'Cumulative number of runtime operation errors by operation type.',
    ['operation_type'],
  );
  const runtimeOpDuration = histogram(
    'kubelet_runtime_operations_duration_seconds',
    'Duration in seconds of runtime operations. Broken down by operation type.',
    RUNTIME_OPERATION_BUCKETS,
    ['operation_type'],
  );
  const sandboxDuration = histogram(
    'kubelet_run_podsandbox_duration_seconds',
    'Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.',
    DEF_BUCKETS,
    ['runtime_handler'],
  );
  const sandboxErrors = counter(
    'kubelet_run_podsandbox_errors_total',
    'Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.',
    ['runtime_handler'],
  );
  const startedPods = counter('kubelet_started_pods_total', 'Pod sandboxes the kubelet tried to start.');
  const startedPodErrors = counter(
    'kubelet_started_pods_errors_total',
    'Pod sandboxes that failed to start.',
  );
  const startedContainers = counter(
    'kubelet_started_containers_total',
    'Containers the kubelet tried to start, by container type.',
    ['container_type'],
  );
  const startedContainerErrors = counter(
    'kubelet_started_containers_errors_total',
    'Containers that failed to start, by container type and error code.',
    ['container_type', 'code'],
  );
  // Upstream counts the events its relist drops when the kubelet's event channel is full; tskubelet's
  // PLEG hands every event to the kubelet (no channel to overflow), so the counter stays 0.
  counter('kubelet_pleg_discard_events', 'The number of discard events in PLEG.');
  // Upstream sets it when the PLEG's health is checked; here at each scrape, from the last relist
  // whose list succeeded (the same instant upstream reads), in whole Unix seconds as upstream.
  let plegLastSeen: number | undefined;
  new Gauge({
    name: 'kubelet_pleg_last_seen_seconds',
    help: help('Timestamp in seconds when PLEG was last seen active.'),
    registers,
    collect(this: Gauge) {
      if (plegLastSeen !== undefined) this.set(Math.floor(plegLastSeen / 1000));
    },
  });
  const containersPerPod = histogram(
    'kubelet_containers_per_pod_count',
    'The number of containers per pod.',
    DEF_BUCKETS,
  );
  if (opts.buildInfo) registerBuildInfo(registry, opts.buildInfo);
  // Upstream registers it with the DynamicKubeletConfig gate (on by default in 1.20): tskubelet has
  // no dynamic config, and a bad config file stops its start, so a running kubelet reports 0.
  new Gauge({
    name: 'kubelet_node_config_error',
    help: help(
      'This metric is true (1) if the node is experiencing a configuration-related error, false (0) otherwise.',
    ),
    registers,
  }).set(0);
  const http = createHttpRequestMetrics(registry, { debuggingHandlers: opts.debuggingHandlers ?? true });
  const evictions = counter('kubelet_evictions', 'Cumulative number of pod evictions by eviction signal', [
    'eviction_signal',
  ]);
  const cgroupManagerDuration = histogram(
    'kubelet_cgroup_manager_duration_seconds',
    'Duration in seconds for cgroup manager operations. Broken down by method.',
    DEF_BUCKETS,
    ['operation_type'],
  );
  const evictionStatsAge = histogram(
    'kubelet_eviction_stats_age_seconds',
    'Time between when stats are collected, and when pod is evicted based on those stats by eviction signal',
    DEF_BUCKETS,
    ['eviction_signal'],
  );
  const restRequests = counter(
    'rest_client_requests_total',
    'Number of HTTP requests, partitioned by status code, method, and host.',
    ['code', 'method', 'host'],
  );
  const restDuration = histogram(
    'rest_client_request_duration_seconds',
    'Request latency in seconds. Broken down by verb and URL.',
    REST_CLIENT_BUCKETS,
    ['verb', 'url'],
  );
  const probes = new Counter({
    name: 'prober_probe_total',
    help: help('Cumulative number of a liveness, readiness or startup probe for a container by result.'),
    labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid'],
    registers: [probeRegistry],
  });

  // A 100 ms event-loop-delay sampling (prom-client's default is 10 ms: 100 wake-ups a second).
  if (opts.processMetrics ?? true) {
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
    registerVirtualMemoryMax(registry);
  }
  // /metrics/probes carries the process start too, as upstream's probe registry (counter resets).
  registerProcessStartTime(probeRegistry);

  const runtime: RuntimeOperationMetrics = {
    operation(operation, seconds, failed) {
      runtimeOps.inc({ operation_type: operation });
      runtimeOpDuration.observe({ operation_type: operation }, seconds);
      if (failed) runtimeOpErrors.inc({ operation_type: operation });
    },
    runPodSandbox(handler, seconds, failed) {
      sandboxDuration.observe({ runtime_handler: handler }, seconds);
      startedPods.inc();
      if (failed) {
        sandboxErrors.inc({ runtime_handler: handler });
        startedPodErrors.inc();
      }
    },
  };

  return {
    registry,
    probeRegistry,
    runtime,
    certificates: createCertificateMetrics(registry),
    http,
    volumes: createVolumeMetrics(registry),
    pleg: {
      seenActive: () => {
        plegLastSeen = Date.now();
      },
      relisted(duration, interval) {
        relistDuration.observe(duration);
        if (interval !== undefined) relistInterval.observe(interval);
      },
    },
    podWorkers: {
      workerStarted: (seconds) => podWorkerStart.observe(seconds),
      podCreated: (containers) => containersPerPod.observe(containers),
      workDone: (operation, seconds) => podWorker.observe({ operation_type: operation }, seconds),
    },
    prober: {
      probed: (l, result) => probes.inc(probeLabels(l, result)),
      workerStopped(l) {
        for (const result of ['successful', 'failed', 'unknown']) probes.remove(probeLabels(l, result));
      },
    },
    restClient: {
      requestDone(r) {
        restRequests.inc({
          code: r.status === undefined ? '<error>' : String(r.status),
          method: r.verb,
          host: r.url.host,
        });
        restDuration.observe({ verb: r.verb, url: restClientURLTemplate(r.url) }, r.durationSeconds);
      },
    },
    setRuntimePodsProvider(provider) {
      runtimePods = provider;
    },
    setVolumeStatsProvider(provider) {
      volumeStats = provider;
    },
    setContainerLogStatsProvider(provider) {
      logStats = provider;
    },
    observePodStartDuration: (seconds) => podStart.observe(seconds),
    recordContainerStarts(pod, result) {
      const init = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
      const typeOf = (name: string): string => (init.has(name) ? 'init_container' : 'container');
      for (const name of result.started) startedContainers.inc({ container_type: typeOf(name) });
      for (const [name, failure] of result.startFailures) {
        if (failure.reason === 'CrashLoopBackOff') continue;
        startedContainers.inc({ container_type: typeOf(name) });
        startedContainerErrors.inc({ container_type: typeOf(name), code: failure.reason });
      }
    },
    recordEviction: (signal) => evictions.inc({ eviction_signal: signal }),
    recordEvictionStatsAge: (signal, seconds) =>
      evictionStatsAge.observe({ eviction_signal: signal }, seconds),
    cgroupOperation: (operation, seconds) =>
      cgroupManagerDuration.observe({ operation_type: operation }, seconds),
  };
}
