import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { createAuthenticator } from '../../server/auth/authenticator.ts';
import type { Authorizer } from '../../server/auth/authorizer.ts';
import type { KubeletServer } from '../../server/kubelet-server.ts';
import { fakeHost, makeTestPki, startTestServer, testPod } from '../../server/testing.ts';
import { NodeApiError, connectNode, messageOf } from './client.ts';
import { readKubeconfig } from '../../api/kubeconfig.ts';

let dir: string;
let server: KubeletServer;
let port: number;
let kubeconfig: string;
let strangerKubeconfig: string;

/** Only user `admin` may do anything, as a SubjectAccessReview would decide. */
const adminOnly: Authorizer = {
  authorize: (a) =>
    Promise.resolve(a.user.name === 'admin' ? { allowed: true } : { allowed: false, reason: 'not admin' }),
};

async function writeKubeconfig(file: string, user: Record<string, string>): Promise<void> {
  await writeFile(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'ctx',
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
      clusters: [{ name: 'c', cluster: { server: 'https://apiserver.example:6443' } }],
      users: [{ name: 'u', user }],
    }),
  );
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-cli-https-'));
  const pki = await makeTestPki(dir);
  const admin = await pki.client('admin', ['system:masters']);
  const stranger = await pki.client('stranger', []);
  await writeFile(join(dir, 'admin.crt'), admin.cert);
  await writeFile(join(dir, 'admin.key'), admin.key);
  kubeconfig = join(dir, 'admin.kubeconfig');
  // Relative file paths are relative to the kubeconfig.
  await writeKubeconfig(kubeconfig, { 'client-certificate': 'admin.crt', 'client-key': 'admin.key' });
  strangerKubeconfig = join(dir, 'stranger.kubeconfig');
  await writeKubeconfig(strangerKubeconfig, {
    'client-certificate-data': stranger.cert.toString('base64'),
    'client-key-data': stranger.key.toString('base64'),
  });
  ({ server, port } = await startTestServer(
    fakeHost([{ pod: testPod('default', 'web', 'u1'), status: { phase: 'Running' } }]),
    dir,
    {
      ips: ['127.0.0.1'],
      clientCA: pki.caCert,
      authenticator: createAuthenticator({ anonymous: false, x509: true }),
      authorizer: adminOnly,
    },
  ));
});

after(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

describe('the node CLI over HTTPS with a kubeconfig', () => {
  it("authenticates with the kubeconfig's client certificate (files relative to it)", async () => {
    const c = await connectNode({
      kubeconfig,
      server: `https://127.0.0.1:${port}`,
      insecureSkipTlsVerify: true,
    });
    const list = await c.getJSON<{ items: { metadata: { name: string } }[] }>(
      '/pods',
      AbortSignal.timeout(5000),
    );
    assert.deepEqual(
      list.items.map((p) => p.metadata.name),
      ['web'],
    );
  });

  it('reports a refusal with the status and the kubelet message', async () => {
    const c = await connectNode({
      kubeconfig: strangerKubeconfig,
      server: `https://127.0.0.1:${port}`,
      insecureSkipTlsVerify: true,
    });
    const err = await c.getJSON('/pods', AbortSignal.timeout(5000)).catch((e: unknown) => e);
    assert.ok(err instanceof NodeApiError);
    assert.equal(err.status, 403);
    assert.match(err.message, /^Forbidden \(user=stranger/);
  });

  it("verifies the kubelet's certificate unless told not to", async () => {
    const c = await connectNode({ kubeconfig, server: `https://127.0.0.1:${port}` });
    await assert.rejects(
      c.getJSON('/pods', AbortSignal.timeout(5000)),
      /cannot reach the kubelet at https:\/\/127\.0\.0\.1:\d+: /,
    );
  });

  it('refuses a kubeconfig without --server, and a non-https server', async () => {
    await assert.rejects(connectNode({ kubeconfig }), /--kubeconfig needs --server https:\/\/HOST:10250/);
    await assert.rejects(connectNode({ server: 'http://127.0.0.1:10250' }), /--server must be https/);
  });

  it('reads a token (inline or from tokenFile) and the cluster CA and insecure flag', async () => {
    const f = join(dir, 'token.kubeconfig');
    await writeFile(join(dir, 'token'), 's3cret\n');
    await writeKubeconfig(f, { tokenFile: 'token' });
    const creds = await readKubeconfig(f);
    assert.equal(creds.token, 's3cret');
    assert.equal(creds.insecureSkipTLSVerify, false);
    await assert.rejects(readKubeconfig(f, 'other'), /context "other" not found/);
  });

  it('takes the message of a Status body, else the text', () => {
    assert.equal(
      messageOf('{"kind":"Status","message":"pods \\"x\\" not found"}', 404),
      'pods "x" not found',
    );
    assert.equal(messageOf('pod does not exist\n', 404), 'pod does not exist');
    assert.equal(messageOf('', 500), 'HTTP 500');
  });
});
