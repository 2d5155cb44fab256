/**
 * Pod status fidelity in a real cluster (etcd + kube-apiserver 1.20 from test/harness/cluster, a
 * tskubelet process with a node's credentials): readiness gates set by someone else through the
 * status subresource, and readiness that keeps being probed while a pod terminates.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { IMAGE, setupEnv, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';
import { buildManifest } from '../kit/pod.ts';
import { createApiClient } from '../../src/api/client.ts';
import type { ApiClient } from '../../src/api/client-types.ts';
import type { Pod, PodCondition, PodList } from '../../src/api/types.ts';
import type { Node } from '../../src/node/types.ts';

const NODE = 'tsk-gates';
const NS = 'default';
const GATE = 'example.com/load-balancer';

function condition(p: Pod | undefined, type: string): PodCondition | undefined {
  return p?.status?.conditions?.find((c) => c.type === type);
}

describe('pod status fidelity against a real kube-apiserver', () => {
  let env: Env;
  let cluster: ClusterBed;
  let admin: ApiClient;
  let kubelet: TskubeletProcess | undefined;

  const podPath = (name: string) => `/api/v1/namespaces/${NS}/pods/${name}`;
  const getPod = (name: string) =>
    admin.request<Pod>({ method: 'GET', path: podPath(name) }).catch(() => undefined);
  const createPod = (p: Pod) =>
    admin.request<Pod>({ method: 'POST', path: `/api/v1/namespaces/${NS}/pods`, body: p });
  /** What a readiness-gate controller does: set its condition through the status subresource. */
  const setGate = (name: string, status: 'True' | 'False') =>
    admin.request<Pod>({
      method: 'PATCH',
      path: `${podPath(name)}/status`,
      contentType: 'application/strategic-merge-patch+json',
      body: {
        status: {
          conditions: [
            {
              type: GATE,
              status,
              lastProbeTime: null,
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            },
          ],
        },
      },
    });

  async function forceDelete(name: string): Promise<void> {
    await admin
      .request({ method: 'DELETE', path: podPath(name), body: { gracePeriodSeconds: 0 } })
      .catch(() => undefined);
  }

  before(async () => {
    env = await setupEnv();
    await mkdir(env.manifests, { recursive: true });
    cluster = await startCluster();
    admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
    await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
    const left = await admin.request<PodList>({
      method: 'GET',
      path: `/api/v1/pods?fieldSelector=spec.nodeName%3D${NODE}`,
    });
    for (const p of left.items) await forceDelete(p.metadata.name ?? '');
    const kubeconfig = await cluster.kubeletKubeconfig(NODE);
    kubelet = startNodeKubelet(env, {
      node: NODE,
      kubeconfig,
      staticPods: true,
      // This file is about pod status, not resource isolation: pods run in containerd's default
      // cgroup parent, so the timings here do not depend on the QoS cgroup tree.
      extraArgs: ['--cgroups-per-qos=false', '--enforce-node-allocatable='],
    });
    await eventually(
      'node Ready',
      async () => {
        const n = await admin
          .request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` })
          .catch(() => undefined);
        return n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? n : undefined;
      },
      60_000,
    );
  });

  after(async () => {
    await kubelet?.stop();
    if (admin) {
      const left = await admin
        .request<PodList>({ method: 'GET', path: `/api/v1/pods?fieldSelector=spec.nodeName%3D${NODE}` })
        .catch(() => undefined);
      for (const p of left?.items ?? []) await forceDelete(p.metadata.name ?? '');
      await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
      admin.close();
    }
    await env?.close();
    await cluster?.stop();
  });

  it('holds Ready False for an unmet readiness gate, and keeps the gate condition others set', async () => {
    const spec = {
      nodeName: NODE,
      terminationGracePeriodSeconds: 2,
      readinessGates: [{ conditionType: GATE }],
      containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }],
    };
    await createPod({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'gated', namespace: NS },
      spec,
    });

    const waiting = await eventually(
      'containers ready, pod not Ready because of the gate',
      async () => {
        const p = await getPod('gated');
        return p?.status?.containerStatuses?.[0]?.ready === true && condition(p, 'Ready')?.reason
          ? p
          : undefined;
      },
      60_000,
    );
    assert.equal(condition(waiting, 'ContainersReady')?.status, 'True');
    assert.deepEqual(
      { status: condition(waiting, 'Ready')?.status, reason: condition(waiting, 'Ready')?.reason },
      { status: 'False', reason: 'ReadinessGatesNotReady' },
    );
    assert.equal(
      condition(waiting, 'Ready')?.message,
      `corresponding condition of pod readiness gate "${GATE}" does not exist.`,
    );

    await setGate('gated', 'True');
    const ready = await eventually(
      'pod Ready once the gate is True',
      async () => {
        const p = await getPod('gated');
        return condition(p, 'Ready')?.status === 'True' ? p : undefined;
      },
      30_000,
    );
    assert.equal(condition(ready, GATE)?.status, 'True');

    // A later status change written by the kubelet (the container is restarted) keeps the gate.
    const containerID = ready.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '');
    assert.ok(containerID);
    await env.cri.runtime.stopContainer(containerID, 0);
    const restarted = await eventually(
      'restart written by the kubelet, pod Ready again',
      async () => {
        const p = await getPod('gated');
        const cs = p?.status?.containerStatuses?.[0];
        const restartedOnce = (cs?.restartCount ?? 0) >= 1 && !cs?.containerID?.endsWith(containerID);
        return restartedOnce && cs?.ready && condition(p, 'Ready')?.status === 'True' ? p : undefined;
      },
      60_000,
    );
    assert.equal(
      condition(restarted, GATE)?.status,
      'True',
      'the gate condition survived the kubelet writes',
    );
    assert.equal(restarted.status?.conditions?.filter((c) => c.type === GATE).length, 1);

    await setGate('gated', 'False');
    const gateDown = await eventually(
      'pod not Ready once the gate is False',
      async () => {
        const p = await getPod('gated');
        return condition(p, 'Ready')?.status === 'False' ? p : undefined;
      },
      30_000,
    );
    assert.equal(condition(gateDown, 'Ready')?.reason, 'ReadinessGatesNotReady');
    assert.equal(
      condition(gateDown, 'Ready')?.message,
      `the status of pod readiness gate "${GATE}" is not "True", but False`,
    );
    await forceDelete('gated');
  });

  it('keeps probing readiness while a deleted pod shuts down, so it turns not Ready before it is gone', async () => {
    // On SIGTERM the container stops being ready at once, then takes 20 s to exit.
    const script =
      'trap "rm -f /tmp/ready; sleep 20; exit 0" TERM; touch /tmp/ready; while true; do sleep 1; done';
    await createPod(
      buildManifest('draining', {
        namespace: NS,
        nodeName: NODE,
        terminationGracePeriodSeconds: 30,
        image: IMAGE,
        containers: [
          {
            name: 'main',
            command: ['sh', '-c', script],
            readinessProbe: {
              exec: { command: ['cat', '/tmp/ready'] },
              periodSeconds: 1,
              failureThreshold: 1,
            },
          },
        ],
      }),
    );
    await eventually(
      'pod Ready',
      async () => (condition(await getPod('draining'), 'Ready')?.status === 'True' ? true : undefined),
      60_000,
    );
    await admin.request({ method: 'DELETE', path: podPath('draining') });
    const draining = await eventually(
      'pod not Ready while still terminating',
      async () => {
        const p = await getPod('draining');
        return p && condition(p, 'Ready')?.status === 'False' ? p : undefined;
      },
      15_000,
    );
    assert.ok(draining.metadata.deletionTimestamp, 'the pod is still terminating');
    assert.ok(draining.status?.containerStatuses?.[0]?.state.running, 'its container is still running');
    assert.equal(condition(draining, 'Ready')?.reason, 'ContainersNotReady');
    await eventually('pod gone', async () => ((await getPod('draining')) ? undefined : true), 60_000);
  });
});
