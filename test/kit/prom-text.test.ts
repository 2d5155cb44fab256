import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffFamilies, parseFamilies } from './prom-text.ts';

const UPSTREAM = `# HELP kubelet_pod_start_duration_seconds [ALPHA] Duration in seconds for a single pod to go from pending to running.
# TYPE kubelet_pod_start_duration_seconds histogram
kubelet_pod_start_duration_seconds_bucket{le="0.5"} 1
kubelet_pod_start_duration_seconds_bucket{le="+Inf"} 2
kubelet_pod_start_duration_seconds_sum 3.2
kubelet_pod_start_duration_seconds_count 2
# HELP rest_client_requests_total [ALPHA] Number of HTTP requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="a:1",method="GET"} 4
# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 40
# HELP kubelet_evictions [ALPHA] Cumulative number of pod evictions
# TYPE kubelet_evictions counter
`;

describe('prometheus text families', () => {
  it('reads families with their label names (le left out), buckets and sample counts', () => {
    const f = parseFamilies(
      UPSTREAM + 'kubelet_x{path="/a,\\"b\\"}",le_not="1"} 1 1700000000000\nuntyped_one 2\n',
    );
    const h = f.get('kubelet_pod_start_duration_seconds');
    assert.deepEqual(
      { type: h?.type, labels: h?.labelNames, buckets: h?.buckets, samples: h?.samples },
      { type: 'histogram', labels: [], buckets: ['0.5', '+Inf'], samples: 4 },
    );
    assert.deepEqual(f.get('rest_client_requests_total')?.labelNames, ['code', 'host', 'method']);
    assert.deepEqual(f.get('kubelet_x')?.labelNames, ['le_not', 'path']);
    assert.equal(f.get('untyped_one')?.type, 'untyped');
    assert.equal(f.get('kubelet_evictions')?.samples, 0);
    assert.equal(f.has('kubelet_pod_start_duration_seconds_bucket'), false);
  });

  it('diffs missing, extra, label and bucket differences, skipping families without samples', () => {
    const ours = `# HELP kubelet_pod_start_duration_seconds [ALPHA] Duration in seconds for a single pod to go from pending to running.
# TYPE kubelet_pod_start_duration_seconds histogram
kubelet_pod_start_duration_seconds_bucket{le="1"} 1
kubelet_pod_start_duration_seconds_bucket{le="+Inf"} 2
# TYPE rest_client_requests_total counter
# HELP rest_client_requests_total [ALPHA] Number of HTTP requests.
rest_client_requests_total{code="200",method="GET"} 4
nodejs_heap_bytes 1
`;
    const d = diffFamilies(parseFamilies(UPSTREAM), parseFamilies(ours));
    assert.deepEqual(
      d.map((x) => `${x.kind} ${x.name}`),
      [
        'buckets kubelet_pod_start_duration_seconds',
        'labels rest_client_requests_total',
        'missing go_goroutines',
        'extra nodejs_heap_bytes',
      ],
    );
  });
});
