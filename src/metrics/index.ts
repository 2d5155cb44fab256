/**
 * Prometheus metrics of the kubelet (upstream pkg/kubelet/metrics), served by the kubelet API:
 * `/metrics` from `KubeletMetrics.registry` (kubelet_*, rest_client_*, process_* and nodejs_*) and
 * `/metrics/probes` from `KubeletMetrics.probeRegistry` (prober_probe_total). Components report
 * through optional hook objects (PLEG, pod workers, prober, the runtime decorator, the API client);
 * `/metrics/resource` and `/metrics/cadvisor` are computed from stats (src/stats).
 */
export {
  createKubeletMetrics,
  type KubeletMetrics,
  type KubeletMetricsOptions,
  type RestClientMetrics,
  type RestClientRequest,
  type RuntimeOperationMetrics,
  type ContainerLogStats,
  type ContainerLogStatsProvider,
  type PvcVolumeStats,
  type RuntimePodsProvider,
  type VolumeStatsProvider,
} from './kubelet-metrics.ts';
export type { CertificateMetrics } from './certificate-metrics.ts';
export { instrumentImageService, instrumentRuntimeService } from './instrument-runtime.ts';
export { metricsText, type MetricsText } from './metrics-text.ts';
export { restClientURLTemplate } from './rest-client.ts';
