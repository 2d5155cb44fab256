/**
 * tskubelet as a node of a real cluster: etcd + kube-apiserver 1.20 (+ controller-manager and
 * scheduler) from test/harness/cluster, containerd from test/harness. tskubelet runs as its own
 * process (bin/tskubelet) with a node client certificate, so it has exactly a node's rights.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { IMAGE, setupEnv, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';
import { buildManifest } from '../kit/pod.ts';
import { startContainerd, stopBedContainerd } from '../harness/index.ts';
import { createApiClient } from '../../src/api/client.ts';
import type { ApiClient } from '../../src/api/client-types.ts';
import type { Pod, PodList } from '../../src/api/types.ts';
import type { Lease, Node } from '../../src/node/types.ts';

const NODE = 'tsk-itest';
const NS = 'default';

function pod(name: string, spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: { nodeName: NODE, terminationGracePeriodSeconds: 5, ...spec },
  };
}

describe('cluster mode against a real kube-apiserver', () => {
  let env: Env;
  let cluster: ClusterBed;
  let admin: ApiClient;
  let kubelet: TskubeletProcess | undefined;
  let kubeconfig: string;

  function startKubelet(): void {
    kubelet = startNodeKubelet(env, {
      node: NODE,
      kubeconfig,
      staticPods: true,
      extraArgs: ['--node-labels', 'tskubelet.example/role=test'],
    });
  }

  async function stopKubelet(): Promise<void> {
    const k = kubelet;
    kubelet = undefined;
    await k?.stop();
  }

  const get = <T>(path: string) => admin.request<T>({ method: 'GET', path });
  const getPod = (name: string) => get<Pod>(`/api/v1/namespaces/${NS}/pods/${name}`).catch(() => undefined);
  const createPod = (p: Pod) =>
    admin.request<Pod>({ method: 'POST', path: `/api/v1/namespaces/${NS}/pods`, body: p });

  before(async () => {
    env = await setupEnv();
    await mkdir(env.manifests, { recursive: true });
    cluster = await startCluster();
    admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
    // A clean slate: no node or pods left by an earlier run.
    await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
    const left = await get<PodList>(`/api/v1/pods?fieldSelector=spec.nodeName%3D${NODE}`);
    for (const p of left.items) {
      await admin
        .request({
          method: 'DELETE',
          path: `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}`,
          body: { gracePeriodSeconds: 0 },
        })
        .catch(() => undefined);
    }
    kubeconfig = await cluster.kubeletKubeconfig(NODE);
    await writeFile(
      join(env.manifests, 'static-web.yaml'),
      stringify(
        buildManifest('static-web', {
          namespace: NS,
          image: IMAGE,
          containers: [{ name: 'main', command: ['sleep', '3600'] }],
        }),
      ),
    );
    startKubelet();
  });

  after(async () => {
    await stopKubelet();
    if (admin) {
      await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
      admin.close();
    }
    await env?.close();
    await cluster?.stop();
  });

  it('registers the node, which turns Ready with capacity, labels and node info', async () => {
    const node = await eventually(
      'node Ready',
      async () => {
        const n = await get<Node>(`/api/v1/nodes/${NODE}`).catch(() => undefined);
        const ready = n?.status?.conditions?.find((c) => c.type === 'Ready');
        return ready?.status === 'True' ? n : undefined;
      },
      60_000,
    );
    assert.equal(node.metadata.labels?.['kubernetes.io/hostname'], NODE);
    assert.equal(node.metadata.labels?.['kubernetes.io/os'], 'linux');
    assert.equal(node.metadata.labels?.['tskubelet.example/role'], 'test');
    assert.equal(node.status?.capacity?.pods, '110');
    assert.match(node.status?.nodeInfo?.containerRuntimeVersion ?? '', /^containerd:\/\//);
    assert.ok(node.status?.addresses?.some((a) => a.type === 'InternalIP' && a.address === '127.0.0.1'));
    for (const t of ['MemoryPressure', 'DiskPressure', 'PIDPressure']) {
      assert.equal(node.status?.conditions?.find((c) => c.type === t)?.status, 'False', t);
    }
  });

  it('renews its Lease in kube-node-lease', async () => {
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`;
    const first = await eventually('lease exists', () => get<Lease>(path).catch(() => undefined), 30_000);
    assert.equal(first.spec?.holderIdentity, NODE);
    assert.equal(first.spec?.leaseDurationSeconds, 40);
    const renewed = await eventually(
      'lease renewed',
      async () => {
        // A lease left by an earlier node of this name may be garbage-collected once: the kubelet
        // then creates it again, which also counts as renewed.
        const l = await get<Lease>(path).catch(() => undefined);
        return l && l.spec?.renewTime !== first.spec?.renewTime ? l : undefined;
      },
      25_000,
    );
    assert.ok(Date.parse(renewed.spec?.renewTime ?? '') > Date.parse(first.spec?.renewTime ?? ''));
  });

  it('runs a pod bound to the node and reports Running with a pod IP and container statuses', async () => {
    await createPod(
      pod('api-web', { containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }] }),
    );
    const p = await eventually(
      'pod Running in the API',
      async () => {
        const x = await getPod('api-web');
        return x?.status?.phase === 'Running' ? x : undefined;
      },
      60_000,
    );
    assert.match(p.status?.podIP ?? '', /^10\.88\./);
    assert.equal(p.status?.hostIP, '127.0.0.1');
    const cs = p.status?.containerStatuses?.[0];
    assert.equal(cs?.ready, true);
    assert.equal(cs?.restartCount, 0);
    assert.match(cs?.containerID ?? '', /^containerd:\/\//);
    assert.ok(cs?.state.running?.startedAt);
    assert.equal(p.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    // The service-account token secret volume the API server added was mounted.
    assert.ok(p.spec.volumes?.some((v) => v.name.startsWith('default-token-')));
  });

  it('terminates a deleted pod within its grace period and removes it from the API', async () => {
    const t0 = Date.now();
    await admin.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}/pods/api-web` });
    await eventually(
      'pod gone from the API',
      async () => ((await getPod('api-web')) ? undefined : true),
      30_000,
    );
    assert.ok(Date.now() - t0 < 5_000 + 10_000, 'gone within the 5 s grace period plus a sync or two');
    const sandboxes = await env.cri.runtime.listPodSandbox({
      labelSelector: { 'io.kubernetes.pod.name': 'api-web' },
    });
    assert.equal(sandboxes.length, 0);
  });

  it('shows a static pod as a mirror pod with its status', async () => {
    const mirror = await eventually(
      'mirror pod Running',
      async () => {
        const m = await getPod(`static-web-${NODE}`);
        return m?.status?.phase === 'Running' ? m : undefined;
      },
      60_000,
    );
    assert.ok(mirror.metadata.annotations?.['kubernetes.io/config.mirror']);
    assert.equal(mirror.metadata.ownerReferences?.[0]?.kind, 'Node');
    assert.equal(mirror.status?.containerStatuses?.[0]?.ready, true);
  });

  it('recreates a mirror pod deleted through the API', async () => {
    const before = await getPod(`static-web-${NODE}`);
    await admin.request({
      method: 'DELETE',
      path: `/api/v1/namespaces/${NS}/pods/static-web-${NODE}`,
      body: { gracePeriodSeconds: 0 },
    });
    const again = await eventually(
      'mirror pod recreated',
      async () => {
        const m = await getPod(`static-web-${NODE}`);
        return m && m.metadata.uid !== before?.metadata.uid ? m : undefined;
      },
      30_000,
    );
    assert.ok(again.metadata.annotations?.['kubernetes.io/config.mirror']);
  });

  it('rejects a pod that does not fit (OutOfcpu): Failed with reason and an event', async () => {
    await createPod(
      pod('too-big', {
        containers: [{ name: 'main', image: IMAGE, resources: { requests: { cpu: '1000' } } }],
      }),
    );
    const p = await eventually(
      'pod Failed',
      async () => {
        const x = await getPod('too-big');
        return x?.status?.phase === 'Failed' ? x : undefined;
      },
      30_000,
    );
    assert.equal(p.status?.reason, 'OutOfcpu');
    assert.match(p.status?.message ?? '', /Node didn't have enough resource: cpu/);
    const events = await get<{ items: { reason: string; involvedObject: { name: string } }[] }>(
      `/api/v1/namespaces/${NS}/events`,
    );
    assert.ok(events.items.some((e) => e.reason === 'OutOfcpu' && e.involvedObject.name === 'too-big'));
  });

  it('survives an API server restart: pods keep running and statuses converge afterwards', async () => {
    await createPod(
      pod('crasher', {
        containers: [{ name: 'main', image: IMAGE, command: ['sh', '-c', 'sleep 2; exit 1'] }],
      }),
    );
    await eventually(
      'crasher started',
      async () => ((await getPod('crasher'))?.status?.phase === 'Running' ? true : undefined),
      60_000,
    );
    await cluster.stopApiserver();
    // While the API server is down the container crashes and restarts; nothing may be lost.
    await new Promise((r) => setTimeout(r, 6_000));
    assert.equal(kubelet?.child.exitCode, null, 'tskubelet is still running');
    await cluster.startApiserver();
    const p = await eventually(
      'restart count reported after the outage',
      async () => {
        const x = await getPod('crasher');
        return (x?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? x : undefined;
      },
      60_000,
    );
    assert.ok(p.status?.containerStatuses?.[0]);
    const node = await eventually(
      'node Ready after the outage',
      async () => {
        const n = await get<Node>(`/api/v1/nodes/${NODE}`);
        return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? n : undefined;
      },
      60_000,
    );
    assert.ok(node);
  });

  it('turns the node NotReady while the container runtime is down, and Ready again after', async () => {
    const readyStatus = async () =>
      (await get<Node>(`/api/v1/nodes/${NODE}`)).status?.conditions?.find((c) => c.type === 'Ready');
    await stopBedContainerd();
    try {
      const notReady = await eventually(
        'node NotReady',
        async () => {
          const c = await readyStatus();
          return c?.status === 'False' ? c : undefined;
        },
        40_000,
      );
      assert.equal(notReady.reason, 'KubeletNotReady');
      assert.match(notReady.message ?? '', /container runtime/);
      assert.equal(kubelet?.child.exitCode, null, 'tskubelet keeps running');
    } finally {
      await startContainerd();
    }
    await eventually(
      'node Ready again',
      async () => ((await readyStatus())?.status === 'True' ? true : undefined),
      40_000,
    );
    // The static pod survived the runtime restart untouched.
    const m = await getPod(`static-web-${NODE}`);
    assert.equal(m?.status?.containerStatuses?.[0]?.restartCount, 0);
  });

  it('re-adopts its pods after a tskubelet restart without restarting containers', async () => {
    const before = await getPod(`static-web-${NODE}`);
    const id = before?.status?.containerStatuses?.[0]?.containerID;
    assert.ok(id);
    await stopKubelet();
    startKubelet();
    await new Promise((r) => setTimeout(r, 5_000));
    const after = await eventually(
      'mirror status after restart',
      async () => {
        const m = await getPod(`static-web-${NODE}`);
        return m?.status?.phase === 'Running' ? m : undefined;
      },
      30_000,
    );
    assert.equal(after.status?.containerStatuses?.[0]?.containerID, id);
    assert.equal(after.status?.containerStatuses?.[0]?.restartCount, 0);
  });
});
