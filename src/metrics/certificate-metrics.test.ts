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
});
