/**
 * Service-account token projection against the bed's kube-apiserver 1.20: a pod with the projected
 * volume that 1.21+ API servers inject (`kube-api-access-*`: a TokenRequest token, the
 * `kube-root-ca.crt` ConfigMap and the namespace) sees all three files, and the API server accepts
 * the token as the pod's service account, bound to that pod, for the audience asked.
 *
 * Run under the shared bed lock:
 *   flock /tmp/tskubelet-itest.lock node_modules/.bin/node --test test/integration/cluster-tokens.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { BUSYBOX_IMAGE } from '../harness/index.ts';
import { createApiClient } from '../../src/api/client.ts';
import type { ApiClient } from '../../src/api/client-types.ts';
import type { Pod } from '../../src/api/types.ts';
import { projectedVolumePath } from '../../src/volume/index.ts';
import { alreadyGone, runTeardown } from '../kit/teardown.ts';
import { setupEnv, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';
import { buildManifest } from '../kit/pod.ts';

const NODE = 'tsk-tokens';
const NS = 'tsk-tokens';
const AUDIENCE = 'tskubelet-test';
/** The kubelet API on a port of its own (the API server is not asked to reach it here). */
const PORT = 11253;

interface TokenReview {
  status?: {
    authenticated?: boolean;
    audiences?: string[];
    user?: { username?: string; extra?: Record<string, string[]> };
    error?: string;
  };
}

void describe('service-account token projection against a real kube-apiserver', () => {
  let env: Env | undefined;
  let cluster: ClusterBed | undefined;
  let admin: ApiClient | undefined;
  let kubelet: TskubeletProcess | undefined;

  before(async () => {
    env = await setupEnv();
    await mkdir(env.manifests, { recursive: true });
    cluster = await startCluster();
    admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
    const api = admin;
    await api.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
    await api
      .request({
        method: 'DELETE',
        path: `/api/v1/namespaces/${NS}/pods/api-access`,
        body: { gracePeriodSeconds: 0 },
      })
      .catch(() => undefined);
    await api
      .request({
        method: 'DELETE',
        path: `/api/v1/namespaces/${NS}/pods/rotating`,
        body: { gracePeriodSeconds: 0 },
      })
      .catch(() => undefined);
    await api
      .request({
        method: 'POST',
        path: '/api/v1/namespaces',
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      })
      .catch(() => undefined);
    // The controller-manager makes the default service account and publishes the root CA.
    await eventually('the default service account and kube-root-ca.crt', async () => {
      const sa = await api
        .request({ method: 'GET', path: `/api/v1/namespaces/${NS}/serviceaccounts/default` })
        .catch(() => undefined);
      const cm = await api
        .request({ method: 'GET', path: `/api/v1/namespaces/${NS}/configmaps/kube-root-ca.crt` })
        .catch(() => undefined);
      return sa && cm ? true : undefined;
    });
    kubelet = startNodeKubelet(env, {
      node: NODE,
      kubeconfig: await cluster.kubeletKubeconfig(NODE),
      // Volumes are re-projected on each sync: a short period bounds when a refreshed token lands.
      extraArgs: ['--port', String(PORT), '--sync-frequency', '20s'],
    });
  });

  after(async () => {
    await kubelet?.stop();
    const steps = [
      () =>
        admin?.request({
          method: 'DELETE',
          path: `/api/v1/namespaces/${NS}/pods/api-access`,
          body: { gracePeriodSeconds: 0 },
        }),
      () =>
        admin?.request({
          method: 'DELETE',
          path: `/api/v1/namespaces/${NS}/pods/rotating`,
          body: { gracePeriodSeconds: 0 },
        }),
      () => admin?.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }),
      () => admin?.close(),
      () => env?.close(),
      () => cluster?.stop(),
    ];
    await runTeardown(steps, { ignore: alreadyGone });
  });

  /** A pod with the 1.21+ kube-api-access projected volume; `script` runs in its container. */
  function apiAccessPod(name: string, expirationSeconds: number, script: string): Pod {
    return buildManifest(name, {
      namespace: NS,
      nodeName: NODE,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      image: BUSYBOX_IMAGE,
      containers: [
        {
          name: 'c',
          command: ['sh', '-c', script],
          volumeMounts: [
            { name: 'kube-api-access-test', mountPath: '/var/run/secrets/tokens', readOnly: true },
          ],
        },
      ],
      spec: { automountServiceAccountToken: false },
      volumes: [
        {
          name: 'kube-api-access-test',
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { audience: AUDIENCE, expirationSeconds, path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              {
                downwardAPI: {
                  items: [
                    { path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } },
                  ],
                },
              },
            ],
          },
        },
      ],
    });
  }

  /** Creates the pod and waits until it has run for a few seconds (a failed check exits it). */
  async function runPod(pod: Pod): Promise<string> {
    const api = admin;
    if (!api) throw new Error('not set up');
    const created = await api.request<Pod>({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/pods`,
      body: pod,
    });
    const path = `/api/v1/namespaces/${NS}/pods/${pod.metadata.name ?? ''}`;
    const phase = async () => (await api.request<Pod>({ method: 'GET', path })).status;
    await eventually(
      `${pod.metadata.name ?? ''} Running`,
      async () => {
        await kubelet?.assertRunning();
        return (await phase())?.phase === 'Running' ? true : undefined;
      },
      60_000,
    );
    await new Promise((r) => setTimeout(r, 3_000));
    const st = await phase();
    assert.equal(st?.phase, 'Running', JSON.stringify(st?.containerStatuses));
    return created.metadata.uid ?? '';
  }

  async function review(token: string): Promise<TokenReview> {
    const api = admin;
    if (!api) throw new Error('not set up');
    return api.request<TokenReview>({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, audiences: [AUDIENCE] },
      },
    });
  }

  const tokenOf = async (uid: string, e: Env): Promise<string> =>
    (
      await readFile(
        join(projectedVolumePath(e.rootDir, uid, 'projected', 'kube-api-access-test'), 'token'),
        'utf8',
      )
    ).trim();

  void it('mounts a kube-api-access volume whose token the API server accepts as the pod’s account, for the audience', async () => {
    const e = env;
    if (!e) throw new Error('not set up');
    // The container stays up only if it sees all three files, the namespace one right.
    const uid = await runPod(
      apiAccessPod(
        'api-access',
        3607,
        `test -s /var/run/secrets/tokens/token && grep -q 'BEGIN CERTIFICATE' /var/run/secrets/tokens/ca.crt && [ "$(cat /var/run/secrets/tokens/namespace)" = ${NS} ] || exit 1; exec sleep 3600`,
      ),
    );
    const r = await review(await tokenOf(uid, e));
    assert.equal(r.status?.authenticated, true, r.status?.error);
    assert.equal(r.status?.user?.username, `system:serviceaccount:${NS}:default`);
    assert.deepEqual(r.status?.user?.extra?.['authentication.kubernetes.io/pod-uid'], [uid]);
    assert.deepEqual(r.status?.audiences, [AUDIENCE]);
  });

  // The API server's shortest token lifetime is 10 min; the kubelet refreshes at 80 % (8 min).
  void it(
    'rotates a 10-minute token after 80 % of its lifetime, the new one accepted too',
    { timeout: 12 * 60_000 },
    async () => {
      const e = env;
      if (!e) throw new Error('not set up');
      const uid = await runPod(apiAccessPod('rotating', 600, 'exec sleep 3600'));
      const first = await tokenOf(uid, e);
      assert.equal((await review(first)).status?.authenticated, true);
      const started = Date.now();
      const second = await eventually(
        'the token file to change',
        async () => {
          await kubelet?.assertRunning();
          const t = await tokenOf(uid, e);
          return t !== first ? t : undefined;
        },
        10 * 60_000,
      );
      const afterMs = Date.now() - started;
      assert.ok(afterMs > 6 * 60_000, `rotated after ${afterMs} ms: too early for 80 % of 10 min`);
      const r = await review(second);
      assert.equal(r.status?.authenticated, true, r.status?.error);
      assert.deepEqual(r.status?.user?.extra?.['authentication.kubernetes.io/pod-uid'], [uid]);
    },
  );
});
