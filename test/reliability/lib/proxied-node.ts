/**
 * A tskubelet node of the cluster bed that reaches its API server only through the fault proxy
 * (lib/api-proxy.ts): the bed's containerd and control plane, the proxy in front of the real
 * kube-apiserver with the node's client certificate, and `bin/tskubelet run` (its own process) with
 * a kubeconfig pointing at the proxy. The scenario drives the cluster directly through an admin
 * client, and reads the kubelet's process (CPU, RSS) and the runtime (CRI) to see what it did.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createApiClient } from '../../../src/api/client.ts';
import type { ApiClient } from '../../../src/api/client-types.ts';
import type { Pod, PodList } from '../../../src/api/types.ts';
import type { Lease, Node } from '../../../src/node/types.ts';
import { sleep } from '../../../src/util/abort.ts';
import { describeError, isNotFound } from '../../../src/util/errors.ts';
import type { Logger } from '../../../src/util/logger.ts';
import { CLUSTER_PATHS, startCluster, type ClusterBed } from '../../harness/cluster/index.ts';
import { writeKubeconfig } from '../../harness/cluster/kubeconfig.ts';
import { startNodeKubelet, type TskubeletProcess } from '../../kit/process.ts';
import { IMAGE, setupEnv, type Env } from '../../kit/bed.ts';
import { buildManifest } from '../../kit/pod.ts';
import { startApiProxy, type ApiProxy } from './api-proxy.ts';

/** Off 10250 so a kubelet left by someone else's run cannot collide with ours. */
const KUBELET_PORT = 11262;
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';

export interface ProxiedNode {
  node: string;
  namespace: string;
  env: Env;
  cluster: ClusterBed;
  /** cluster-admin, straight to the API server (never through the proxy). */
  admin: ApiClient;
  proxy: ApiProxy;
  kubelet: TskubeletProcess;
  pid: number;
  /** When the Node and its Lease were first seen (admin polls every 100 ms from the kubelet's start). */
  nodeSeenAt: number;
  leaseSeenAt: number;
  close(): Promise<void>;
}

export interface ProxiedNodeOptions {
  node: string;
  namespace: string;
  /** Static pods (manifests in the pod manifest path), in `namespace`. */
  staticPods: Pod[];
  logger: Logger;
  signal: AbortSignal;
  extraArgs?: readonly string[];
}

/** A pod that sleeps and exits at once on SIGTERM, bound to `node`. */
export function sleeperPod(
  name: string,
  namespace: string,
  node: string | undefined,
  extra: { command?: string[]; labels?: Record<string, string> } = {},
): Pod {
  return buildManifest(name, {
    namespace,
    labels: { app: 'rel-api', ...extra.labels },
    ...(node !== undefined ? { nodeName: node } : {}),
    terminationGracePeriodSeconds: 5,
    image: IMAGE,
    containers: [
      {
        name: 'main',
        command: extra.command ?? ['sh', '-c', "trap 'kill $!; exit 0' TERM; sleep 3600 & wait"],
      },
    ],
  });
}

export function podsPath(namespace: string): string {
  return `/api/v1/namespaces/${namespace}/pods`;
}

/** Every pod bound to `node`, in every namespace (mirror pods included). */
export async function podsOnNode(admin: ApiClient, node: string): Promise<Pod[]> {
  const list = await admin.request<PodList>({
    method: 'GET',
    path: '/api/v1/pods',
    query: { fieldSelector: `spec.nodeName=${node}` },
  });
  return list.items;
}

/** Running, Ready, every container ready and running: what the kubelet reports for a healthy pod. */
export function podConverged(p: Pod): boolean {
  const cs = p.status?.containerStatuses ?? [];
  return (
    p.status?.phase === 'Running' &&
    p.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True' &&
    cs.length === p.spec.containers.length &&
    cs.every((c) => c.ready && c.state.running !== undefined)
  );
}

export interface ContainerView {
  id: string;
  pod: string;
  podUid: string;
  container: string;
  /** The kubelet's restart count annotation (0 for a first run). */
  restartCount: number;
  running: boolean;
}

/** Containers of pods in `namespace` as the runtime has them, newest attempt last. */
export async function containersIn(env: Env, namespace: string): Promise<ContainerView[]> {
  const list = await env.cri.runtime.listContainers({
    labelSelector: { 'io.kubernetes.pod.namespace': namespace },
  });
  return list
    .map((c) => ({
      id: c.id,
      pod: c.labels['io.kubernetes.pod.name'] ?? '',
      podUid: c.labels['io.kubernetes.pod.uid'] ?? '',
      container: c.labels['io.kubernetes.container.name'] ?? '',
      restartCount: Number(c.annotations['io.kubernetes.container.restartCount'] ?? 0),
      running: c.state === 'CONTAINER_RUNNING',
      createdAt: c.createdAt,
    }))
    .sort((a, b) => a.createdAt - b.createdAt)
    .map(({ createdAt: _c, ...v }) => v);
}

/** The running container of each `pod/container`. */
export function runningByName(views: ContainerView[]): Map<string, ContainerView> {
  const out = new Map<string, ContainerView>();
  for (const v of views) if (v.running) out.set(`${v.pod}/${v.container}`, v);
  return out;
}

/** The newest container of each `pod/container`, running or not (its restart count is the pod's). */
export function newestByName(views: ContainerView[]): Map<string, ContainerView> {
  const out = new Map<string, ContainerView>();
  for (const v of views) out.set(`${v.pod}/${v.container}`, v);
  return out;
}

export function readyStatus(n: Node | undefined): string {
  return n?.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'missing';
}

/** Polls `probe` every `intervalMs` until it returns true or `timeoutMs` passes: the time it took, or undefined. */
export async function timeUntil(
  probe: () => Promise<boolean>,
  timeoutMs: number,
  signal: AbortSignal,
  intervalMs = 250,
): Promise<number | undefined> {
  const t0 = Date.now();
  for (;;) {
    if (await probe().catch(() => false)) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs) return undefined;
    await sleep(intervalMs, signal);
  }
}

async function ignoreNotFound(p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** Deletes every pod bound to `node` with grace 0 (mirror pods too); what is already gone is fine. */
export async function deletePodsOnNode(admin: ApiClient, node: string): Promise<void> {
  for (const p of await podsOnNode(admin, node)) {
    await ignoreNotFound(
      admin.request({
        method: 'DELETE',
        path: `${podsPath(p.metadata.namespace ?? 'default')}/${p.metadata.name ?? ''}`,
        body: { gracePeriodSeconds: 0 },
      }),
    );
  }
}

async function ensureNamespace(admin: ApiClient, namespace: string, signal: AbortSignal): Promise<void> {
  await admin
    .request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: namespace } } })
    .catch((err: unknown) => {
      if (!(err instanceof Error && /AlreadyExists/.test(err.message))) throw err;
    });
  // The ServiceAccount admission plugin refuses pods until `default` and its token secret exist.
  const ok = await timeUntil(
    async () => {
      const sa = await admin.request<{ secrets?: unknown[] }>({
        method: 'GET',
        path: `/api/v1/namespaces/${namespace}/serviceaccounts/default`,
      });
      return (sa.secrets ?? []).length > 0;
    },
    60_000,
    signal,
  );
  if (ok === undefined) throw new Error(`no default service account token in namespace ${namespace}`);
}

export async function startProxiedNode(opts: ProxiedNodeOptions): Promise<ProxiedNode> {
  const { node, namespace, logger: log, signal } = opts;
  const env = await setupEnv();
  const cleanups: (() => Promise<void>)[] = [() => env.close()];
  const runCleanups = async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch (err) {
        log.error('cleanup step failed', { node, err: describeError(err) });
      }
    }
  };
  try {
    const cluster = await startCluster({ logger: log, signal });
    cleanups.push(() => cluster.stop());
    const admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
    cleanups.push(() => Promise.resolve(admin.close()));
    await ensureNamespace(admin, namespace, signal);
    // A clean slate: no Node, Lease or pods of this name left by an earlier run.
    await deletePodsOnNode(admin, node);
    await ignoreNotFound(admin.request({ method: 'DELETE', path: `/api/v1/nodes/${node}` }));
    await ignoreNotFound(admin.request({ method: 'DELETE', path: `${LEASES}/${node}` }));

    await cluster.kubeletKubeconfig(node); // issues the node's client certificate
    const read = (p: string) => readFile(p, 'utf8');
    const client = {
      cert: join(CLUSTER_PATHS.nodePki, `${node}.crt`),
      key: join(CLUSTER_PATHS.nodePki, `${node}.key`),
    };
    const proxy = await startApiProxy({
      upstream: cluster.server,
      ca: await read(cluster.caFile),
      // The API server's own serving certificate: signed by the bed CA, valid for 127.0.0.1.
      serving: {
        cert: await read(join(CLUSTER_PATHS.pki, 'apiserver.crt')),
        key: await read(join(CLUSTER_PATHS.pki, 'apiserver.key')),
      },
      client: { cert: await read(client.cert), key: await read(client.key) },
    });
    cleanups.push(() => proxy.close());
    const kubeconfig = await writeKubeconfig(join(env.dir, 'kubelet-via-proxy.kubeconfig'), {
      server: proxy.url,
      caFile: cluster.caFile,
      user: `system:node:${node}`,
      client,
    });
    await mkdir(env.manifests, { recursive: true });
    for (const p of opts.staticPods) {
      await writeFile(join(env.manifests, `${p.metadata.name ?? 'static'}.yaml`), stringify(p));
    }
    await mkdir(env.rootDir, { recursive: true });
    const kubelet = startNodeKubelet(env, {
      node,
      kubeconfig,
      staticPods: true,
      extraArgs: ['--port', String(KUBELET_PORT), ...(opts.extraArgs ?? [])],
    });
    cleanups.push(async () => {
      await deletePodsOnNode(admin, node);
      await kubelet.stop();
      await ignoreNotFound(admin.request({ method: 'DELETE', path: `/api/v1/nodes/${node}` }));
      await ignoreNotFound(admin.request({ method: 'DELETE', path: `${LEASES}/${node}` }));
    });
    const pid = kubelet.child.pid;
    if (pid === undefined) throw new Error(`tskubelet did not start; see ${kubelet.logFile}`);

    let nodeSeenAt = 0;
    let leaseSeenAt = 0;
    const registered = await timeUntil(
      async () => {
        await kubelet.assertRunning();
        const now = Date.now();
        if (nodeSeenAt === 0) {
          const n = await admin
            .request<Node>({ method: 'GET', path: `/api/v1/nodes/${node}` })
            .catch(() => undefined);
          if (n) nodeSeenAt = now;
        }
        if (leaseSeenAt === 0) {
          const l = await admin
            .request<Lease>({ method: 'GET', path: `${LEASES}/${node}` })
            .catch(() => undefined);
          if (l) leaseSeenAt = now;
        }
        if (nodeSeenAt === 0 || leaseSeenAt === 0) return false;
        const n = await admin.request<Node>({ method: 'GET', path: `/api/v1/nodes/${node}` });
        return readyStatus(n) === 'True';
      },
      90_000,
      signal,
      100,
    );
    if (registered === undefined)
      throw new Error(`node ${node} not Ready with a Lease within 90 s; see ${kubelet.logFile}`);
    log.info('proxied node ready', { node, proxy: proxy.url, pid, log: kubelet.logFile });
    return {
      node,
      namespace,
      env,
      cluster,
      admin,
      proxy,
      kubelet,
      pid,
      nodeSeenAt,
      leaseSeenAt,
      close: runCleanups,
    };
  } catch (err) {
    await runCleanups();
    throw err;
  }
}
