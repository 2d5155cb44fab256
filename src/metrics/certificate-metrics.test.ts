import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { createCertificateMetrics } from './certificate-metrics.ts';

describe('certificate metrics', () => {
  it('exist only once a manager is set, give the TTL in whole seconds, +Inf without a certificate, and count renew errors', async () => {
    const registry = new Registry();
    const now = 1_000_000_000;
    const m = createCertificateMetrics(registry, () => now);
    assert.doesNotMatch(await registry.metrics(), /kubelet_certificate_manager/);
    let notAfter: number | undefined = now + 3600_700;
    m.setClientCertificate(() => notAfter);
    m.clientRenewError();
    let text = await registry.metrics();
    assert.match(text, /^kubelet_certificate_manager_client_ttl_seconds 3600$/m);
    assert.match(text, /^kubelet_certificate_manager_client_expiration_renew_errors 1$/m);
    assert.doesNotMatch(text, /server_ttl_seconds/);
    notAfter = undefined;
    text = await registry.metrics();
    assert.match(text, /^kubelet_certificate_manager_client_ttl_seconds \+Inf$/m);
  });

  it('observes how long a serving certificate lived before its rotation, with upstream buckets (a minute to 4 years)', async () => {
    const registry = new Registry();
    const m = createCertificateMetrics(registry, () => 0);
    m.setServingCertificate(() => undefined);
    assert.match(
      await registry.metrics(),
      /^# TYPE kubelet_certificate_manager_server_rotation_seconds histogram$/m,
    );
    m.servingRotated(2 * 86400);
    const text = await registry.metrics();
    assert.match(text, /^kubelet_certificate_manager_server_rotation_seconds_bucket\{le="86400"\} 0$/m);
    assert.match(text, /^kubelet_certificate_manager_server_rotation_seconds_bucket\{le="604800"\} 1$/m);
    assert.match(text, /^kubelet_certificate_manager_server_rotation_seconds_bucket\{le="124416000"\} 1$/m);
  });
});
