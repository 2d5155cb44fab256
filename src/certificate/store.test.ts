import assert from 'node:assert/strict';
import { lstat, mkdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { recordingLogger } from '../util/testing.ts';
import { kubeconfigUsesStore, writeKubeconfigFromBootstrapping } from './bootstrap.ts';
import { makeCsrPem, newPrivateKeyPem, parsePrivateKey } from './csr.ts';
import { createFileStore } from './store.ts';
import { testCAForFile } from './testing.ts';

const ca = testCAForFile();

async function issued(): Promise<{ certPem: string; keyPem: string }> {
  const keyPem = newPrivateKeyPem();
  const key = parsePrivateKey(keyPem);
  assert.ok(key);
  const certPem = await ca.sign(
    makeCsrPem(key, { commonName: 'system:node:n', organization: ['system:nodes'] }),
  );
  return { certPem, keyPem };
}

describe('certificate file store', () => {
  it('refuses a certificate that is not for the key, leaving the current pair alone', async () => {
    const dir = ca.subdir('store');
    const store = createFileStore({ prefix: 'kubelet-client', dir, logger: recordingLogger() });
    const a = await issued();
    const b = await issued();
    await store.update(a.certPem, a.keyPem);
    const before = await readlink(store.currentPath());
    await assert.rejects(store.update(a.certPem, b.keyPem), /does not match the certificate/);
    assert.equal(await readlink(store.currentPath()), before);
  });

  it('finishes a symlink swap cut short (only the -updated link is there)', async () => {
    const dir = ca.subdir('store');
    await mkdir(dir);
    const p = await issued();
    const file = join(dir, 'kubelet-client-2026-01-01-00-00-00.pem');
    await writeFile(file, p.certPem + p.keyPem, { mode: 0o600 });
    await symlink(file, join(dir, 'kubelet-client-updated.pem'));
    const store = createFileStore({ prefix: 'kubelet-client', dir, logger: recordingLogger() });
    const got = await store.current();
    assert.equal(got.kind, 'pair');
    assert.ok((await lstat(join(dir, 'kubelet-client-current.pem'))).isSymbolicLink());
  });

  it('falls back to <prefix>.crt/.key and reports files that are not a pair as invalid', async () => {
    const dir = ca.subdir('store');
    await mkdir(dir);
    const p = await issued();
    await writeFile(join(dir, 'kubelet-server.crt'), p.certPem);
    await writeFile(join(dir, 'kubelet-server.key'), p.keyPem);
    const store = createFileStore({ prefix: 'kubelet-server', dir, logger: recordingLogger() });
    assert.equal((await store.current()).kind, 'pair');
    await writeFile(join(dir, 'kubelet-server.key'), 'not a key');
    const bad = await store.current();
    assert.equal(bad.kind, 'invalid');
    assert.match(bad.kind === 'invalid' ? bad.reason : '', /no PRIVATE KEY block/);
  });
});

describe('the bootstrapped kubeconfig', () => {
  it('carries inline CA data over when the bootstrap kubeconfig has no CA file, and names the store', async () => {
    const dir = ca.subdir('kc');
    await mkdir(dir);
    const bootstrap = join(dir, 'bootstrap.conf');
    const caPem = await readFile(ca.caFile);
    await writeFile(
      bootstrap,
      [
        'apiVersion: v1',
        `clusters: [{name: c, cluster: {server: "https://api:6443", certificate-authority-data: ${caPem.toString('base64')}}}]`,
        'users: [{name: u, user: {token: a.b}}]',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
        '',
      ].join('\n'),
    );
    const out = join(dir, 'sub', 'kubelet.conf');
    const pem = join(dir, 'pki', 'kubelet-client-current.pem');
    await writeKubeconfigFromBootstrapping(bootstrap, out, pem);
    const doc = parse(await readFile(out, 'utf8')) as { clusters: { cluster: Record<string, unknown> }[] };
    assert.deepEqual(doc.clusters[0]?.cluster, {
      server: 'https://api:6443',
      'certificate-authority-data': caPem.toString('base64'),
    });
    assert.equal(await kubeconfigUsesStore(out, join(dir, 'pki')), true);
    assert.equal(await kubeconfigUsesStore(bootstrap, join(dir, 'pki')), false);
  });
});
