import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { createHttpRequestMetrics, urlRootPath } from './http-metrics.ts';

function samples(text: string, name: string): string[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`))
    .sort();
}

describe('kubelet HTTP request metrics', () => {
  it("buckets paths as upstream's getURLRootPath: metrics/<x>, else the first segment", () => {
    assert.equal(urlRootPath('/metrics/cadvisor'), 'metrics/cadvisor');
    assert.equal(urlRootPath('/metrics'), 'metrics');
    assert.equal(urlRootPath('/containerLogs/ns/p/c'), 'containerLogs');
    assert.equal(urlRootPath('/'), '');
  });

  it('counts and times requests by method, path bucket, server type and long_running, in flight until done', async () => {
    const registry = new Registry();
    let t = 0;
    const m = createHttpRequestMetrics(registry, { debuggingHandlers: true }, () => t);
    const exec = m.requestStarted('POST', '/exec/ns/p/c', 'readwrite');
    const done = m.requestStarted('GET', '/metrics/probes', 'readonly');
    t = 30;
    done();
    done(); // a second call changes nothing
    m.requestStarted('BREW', '/no/such', 'readwrite')();
    m.requestStarted('GET', '/portForward/ns/p', 'readwrite')();
    let text = await registry.metrics();
    assert.deepEqual(samples(text, 'kubelet_http_requests_total'), [
      'kubelet_http_requests_total{method="GET",path="metrics/probes",server_type="readonly",long_running="false"} 1',
      // upstream's long-running map says `portforward`, which the `portForward` bucket never is
      'kubelet_http_requests_total{method="GET",path="portForward",server_type="readwrite",long_running="false"} 1',
      'kubelet_http_requests_total{method="POST",path="exec",server_type="readwrite",long_running="true"} 1',
      'kubelet_http_requests_total{method="other",path="other",server_type="readwrite",long_running="false"} 1',
    ]);
    assert.ok(
      text.includes(
        'kubelet_http_inflight_requests{method="POST",path="exec",server_type="readwrite",long_running="true"} 1',
      ),
    );
    assert.ok(
      text.includes(
        'kubelet_http_requests_duration_seconds_sum{method="GET",path="metrics/probes",server_type="readonly",long_running="false"} 0.03',
      ),
    );
    exec();
    text = await registry.metrics();
    assert.ok(
      text.includes(
        'kubelet_http_inflight_requests{method="POST",path="exec",server_type="readwrite",long_running="true"} 0',
      ),
    );
  });

  it('names configz and debug only with the debugging handlers on, as upstream registers their buckets', async () => {
    const off = new Registry();
    createHttpRequestMetrics(off, { debuggingHandlers: false }).requestStarted(
      'GET',
      '/configz',
      'readwrite',
    )();
    assert.match(await off.metrics(), /kubelet_http_requests_total\{method="GET",path="other"/);
    const on = new Registry();
    createHttpRequestMetrics(on, { debuggingHandlers: true }).requestStarted(
      'GET',
      '/configz',
      'readwrite',
    )();
    assert.match(await on.metrics(), /kubelet_http_requests_total\{method="GET",path="configz"/);
  });
});
