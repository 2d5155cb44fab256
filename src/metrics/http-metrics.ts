/**
 * The kubelet API's request metrics (upstream pkg/kubelet/server/metrics/metrics.go, fed by
 * Server.ServeHTTP in pkg/kubelet/server/server.go, 1.20): kubelet_http_requests_total,
 * kubelet_http_requests_duration_seconds and kubelet_http_inflight_requests, each by method, path
 * bucket, server type and long_running. The path is bucketed as upstream does it so the label set
 * stays bounded whatever clients ask for.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { DEF_BUCKETS } from './buckets.ts';

/** upstream metricsMethodBuckets: any other verb is `other`. */
const METHODS: ReadonlySet<string> = new Set([
  'OPTIONS',
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'TRACE',
  'CONNECT',
]);

/**
 * upstream addMetricsBucketMatcher calls: the default handlers, then the debugging handlers
 * (enabled) or their disabled stand-ins (which leave out configz and debug).
 */
const DEFAULT_PATHS = [
  'healthz',
  'pods',
  'stats',
  'metrics',
  'metrics/cadvisor',
  'metrics/probes',
  'metrics/resource',
  'spec',
];
const DEBUGGING_PATHS = [
  'run',
  'exec',
  'attach',
  'portForward',
  'containerLogs',
  'runningpods',
  'pprof',
  'logs',
];

/**
 * upstream longRunningRequestPathMap. Its `portforward` never matches the `portForward` bucket, so
 * port forwarding counts as not long-running in 1.20: kept as upstream has it.
 */
const LONG_RUNNING: ReadonlySet<string> = new Set(['exec', 'attach', 'portforward', 'debug']);

/** upstream getURLRootPath: `metrics/<x>` for metrics paths, else the first segment. */
export function urlRootPath(path: string): string {
  const parts = path.replace(/^\//, '').split('/');
  if (parts[0] === 'metrics' && parts.length > 1) return `${parts[0]}/${parts[1] ?? ''}`;
  return parts[0] ?? path;
}

export type HttpServerType = 'readonly' | 'readwrite';

/** What the kubelet API server reports (src/server takes this shape; never throws). */
export interface HttpRequestMetrics {
  /** A request arrived; call the result when it is done (response finished or stream closed). */
  requestStarted(method: string | undefined, path: string, serverType: HttpServerType): () => void;
}

type Labels = 'method' | 'path' | 'server_type' | 'long_running';

export function createHttpRequestMetrics(
  registry: Registry,
  opts: { debuggingHandlers: boolean },
  now: () => number = () => performance.now(),
): HttpRequestMetrics {
  const buckets = new Set([
    ...DEFAULT_PATHS,
    ...DEBUGGING_PATHS,
    ...(opts.debuggingHandlers ? ['configz', 'debug'] : []),
  ]);
  const labelNames: Labels[] = ['method', 'path', 'server_type', 'long_running'];
  const registers = [registry];
  const total = new Counter<Labels>({
    name: 'kubelet_http_requests_total',
    help: '[ALPHA] Number of the http requests received since the server started',
    labelNames,
    registers,
  });
  const duration = new Histogram<Labels>({
    name: 'kubelet_http_requests_duration_seconds',
    help: '[ALPHA] Duration in seconds to serve http requests',
    labelNames,
    buckets: [...DEF_BUCKETS],
    registers,
  });
  const inflight = new Gauge<Labels>({
    name: 'kubelet_http_inflight_requests',
    help: '[ALPHA] Number of the inflight http requests',
    labelNames,
    registers,
  });
  return {
    requestStarted(method, path, serverType) {
      const root = urlRootPath(path);
      const bucket = buckets.has(root) ? root : 'other';
      const labels = {
        method: method !== undefined && METHODS.has(method) ? method : 'other',
        path: bucket,
        server_type: serverType,
        long_running: String(LONG_RUNNING.has(bucket)),
      };
      total.inc(labels);
      inflight.inc(labels);
      const start = now();
      let done = false;
      return () => {
        if (done) return;
        done = true;
        inflight.dec(labels);
        duration.observe(labels, (now() - start) / 1000);
      };
    },
  };
}
