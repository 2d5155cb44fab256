/** Histogram buckets as upstream defines them (component-base/metrics, client-go, kubelet metrics). */

/** prometheus.DefBuckets, which most kubelet histograms use. */
export const DEF_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** `count` buckets from `start`, each `factor` times the previous (prometheus.ExponentialBuckets). */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  const out: number[] = [];
  let v = start;
  for (let i = 0; i < count; i++) {
    out.push(v);
    v *= factor;
  }
  return out;
}

/** kubelet_runtime_operations_duration_seconds: ExponentialBuckets(.005, 2.5, 14). */
export const RUNTIME_OPERATION_BUCKETS: readonly number[] = exponentialBuckets(0.005, 2.5, 14);

/** rest_client_request_duration_seconds: ExponentialBuckets(0.001, 2, 10). */
export const REST_CLIENT_BUCKETS: readonly number[] = exponentialBuckets(0.001, 2, 10);
