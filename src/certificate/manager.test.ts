// The certificate manager and the kubelet's client and serving managers (manager.ts,
// kubelet-managers.ts). Upstream counterparts: k8s.io/client-go/util/certificate
// certificate_manager_test.go and pkg/kubelet/certificate/kubelet_test.go.
import assert from 'node:assert/strict';
import { mkdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { recordingLogger } from '../util/testing.ts';
import {
  createClientCertificateManager,
  createServingCertificateManager,
  servingTemplate,
} from './kubelet-managers.ts';
import { createCertificateManager, rotationDeadline, templateMismatch } from './manager.ts';
import { createFileStore } from './store.ts';
import { loadClientCert, nodeClientTemplate } from './bootstrap.ts';
import { CLIENT_KUBELET_SIGNER, CLIENT_USAGES, KUBELET_SERVING_SIGNER, SERVING_USAGES } from './request.ts';
import {
  FakeCsrApi,
  approveAndIssue,
  testCAForFile,
  writeBootstrapKubeconfig,
  type StoredCsr,
} from './testing.ts';

const ca = testCAForFile();

describe('rotationDeadline', () => {
  it('falls between 70 % and 90 % of the lifetime, whatever the jitter', () => {
    const notBefore = 1_000_000;
    const notAfter = notBefore + 100_000;
    assert.equal(rotationDeadline(notBefore, notAfter, 0), notBefore + 70_000);
    assert.equal(rotationDeadline(notBefore, notAfter, 0.5), notBefore + 80_000);
    for (let i = 0; i < 1000; i++) {
      const d = rotationDeadline(notBefore, notAfter, Math.random());
      assert.ok(d >= notBefore + 70_000 && d < notBefore + 90_000, String(d));
    }
  });
});

describe('servingTemplate', () => {
  it('takes hostnames as DNS names and IPs as IPs, sorted, and asks nothing without an IP', () => {
    const t = servingTemplate('n1', [
      { type: 'Hostname', address: 'n1' },
      { type: 'InternalIP', address: '10.0.0.9' },
      { type: 'ExternalIP', address: '1.2.3.4' },
      { type: 'InternalDNS', address: 'n1.internal' },
      { type: 'Hostname', address: '10.0.0.9' },
    ]);
    assert.deepEqual(t, {
      commonName: 'system:node:n1',
      organization: ['system:nodes'],
      dnsNames: ['n1', 'n1.internal'],
      ips: ['1.2.3.4', '10.0.0.9'],
    });
    assert.equal(servingTemplate('n1', [{ type: 'Hostname', address: 'n1' }]), undefined);
  });
});

/** A node whose client certificate was bootstrapped (valid 1 day). */
async function bootstrapped(api: FakeCsrApi) {
  const dir = ca.subdir('mgr');
  const bootstrapKubeconfigPath = join(dir, 'bootstrap.conf');
  await mkdir(dir);
  await writeBootstrapKubeconfig(bootstrapKubeconfigPath, ca.caFile);
  api.onCreate = (csr) => approveAndIssue(ca, csr);
  const certDir = join(dir, 'pki');
  await loadClientCert({
    kubeconfigPath: join(dir, 'kubelet.conf'),
    bootstrapKubeconfigPath,
    certDir,
    nodeName: 'node-a',
    logger: recordingLogger(),
    connect: () => Promise.resolve(api),
    pollMs: 5,
  });
  api.onCreate = undefined;
  api.csrs.clear();
  api.clearRecorded();
  return { certDir };
}

/**
 * A fresh fake API, a node bootstrapped on it, and that node's client certificate manager
 * (`overrides` replace its options).
 */
async function clientManager(overrides: Partial<Parameters<typeof createClientCertificateManager>[0]> = {}) {
  const api = new FakeCsrApi();
  const { certDir } = await bootstrapped(api);
  const m = await createClientCertificateManager({
    certDir,
    nodeName: 'node-a',
    api,
    logger: recordingLogger(),
    ...overrides,
  });
  return { api, certDir, m };
}

describe('client certificate manager', () => {
  it('keeps the old certificate in use until the new one is issued, then swaps the symlink and tells listeners', async () => {
    let renewErrors = 0;
    const { api, certDir, m } = await clientManager({ onRenewError: () => renewErrors++ });
    const old = m.current();
    assert.ok(old);
    const oldTarget = await readlink(join(certDir, 'kubelet-client-current.pem'));
    const rotated: string[] = [];
    m.onRotated((p) => rotated.push(p.certPem));

    const rotation = m.rotateNow();
    while (api.csrs.size === 0) await new Promise((r) => setTimeout(r, 5));
    const csr = [...api.csrs.values()][0] as StoredCsr;
    // Pending: the old pair is still the one in use, on disk and in memory.
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(m.current(), old);
    assert.equal(await readlink(join(certDir, 'kubelet-client-current.pem')), oldTarget);
    assert.match(csr.name, /^csr-/);
    await approveAndIssue(ca, csr);

    assert.equal(await rotation, true);
    const now = m.current();
    assert.ok(now && now !== old);
    assert.notEqual(now.keyPem, old.keyPem, 'a new key for every rotation');
    assert.equal(now.leaf.subject, 'O=system:nodes\nCN=system:node:node-a');
    assert.notEqual(await readlink(join(certDir, 'kubelet-client-current.pem')), oldTarget);
    assert.equal(
      await readFile(join(certDir, 'kubelet-client-current.pem'), 'utf8'),
      now.certPem + now.keyPem,
    );
    assert.deepEqual(rotated, [now.certPem]);
    assert.equal(renewErrors, 0);
  });

  it('counts a denied renewal as a renew error and keeps the old certificate', async () => {
    let renewErrors = 0;
    const { api, m } = await clientManager({ onRenewError: () => renewErrors++ });
    const old = m.current();
    api.onCreate = (csr) => {
      csr.conditions.push({ type: 'Denied', reason: 'Nope' });
    };
    assert.equal(await m.rotateNow(), false);
    assert.equal(renewErrors, 1);
    assert.equal(m.current(), old);
  });

  it('rotates at once, in the background, when the stored certificate is past its deadline', async () => {
    // 23 h into a 24 h certificate: past any 70–90 % deadline.
    const later = Date.now() + 23 * 3600_000;
    const { api, m } = await clientManager({ now: () => later });
    api.onCreate = (csr) => approveAndIssue(ca, csr, 2);
    const old = m.current();
    const rotated = new Promise((resolve) => m.onRotated(resolve));
    m.start();
    await rotated;
    await m.stop();
    assert.notEqual(m.current(), old);
    assert.equal(api.csrs.size, 1);
  });

  it('keeps going while the API server is down at the deadline: renew errors counted, old pair kept, then rotated', async () => {
    const api = new FakeCsrApi();
    const { certDir } = await bootstrapped(api);
    const later = Date.now() + 23 * 3600_000;
    api.onCreate = (csr) => approveAndIssue(ca, csr, 2);
    api.down = 2;
    let renewErrors = 0;
    const logger = recordingLogger();
    const m = await createCertificateManager({
      name: 'test',
      store: createFileStore({ prefix: 'kubelet-client', dir: certDir, logger }),
      api,
      signerName: CLIENT_KUBELET_SIGNER,
      usages: CLIENT_USAGES,
      template: () => nodeClientTemplate('node-a'),
      logger,
      now: () => later,
      onRenewError: () => renewErrors++,
      pollMs: 5,
      retryDelaysMs: [5, 5],
      retrySteadyMs: 5,
    });
    const old = m.current();
    const rotated = new Promise((resolve) => m.onRotated(resolve));
    m.start();
    await rotated;
    await m.stop();
    assert.equal(renewErrors, 2);
    assert.ok(old && m.current() !== old);
    assert.equal(
      logger.lines.filter(
        (l) => l.msg === 'certificate rotation failed; the current certificate stays in use',
      ).length,
      2,
    );
  });

  it('answers no certificate once the current one has expired', async () => {
    const { m } = await clientManager({ now: () => Date.now() + 2 * 86_400_000 });
    assert.equal(m.current(), undefined);
  });
});

describe('serving certificate manager', () => {
  it('asks kubelet-serving for the node addresses, serves the issue, and rotates when an address is added', async () => {
    const api = new FakeCsrApi();
    const certDir = ca.subdir('serving');
    const addresses = [
      { type: 'Hostname', address: 'node-a' },
      { type: 'InternalIP', address: '10.0.0.7' },
    ];
    api.onCreate = async (csr) => {
      csr.conditions.push({ type: 'Approved' });
      const san = csr.csrPem ? 'subjectAltName=' + sansOf(addresses) : '';
      csr.certificate = await ca.sign(csr.csrPem, 1, san);
    };
    const m = await createServingCertificateManager({
      certDir,
      nodeName: 'node-a',
      api,
      logger: recordingLogger(),
      addresses: () => addresses,
      templateRecheckMs: 20,
    });
    assert.equal(m.current(), undefined);
    const first = new Promise((resolve) => m.onRotated(resolve));
    m.start();
    await first;
    const csr = [...api.csrs.values()][0] as StoredCsr;
    assert.equal(csr.signerName, KUBELET_SERVING_SIGNER);
    assert.deepEqual(csr.usages, [...SERVING_USAGES]);
    const pair = m.current();
    assert.ok(pair);
    assert.equal(pair.leaf.subjectAltName, 'DNS:node-a, IP Address:10.0.0.7');
    assert.match(await readlink(join(certDir, 'kubelet-server-current.pem')), /kubelet-server-\d{4}-/);
    const t = servingTemplate('node-a', addresses);
    assert.ok(t);
    assert.equal(templateMismatch(pair, t), undefined);

    // A new address: the certificate no longer covers the node, so it is renewed at once.
    addresses.push({ type: 'ExternalIP', address: '203.0.113.5' });
    const second = new Promise((resolve) => m.onRotated(resolve));
    await second;
    await m.stop();
    assert.equal(api.csrs.size, 2);
    assert.match(m.current()?.leaf.subjectAltName ?? '', /203\.0\.113\.5/);
  });
});

function sansOf(addresses: { type: string; address: string }[]): string {
  return addresses.map((a) => (a.type.endsWith('IP') ? `IP:${a.address}` : `DNS:${a.address}`)).join(',');
}
