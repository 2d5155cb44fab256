/**
 * Service links and cluster DNS on a real cluster: etcd + kube-apiserver 1.20 (+ controller-manager
 * and scheduler) from test/harness/cluster, containerd from test/harness, tskubelet as its own
 * process with a node certificate (so the Service list/watch runs with a node's rights only) and
 * `--cluster-dns=10.96.0.10 --cluster-domain=cluster.local`.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { IMAGE, setupEnv, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';
import { buildManifest } from '../kit/pod.ts';
import { createApiClient } from '../../src/api/client.ts';
import type { ApiClient } from '../../src/api/client-types.ts';
import type { Pod, PodList } from '../../src/api/types.ts';
import { parseResolvConf } from '../../src/runtime/kuberuntime/sandbox-config.ts';

const NODE = 'tsk-svc-itest';
/** A fresh namespace per run: namespace deletion is asynchronous and may outlive the last run. */
const NS = `svc-itest-${Date.now().toString(36)}`;
const CLUSTER_DNS = '10.96.0.10';
const CLUSTER_DOMAIN = 'cluster.local';

interface Service {
  metadata: { name: string; namespace?: string };
  spec: { clusterIP?: string; ports: { name?: string; port: number; protocol?: string }[] };
}

interface ServiceAccount {
  secrets?: { name: string }[];
}

function pod(name: string, spec: Partial<Pod['spec']> = {}): Pod {
  return buildManifest(name, {
    namespace: NS,
    nodeName: NODE,
    terminationGracePeriodSeconds: 1,
    image: IMAGE,
    containers: [{ name: 'main', command: ['sleep', '3600'] }],
    spec,
  });
}

describe('service links and cluster DNS against a real kube-apiserver', () => {
  let env: Env;
  let cluster: ClusterBed;
  let admin: ApiClient;
  let kubelet: TskubeletProcess | undefined;
  let webIP = '';
  let kubernetesIP = '';

  const get = <T>(path: string) => admin.request<T>({ method: 'GET', path });
  const forceDelete = (p: Pod) =>
    admin
      .request({
        method: 'DELETE',
        path: `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}`,
        body: { gracePeriodSeconds: 0 },
      })
      .catch(() => undefined);

  /** Creates the pod and resolves with it once Running, with its container's CRI id. */
  async function runPod(p: Pod): Promise<{ pod: Pod; containerId: string }> {
    await admin.request({ method: 'POST', path: `/api/v1/namespaces/${NS}/pods`, body: p });
    const name = p.metadata.name ?? '';
    const running = await eventually(
      `pod ${name} Running`,
      async () => {
        const x = await get<Pod>(`/api/v1/namespaces/${NS}/pods/${name}`).catch(() => undefined);
        return x?.status?.phase === 'Running' ? x : undefined;
      },
      60_000,
    );
    const id = running.status?.containerStatuses?.[0]?.containerID ?? '';
    assert.match(id, /^containerd:\/\//);
    return { pod: running, containerId: id.replace(/^containerd:\/\//, '') };
  }

  async function exec(containerId: string, cmd: string[]): Promise<string> {
    const r = await env.cri.runtime.execSync(containerId, cmd, 10);
    assert.equal(r.exitCode, 0, r.stderr.toString());
    return r.stdout.toString();
  }

  async function containerEnv(containerId: string): Promise<Map<string, string>> {
    const out = await exec(containerId, ['env']);
    const vars = new Map<string, string>();
    for (const line of out.split('\n')) {
      const eq = line.indexOf('=');
      if (eq > 0) vars.set(line.slice(0, eq), line.slice(eq + 1));
    }
    return vars;
  }

  before(async () => {
    env = await setupEnv();
    cluster = await startCluster();
    admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
    await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
    // Pods an interrupted run left bound to this node would otherwise be run by this one.
    const left = await get<PodList>(`/api/v1/pods?fieldSelector=spec.nodeName%3D${NODE}`);
    for (const p of left.items) await forceDelete(p);
    await admin.request({
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    });
    // Pods are refused until the namespace's default ServiceAccount has its token secret.
    await eventually(
      'default service account with a token',
      async () => {
        const sa = await get<ServiceAccount>(`/api/v1/namespaces/${NS}/serviceaccounts/default`).catch(
          () => undefined,
        );
        return (sa?.secrets?.length ?? 0) > 0 ? true : undefined;
      },
      60_000,
    );
    const web = await admin.request<Service>({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/services`,
      body: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: NS },
        spec: {
          type: 'ClusterIP',
          selector: { app: 'web' },
          ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
        },
      },
    });
    webIP = web.spec.clusterIP ?? '';
    kubernetesIP =
      (await get<Service>('/api/v1/namespaces/default/services/kubernetes')).spec.clusterIP ?? '';
    assert.ok(webIP && kubernetesIP);

    // Started after the Service exists: its first list has it, and pods wait for that list.
    const kubeconfig = await cluster.kubeletKubeconfig(NODE);
    kubelet = startNodeKubelet(env, {
      node: NODE,
      kubeconfig,
      extraArgs: [`--cluster-dns=${CLUSTER_DNS}`, `--cluster-domain=${CLUSTER_DOMAIN}`],
    });
  });

  after(async () => {
    if (admin) {
      const mine = await get<PodList>(`/api/v1/namespaces/${NS}/pods`).catch(() => ({ items: [] }));
      for (const p of mine.items) await forceDelete(p);
    }
    await kubelet?.stop();
    if (admin) {
      await admin.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}` }).catch(() => undefined);
      await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
      admin.close();
    }
    await env?.close();
    await cluster?.stop();
  });

  it("gives a pod the Docker-link variables of its namespace's services and of the master service", async () => {
    const { containerId } = await runPod(pod('links'));
    const vars = await containerEnv(containerId);
    assert.equal(vars.get('WEB_SERVICE_HOST'), webIP);
    assert.equal(vars.get('WEB_SERVICE_PORT'), '80');
    assert.equal(vars.get('WEB_SERVICE_PORT_HTTP'), '80');
    assert.equal(vars.get('WEB_PORT'), `tcp://${webIP}:80`);
    assert.equal(vars.get('WEB_PORT_80_TCP'), `tcp://${webIP}:80`);
    assert.equal(vars.get('WEB_PORT_80_TCP_PROTO'), 'tcp');
    assert.equal(vars.get('WEB_PORT_80_TCP_PORT'), '80');
    assert.equal(vars.get('WEB_PORT_80_TCP_ADDR'), webIP);
    assert.equal(vars.get('KUBERNETES_SERVICE_HOST'), kubernetesIP);
    assert.equal(vars.get('KUBERNETES_SERVICE_PORT'), '443');
    assert.equal(vars.get('KUBERNETES_SERVICE_PORT_HTTPS'), '443');
  });

  it('gives a pod with enableServiceLinks false the master service only', async () => {
    const { containerId } = await runPod(pod('no-links', { enableServiceLinks: false }));
    const vars = await containerEnv(containerId);
    assert.equal(vars.get('KUBERNETES_SERVICE_HOST'), kubernetesIP);
    assert.equal(vars.get('KUBERNETES_PORT_443_TCP_ADDR'), kubernetesIP);
    assert.deepEqual(
      [...vars.keys()].filter((k) => k.startsWith('WEB_')),
      [],
    );
  });

  it('gives a ClusterFirst pod the cluster nameserver, search domains and ndots:5', async () => {
    const { containerId } = await runPod(pod('dns-cluster-first', { dnsPolicy: 'ClusterFirst' }));
    const inPod = parseResolvConf(await exec(containerId, ['cat', '/etc/resolv.conf']));
    const host = parseResolvConf(readFileSync('/etc/resolv.conf', 'utf8'));
    assert.deepEqual(inPod.servers, [CLUSTER_DNS]);
    const clusterSearches = [`${NS}.svc.${CLUSTER_DOMAIN}`, `svc.${CLUSTER_DOMAIN}`, CLUSTER_DOMAIN];
    assert.deepEqual(inPod.searches, [
      ...clusterSearches,
      ...(host.searches ?? []).filter((d) => !clusterSearches.includes(d)),
    ]);
    assert.deepEqual(inPod.options, ['ndots:5']);
  });

  it("gives a Default pod the node's resolv.conf even with cluster DNS configured", async () => {
    const { containerId } = await runPod(pod('dns-default', { dnsPolicy: 'Default' }));
    const inPod = parseResolvConf(await exec(containerId, ['cat', '/etc/resolv.conf']));
    const host = parseResolvConf(readFileSync('/etc/resolv.conf', 'utf8'));
    assert.deepEqual(inPod.servers, host.servers);
    assert.ok(!(inPod.servers ?? []).includes(CLUSTER_DNS));
  });
});
