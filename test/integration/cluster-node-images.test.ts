/**
 * The Node's status.images, as a tskubelet process in a real cluster reports them: the images in
 * the bed containerd (pause and busybox at least), named by digests then tags, with their sizes,
 * largest first (upstream Images setter, nodeStatusMaxImages 50).
 *
 * Run under the shared bed lock:
 *   flock /tmp/tskubelet-itest.lock node_modules/.bin/node --test test/integration/cluster-node-images.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { BUSYBOX_IMAGE, PAUSE_IMAGE } from '../harness/index.ts';
import { createApiClient } from '../../src/api/client.ts';
import type { ApiClient } from '../../src/api/client-types.ts';
import type { Node } from '../../src/node/types.ts';
import { runTeardown } from '../kit/teardown.ts';
import { setupEnv, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';

const NODE = 'tsk-images';

void describe('node status images against a real kube-apiserver', () => {
  let env: Env | undefined;
  let cluster: ClusterBed | undefined;
  let admin: ApiClient | undefined;
  let kubelet: TskubeletProcess | undefined;

  before(async () => {
    env = await setupEnv();
    await mkdir(env.manifests, { recursive: true });
    cluster = await startCluster();
    admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
    // A clean slate: no Node left by an earlier run, so the images seen are this run's.
    await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
    const kubeconfig = await cluster.kubeletKubeconfig(NODE);
    kubelet = startNodeKubelet(env, { node: NODE, kubeconfig, staticPods: true });
  });

  after(async () => {
    await kubelet?.stop();
    const steps = [
      () => admin?.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }),
      () => admin?.close(),
      () => env?.close(),
      () => cluster?.stop(),
    ];
    await runTeardown(steps);
  });

  void it('lists the pause and busybox images with their sizes, largest first', async () => {
    const api = admin;
    if (!api) throw new Error('not set up');
    // At most 5 names per image are listed (upstream): a bed whose image also carries registry
    // mirror names (127.0.0.1:5000/<ref>) may list those instead of the bare reference.
    const has = (n: Node | undefined, ref: string) =>
      n?.status?.images?.find((i) => i.names?.some((name) => name === ref || name.endsWith(`/${ref}`)));
    const node = await eventually(
      'status.images with pause and busybox',
      async () => {
        await kubelet?.assertRunning();
        const n = await api
          .request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` })
          .catch(() => undefined);
        return has(n, PAUSE_IMAGE) && has(n, BUSYBOX_IMAGE) ? n : undefined;
      },
      60_000,
    );
    const images = node.status?.images ?? [];
    for (const ref of [PAUSE_IMAGE, BUSYBOX_IMAGE]) {
      const size = has(node, ref)?.sizeBytes ?? 0;
      assert.ok(size > 0, `${ref} has a size (${size})`);
    }
    const sizes = images.map((i) => i.sizeBytes ?? 0);
    assert.deepEqual(
      sizes,
      [...sizes].sort((a, b) => b - a),
      'largest first',
    );
    assert.ok(images.length <= 50, 'nodeStatusMaxImages 50');
    for (const i of images) assert.ok((i.names?.length ?? 0) >= 1 && (i.names?.length ?? 0) <= 5);
  });
});
