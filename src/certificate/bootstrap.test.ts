import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { lstat, mkdir, readFile, readdir, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { readKubeconfig } from '../api/kubeconfig.ts';
import { apiError } from '../api/testing.ts';
import { recordingLogger } from '../util/testing.ts';
import { TMP_PRIVATE_KEY_FILE, loadClientCert, type BootstrapOptions } from './bootstrap.ts';
import { CLIENT_KUBELET_SIGNER, CLIENT_USAGES } from './request.ts';
import { FakeCsrApi, approveAndIssue, testCAForFile, writeBootstrapKubeconfig } from './testing.ts';

const ca = testCAForFile();

/** A fresh node directory: bootstrap kubeconfig written, no kubeconfig, empty cert dir. */
async function setup(api: FakeCsrApi, over: Partial<BootstrapOptions> = {}) {
  const dir = ca.subdir('node');
  await mkdir(dir);
  const bootstrapKubeconfigPath = join(dir, 'bootstrap-kubelet.conf');
  await writeBootstrapKubeconfig(bootstrapKubeconfigPath, ca.caFile);
  const logger = recordingLogger();
  const opts: BootstrapOptions = {
    kubeconfigPath: join(dir, 'kubelet.conf'),
    bootstrapKubeconfigPath,
    certDir: join(dir, 'pki'),
    nodeName: 'node-a',
    logger,
    connect: () => Promise.resolve(api),
    retryInitialMs: 5,
    retryMaxMs: 20,
    pollMs: 5,
    waitTimeoutMs: 2000,
    ...over,
  };
  return { dir, opts, logger };
}

describe('TLS bootstrap', () => {
  it('requests a node client certificate, stores it as upstream and writes a kubeconfig pointing at it', async () => {
    const api = new FakeCsrApi();
    api.onCreate = (csr) => approveAndIssue(ca, csr);
    const { opts } = await setup(api);

    const result = await loadClientCert(opts);

    assert.equal(result.bootstrapped, true);
    const [csr] = [...api.csrs.values()];
    assert.ok(csr);
    assert.match(csr.name, /^node-csr-[A-Za-z0-9_-]{43}$/);
    assert.equal(csr.signerName, CLIENT_KUBELET_SIGNER);
    assert.deepEqual(csr.usages, [...CLIENT_USAGES]);
    // The request's subject, as the approver checks it.
    const cert = new X509Certificate(csr.certificate ?? '');
    assert.equal(cert.subject, 'O=system:nodes\nCN=system:node:node-a');

    const current = join(opts.certDir, 'kubelet-client-current.pem');
    assert.ok((await lstat(current)).isSymbolicLink());
    const target = await readlink(current);
    assert.match(target, /\/kubelet-client-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$/);
    assert.equal((await stat(target)).mode & 0o777, 0o600);
    const pem = await readFile(current, 'utf8');
    assert.match(pem, /BEGIN CERTIFICATE[\s\S]*BEGIN EC PRIVATE KEY/);
    // The kept key is gone once issued.
    assert.deepEqual((await readdir(opts.certDir)).includes(TMP_PRIVATE_KEY_FILE), false);

    const doc = parse(await readFile(opts.kubeconfigPath, 'utf8')) as {
      clusters: { cluster: Record<string, unknown> }[];
      users: { user: Record<string, unknown> }[];
      'current-context': string;
    };
    assert.equal(doc['current-context'], 'default-context');
    assert.deepEqual(doc.clusters[0]?.cluster, {
      server: 'https://10.0.0.1:6443',
      'certificate-authority': ca.caFile,
    });
    assert.deepEqual(doc.users[0]?.user, { 'client-certificate': current, 'client-key': current });
    assert.equal((await stat(opts.kubeconfigPath)).mode & 0o777, 0o600);
    const creds = await readKubeconfig(opts.kubeconfigPath);
    assert.ok(creds.cert && creds.key);
  });

  it('reuses a kubeconfig whose client certificate is still valid, asking nothing', async () => {
    const api = new FakeCsrApi();
    api.onCreate = (csr) => approveAndIssue(ca, csr);
    const { opts } = await setup(api);
    await loadClientCert(opts);
    api.clearRecorded();

    const again = await loadClientCert(opts);

    assert.deepEqual(again, { bootstrapped: false, reason: 'valid' });
    assert.deepEqual(api.calls(), []);
  });

  it('waits for approval and issue, then takes the certificate', async () => {
    const api = new FakeCsrApi();
    const { opts, logger } = await setup(api);
    const done = loadClientCert(opts);
    while (api.csrs.size === 0) await new Promise((r) => setTimeout(r, 5));
    const csr = [...api.csrs.values()][0];
    assert.ok(csr);
    csr.conditions.push({ type: 'Approved', reason: 'AutoApproved' });
    await new Promise((r) => setTimeout(r, 30));
    csr.certificate = await ca.sign(csr.csrPem);
    const result = await done;
    assert.equal(result.bootstrapped, true);
    assert.ok(
      logger.lines.some((l) => l.msg === 'certificate signing request is approved, waiting to be issued'),
    );
  });

  it('fails with the denial reason when the request is denied', async () => {
    const api = new FakeCsrApi();
    api.onCreate = (csr) => {
      csr.conditions.push({ type: 'Denied', reason: 'NotAllowed', message: 'not a node' });
    };
    const { opts } = await setup(api);
    await assert.rejects(
      loadClientCert(opts),
      /certificate signing request is denied, reason: NotAllowed, message: not a node/,
    );
    await assert.rejects(stat(opts.kubeconfigPath), { code: 'ENOENT' });
  });

  it('fails when the signer marks the request Failed', async () => {
    const api = new FakeCsrApi();
    api.onCreate = (csr) => {
      csr.conditions.push(
        { type: 'Approved' },
        { type: 'Failed', reason: 'SignerValidationFailure', message: 'bad usages' },
      );
    };
    const { opts } = await setup(api);
    await assert.rejects(
      loadClientCert(opts),
      /certificate signing request failed, reason: SignerValidationFailure/,
    );
  });

  it('refuses an issued certificate that has already expired, writing nothing', async () => {
    const api = new FakeCsrApi();
    api.onCreate = (csr) => approveAndIssue(ca, csr, -1);
    const { opts } = await setup(api);
    await assert.rejects(loadClientCert(opts), /has already expired/);
    await assert.rejects(stat(opts.kubeconfigPath), { code: 'ENOENT' });
    await assert.rejects(lstat(join(opts.certDir, 'kubelet-client-current.pem')), { code: 'ENOENT' });
  });

  it('times out with a clear error when nobody approves', async () => {
    const api = new FakeCsrApi();
    const { opts } = await setup(api, { waitTimeoutMs: 50 });
    await assert.rejects(loadClientCert(opts), (err: Error) => /not issued within/.test(err.message));
  });

  it('retries with back-off while the API server is down, logging each failure, then bootstraps', async () => {
    const api = new FakeCsrApi();
    api.down = 3;
    api.onCreate = (csr) => approveAndIssue(ca, csr);
    const { opts, logger } = await setup(api);

    const result = await loadClientCert(opts);

    assert.equal(result.bootstrapped, true);
    const retries = logger.lines.filter((l) =>
      l.msg.startsWith('failed to connect to the API server for TLS bootstrap'),
    );
    assert.equal(retries.length, 3);
    assert.deepEqual(
      retries.map((l) => l.fields.attempt),
      [1, 2, 3],
    );
  });

  it('stops retrying when the kubelet shuts down', async () => {
    const api = new FakeCsrApi();
    api.down = 1_000_000;
    const ac = new AbortController();
    const { opts } = await setup(api, { signal: ac.signal });
    setTimeout(() => ac.abort(), 40);
    await assert.rejects(loadClientCert(opts));
    assert.ok(api.requests.length >= 2);
  });

  it('fails at once when the bootstrap credentials are refused', async () => {
    const api = new FakeCsrApi();
    const { opts } = await setup(api);
    api.respond(
      'POST',
      '/apis/certificates.k8s.io/v1/certificatesigningrequests',
      apiError(401, 'Unauthorized'),
    );
    await assert.rejects(loadClientCert(opts), /cannot create certificate signing request: .*401/);
    assert.equal(api.requests.length, 1);
  });

  it('regenerates a corrupt kept key and a corrupt stored certificate, saying so', async () => {
    const api = new FakeCsrApi();
    api.onCreate = (csr) => approveAndIssue(ca, csr);
    const { opts, logger } = await setup(api);
    await mkdir(opts.certDir, { recursive: true });
    await writeFile(join(opts.certDir, TMP_PRIVATE_KEY_FILE), 'garbage');
    await writeFile(
      join(opts.certDir, 'kubelet-client-2020-01-01-00-00-00.pem'),
      '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
    );
    await symlink(
      join(opts.certDir, 'kubelet-client-2020-01-01-00-00-00.pem'),
      join(opts.certDir, 'kubelet-client-current.pem'),
    );

    const result = await loadClientCert(opts);

    assert.equal(result.bootstrapped, true);
    assert.ok(
      logger.lines.some(
        (l) => l.level === 'warn' && l.msg.includes('stored client certificate or key is invalid'),
      ),
    );
    assert.ok(
      logger.lines.some(
        (l) => l.level === 'warn' && l.msg.includes('kept bootstrap private key does not parse'),
      ),
    );
    const creds = await readKubeconfig(opts.kubeconfigPath);
    assert.ok(creds.cert);
    assert.match(creds.cert.toString(), /BEGIN CERTIFICATE/);
  });

  it('bootstraps again when the kubeconfig names a corrupt key, instead of failing every connection', async () => {
    const api = new FakeCsrApi();
    api.onCreate = (csr) => approveAndIssue(ca, csr);
    const { opts, logger } = await setup(api);
    await loadClientCert(opts);
    const current = join(opts.certDir, 'kubelet-client-current.pem');
    const pem = await readFile(current, 'utf8');
    // The key block truncated in place (a disk full, a crash mid-write).
    await writeFile(
      await readlink(current),
      pem.slice(0, pem.indexOf('-----BEGIN EC PRIVATE KEY-----') + 40),
    );

    const result = await loadClientCert(opts);

    assert.equal(result.bootstrapped, true);
    assert.ok(
      logger.lines.some(
        (l) => l.level === 'warn' && l.msg.includes('stored client certificate or key is invalid'),
      ),
    );
    const creds = await readKubeconfig(opts.kubeconfigPath);
    assert.ok(creds.key && creds.key.toString().includes('END EC PRIVATE KEY'));
  });

  it('bootstraps again when the kubeconfig certificate has expired, finding its pending request after a restart', async () => {
    const api = new FakeCsrApi();
    api.onCreate = (csr) => approveAndIssue(ca, csr);
    const { opts } = await setup(api);
    await loadClientCert(opts);
    // The kubeconfig now names an expired certificate (e.g. written by hand long ago).
    const expired = await ca.sign([...api.csrs.values()][0]?.csrPem ?? '', -1);
    const key = await readFile(join(opts.certDir, 'kubelet-client-current.pem'), 'utf8');
    await writeFile(
      opts.kubeconfigPath,
      [
        'apiVersion: v1',
        'clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]',
        `users: [{name: u, user: {client-certificate-data: ${Buffer.from(expired).toString('base64')}, client-key-data: ${Buffer.from(key).toString('base64')}}}]`,
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
        '',
      ].join('\n'),
    );

    const result = await loadClientCert(opts);

    assert.equal(result.bootstrapped, true);
    // The stored key is reused: the same digested name, so the existing object is taken.
    assert.equal(api.csrs.size, 1);
    assert.equal(api.requestsFor('POST').length, 2);
    const creds = await readKubeconfig(opts.kubeconfigPath);
    assert.ok(creds.cert);
    assert.ok(new X509Certificate(creds.cert).validToDate.getTime() > Date.now());
  });
});
