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
import { describeError } from '../../src/util/errors.ts';
import { eventually, setupEnv, type Env } from './support.ts';
import { startNodeKubelet, type TskubeletProcess } from './kubelet-process.ts';

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
      extraArgs: ['--port', String(PORT)],
    });
  });

  after(async () => {
    const failures: string[] = [];
    await kubelet?.stop();
    const steps = [
      () =>
        admin?.request({
          method: 'DELETE',
          path: `/api/v1/namespaces/${NS}/pods/api-access`,
          body: { gracePeriodSeconds: 0 },
        }),
      () => admin?.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }),
      () => admin?.close(),
      () => env?.close(),
      () => cluster?.stop(),
    ];
    for (const step of steps) {
      try {
        await step();
      } catch (err) {
        if (!/404|not found/i.test(describeError(err))) failures.push(describeError(err));
      }
    }
    if (failures.length > 0) throw new Error(`teardown: ${failures.join('; ')}`);
  });

  void it('mounts a kube-api-access volume whose token the API server accepts as the pod’s account, for the audience', async () => {
    const api = admin;
    const e = env;
    if (!api || !e) throw new Error('not set up');
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'api-access', namespace: NS },
      spec: {
        nodeName: NODE,
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'c',
            image: BUSYBOX_IMAGE,
            command: [
              'sh',
              '-c',
              // Exit 0 only if the container sees all three files, the namespace one right.
              `test -s /var/run/secrets/tokens/token && grep -q 'BEGIN CERTIFICATE' /var/run/secrets/tokens/ca.crt && [ "$(cat /var/run/secrets/tokens/namespace)" = ${NS} ]`,
            ],
            volumeMounts: [
              { name: 'kube-api-access-test', mountPath: '/var/run/secrets/tokens', readOnly: true },
            ],
          },
        ],
        volumes: [
          {
            name: 'kube-api-access-test',
            projected: {
              defaultMode: 420,
              sources: [
                { serviceAccountToken: { audience: AUDIENCE, expirationSeconds: 3607, path: 'token' } },
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
      },
    };
    const created = await api.request<Pod>({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/pods`,
      body: pod,
    });
    const uid = created.metadata.uid ?? '';
    const done = await eventually(
      'the pod to finish',
      async () => {
        await kubelet?.assertRunning();
        const p = await api.request<Pod>({ method: 'GET', path: `/api/v1/namespaces/${NS}/pods/api-access` });
        return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined;
      },
      60_000,
    );
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status?.containerStatuses));

    const dir = projectedVolumePath(e.rootDir, uid, 'projected', 'kube-api-access-test');
    const token = (await readFile(join(dir, 'token'), 'utf8')).trim();
    const review = await api.request<TokenReview>({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, audiences: [AUDIENCE] },
      },
    });
    assert.equal(review.status?.authenticated, true, review.status?.error);
    assert.equal(review.status?.user?.username, `system:serviceaccount:${NS}:default`);
    assert.deepEqual(review.status?.user?.extra?.['authentication.kubernetes.io/pod-uid'], [uid]);
    assert.deepEqual(review.status?.audiences, [AUDIENCE]);
  });
});
