/**
 * TLS bootstrap and serving certificates against the bed's kube-apiserver 1.20 (upstream
 * pkg/kubelet/certificate/bootstrap and serverTLSBootstrap): a tskubelet started with no kubeconfig
 * but a bootstrap one asks for its client certificate through a CSR that the controller-manager's
 * approver and signer answer, writes its kubeconfig and registers its Node with that identity; its
 * kubelet-serving CSR (never auto-approved) is approved here, and the kubelet API serves the issued
 * certificate from then on, to the API server's proxy too.
 *
 * The bootstrap identity is the bed's admin (system:masters may create node-client CSRs, which the
 * approver checks by SubjectAccessReview), since the bed's API server has no bootstrap token
 * authenticator; kubeadm join's token path is the kubeadm test's.
 *
 * Run under the shared bed lock:
 *   flock /tmp/tskubelet-bed.lock node_modules/.bin/node --test test/integration/cluster-bootstrap.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { lstat, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { createApiClient } from '../../src/api/client.ts';
import type { ApiClient } from '../../src/api/client-types.ts';
import { readKubeconfig } from '../../src/api/kubeconfig.ts';
import type { Node } from '../../src/node/types.ts';
import { describeError } from '../../src/util/errors.ts';
import { alreadyGone, runTeardown } from '../kit/teardown.ts';
import { setupEnv, type Env } from '../kit/bed.ts';
import { eventually, untilAlive } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';

const NODE = 'tsk-bootstrap';
/** The kubelet API on a port of its own. */
const PORT = 11257;
const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

interface Csr {
  metadata: { name: string };
  spec: { signerName: string; username?: string; usages?: string[] };
  status?: { conditions?: { type: string }[]; certificate?: string };
}

/** The certificate the kubelet API presents, or the handshake error. */
function presented(): Promise<X509Certificate | Error> {
  return new Promise((resolve) => {
    const s = tlsConnect({ host: '127.0.0.1', port: PORT, rejectUnauthorized: false }, () => {
      const raw = s.getPeerCertificate().raw;
      s.end();
      resolve(new X509Certificate(raw));
    });
    s.on('error', (err: Error) => resolve(err));
  });
}

void describe('TLS bootstrap and serving certificates against a real kube-apiserver', () => {
  let env: Env | undefined;
  let cluster: ClusterBed | undefined;
  let admin: ApiClient | undefined;
  let kubelet: TskubeletProcess | undefined;
  let kubeconfig = '';
  let certDir = '';

  before(async () => {
    env = await setupEnv();
    await mkdir(env.manifests, { recursive: true });
    cluster = await startCluster();
    admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
    await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
    kubeconfig = join(env.dir, 'kubelet.conf');
    certDir = join(env.dir, 'pki');
    kubelet = startNodeKubelet(env, {
      node: NODE,
      kubeconfig,
      extraArgs: [
        '--bootstrap-kubeconfig',
        cluster.adminKubeconfig,
        '--cert-dir',
        certDir,
        '--rotate-certificates',
        '--rotate-server-certificates',
        '--port',
        String(PORT),
      ],
    });
  });

  after(async () => {
    await kubelet?.stop();
    const csrs = await admin
      ?.request<{ items: Csr[] }>({ method: 'GET', path: CSRS })
      .catch(() => ({ items: [] }));
    const steps = [
      ...(csrs?.items ?? [])
        .filter((c) => c.spec.username === `system:node:${NODE}` || c.metadata.name.startsWith('node-csr-'))
        .map((c) => () => admin?.request({ method: 'DELETE', path: `${CSRS}/${c.metadata.name}` })),
      () => admin?.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }),
      () => admin?.close(),
      () => env?.close(),
      () => cluster?.stop(),
    ];
    await runTeardown(steps, { ignore: alreadyGone });
  });

  it('bootstraps a node client certificate and registers the Node as system:node:<name>', async () => {
    const api = admin;
    if (!api || !cluster) throw new Error('not set up');
    const node = await untilAlive(
      `Node ${NODE} registered`,
      () => api.request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined),
      { timeoutMs: 90_000, alive: async () => kubelet?.assertRunning() },
    );
    assert.equal(node.metadata.name, NODE);
    const current = join(certDir, 'kubelet-client-current.pem');
    assert.ok((await lstat(current)).isSymbolicLink());
    const creds = await readKubeconfig(kubeconfig);
    assert.ok(creds.cert);
    const cert = new X509Certificate(creds.cert);
    assert.equal(cert.subject, `O=system:nodes\nCN=system:node:${NODE}`);
    assert.ok(
      cert.verify(new X509Certificate(await readFile(cluster.caFile)).publicKey),
      'issued by the cluster CA',
    );
    const { items } = await api.request<{ items: Csr[] }>({ method: 'GET', path: CSRS });
    const client = items.find(
      (c) => c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet' && c.status?.certificate,
    );
    assert.ok(client, 'the node-client CSR was approved and issued');
  });

  it('serves the kubelet-serving certificate once its CSR is approved, to the API server proxy too', async () => {
    const api = admin;
    if (!api || !cluster) throw new Error('not set up');
    const csr = await untilAlive(
      'a kubelet-serving CSR from the node',
      async () => {
        const { items } = await api.request<{ items: Csr[] }>({ method: 'GET', path: CSRS });
        return items.find(
          (c) =>
            c.spec.signerName === 'kubernetes.io/kubelet-serving' &&
            c.spec.username === `system:node:${NODE}`,
        );
      },
      { timeoutMs: 60_000, alive: async () => kubelet?.assertRunning() },
    );
    assert.deepEqual(csr.spec.usages, ['digital signature', 'key encipherment', 'server auth']);
    // Until approved: no certificate, every handshake fails (upstream's behaviour).
    assert.ok((await presented()) instanceof Error);

    const full = await api.request<Csr & { status: { conditions?: unknown[] } }>({
      method: 'GET',
      path: `${CSRS}/${csr.metadata.name}`,
    });
    await api.request({
      method: 'PUT',
      path: `${CSRS}/${csr.metadata.name}/approval`,
      body: {
        ...full,
        status: {
          ...full.status,
          conditions: [
            ...(full.status.conditions ?? []),
            { type: 'Approved', status: 'True', reason: 'TestApproved', message: 'approved by the test' },
          ],
        },
      },
    });
    const cert = await eventually(
      'the kubelet API presenting the issued serving certificate',
      async () => {
        const c = await presented();
        return c instanceof X509Certificate ? c : undefined;
      },
      60_000,
    );
    assert.equal(cert.subject, `O=system:nodes\nCN=system:node:${NODE}`);
    assert.match(cert.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    assert.ok(
      cert.verify(new X509Certificate(await readFile(cluster.caFile)).publicKey),
      'issued by the cluster CA',
    );
    assert.match(await readFile(join(certDir, 'kubelet-server-current.pem'), 'utf8'), /BEGIN CERTIFICATE/);

    // The API server reaches the kubelet API over it: the kubelet itself answers the node proxy
    // (401: the bed's kubelet has no client CA to take the API server's certificate), where before
    // approval the handshake failed and the API server answered 503.
    const answer = await eventually(
      'the kubelet answering through the API server node proxy',
      () =>
        api.request<unknown>({ method: 'GET', path: `/api/v1/nodes/${NODE}:${PORT}/proxy/healthz` }).then(
          () => 'ok',
          (err: unknown) => {
            const m = describeError(err);
            return /JSON|Unauthorized|401/i.test(m) ? m : undefined;
          },
        ),
      30_000,
    );
    assert.doesNotMatch(answer, /handshake|503/);
  });
});
