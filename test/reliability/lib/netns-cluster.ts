/**
 * The control plane's view of the netns nodes, through the admin client: Ready conditions, Leases,
 * the spread Deployment and its pods, the controller-manager's node-monitor settings, and removal of
 * every API object the scenario made (by name, so a dead run's leftovers go too).
 */
import type { ApiClient } from '../../../src/api/client-types.ts';
import type { Pod, PodList } from '../../../src/api/types.ts';
import { isNotFound } from '../../../src/util/errors.ts';
import type { Lease, Node } from '../../../src/node/types.ts';
import { CLUSTER_PATHS } from '../../harness/cluster/paths.ts';
import { BUSYBOX_IMAGE } from '../../harness/images.ts';
import { processesMatching } from './netns-host.ts';
import { NETNS_NODE_LABEL } from './netns-node.ts';

export const SPREAD_NAMESPACE = 'default';
export const SPREAD_APP = 'tskrel-mn-spread';
const DEPLOYMENTS = `/apis/apps/v1/namespaces/${SPREAD_NAMESPACE}/deployments`;
const PODS = `/api/v1/namespaces/${SPREAD_NAMESPACE}/pods`;
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';

const orUndefined = <T>(p: Promise<T>): Promise<T | undefined> =>
  p.catch((err: unknown) => {
    if (isNotFound(err)) return undefined;
    throw err;
  });

export async function getNode(api: ApiClient, name: string): Promise<Node | undefined> {
  return orUndefined(api.request<Node>({ method: 'GET', path: `/api/v1/nodes/${name}` }));
}

/** The Ready condition's status ('True', 'False', 'Unknown'), or 'absent'. */
export function readyStatus(node: Node | undefined): string {
  return node?.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? 'absent';
}

export function readyCondition(node: Node | undefined) {
  return node?.status?.conditions?.find((c) => c.type === 'Ready');
}

export async function getLease(api: ApiClient, name: string): Promise<Lease | undefined> {
  return orUndefined(api.request<Lease>({ method: 'GET', path: `${LEASES}/${name}` }));
}

/** The node-lifecycle timing of the running kube-controller-manager (its flags, else 1.20's defaults). */
export interface NodeMonitorSettings {
  gracePeriodMs: number;
  periodMs: number;
  /** Where the figures came from. */
  source: string;
}

/** A Go duration such as `40s`, `1m0s`, `500ms`. */
export function parseGoDuration(s: string): number | undefined {
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
  let total = 0;
  let consumed = 0;
  for (const m of s.matchAll(re)) {
    total += Number(m[1]) * (unit[m[2] ?? ''] ?? Number.NaN);
    consumed += m[0].length;
  }
  return consumed === s.length && s.length > 0 && Number.isFinite(total) ? total : undefined;
}

export async function nodeMonitorSettings(): Promise<NodeMonitorSettings> {
  const procs = (await processesMatching(`--kubeconfig=${CLUSTER_PATHS.controllerManagerKubeconfig}`)).filter(
    (p) => p.cmdline.includes('kube-controller-manager'),
  );
  const args = procs[0]?.cmdline.split(' ') ?? [];
  const flag = (name: string): number | undefined => {
    const a = args.find((x) => x.startsWith(`--${name}=`));
    return a === undefined ? undefined : parseGoDuration(a.slice(name.length + 3));
  };
  const grace = flag('node-monitor-grace-period');
  const period = flag('node-monitor-period');
  const source =
    procs.length === 0
      ? 'controller-manager process not found; 1.20 defaults'
      : `controller-manager pid ${procs[0]?.pid}: ` +
        `${grace === undefined ? 'no --node-monitor-grace-period (default 40s)' : '--node-monitor-grace-period set'}, ` +
        `${period === undefined ? 'no --node-monitor-period (default 5s)' : '--node-monitor-period set'}`;
  return { gracePeriodMs: grace ?? 40_000, periodMs: period ?? 5_000, source };
}

/**
 * A Deployment of `replicas` pods without nodeName, restricted to the netns nodes and spread over
 * them by hostname with maxSkew 1 (DoNotSchedule): the scheduler must place them evenly.
 */
export async function createSpreadDeployment(api: ApiClient, replicas: number): Promise<void> {
  const labels = { app: SPREAD_APP };
  await api.request({
    method: 'POST',
    path: DEPLOYMENTS,
    body: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: SPREAD_APP, namespace: SPREAD_NAMESPACE, labels },
      spec: {
        replicas,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            nodeSelector: { [NETNS_NODE_LABEL]: 'true' },
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: 'kubernetes.io/hostname',
                whenUnsatisfiable: 'DoNotSchedule',
                labelSelector: { matchLabels: labels },
              },
            ],
            terminationGracePeriodSeconds: 2,
            containers: [
              {
                name: 'main',
                image: BUSYBOX_IMAGE,
                command: ['sh', '-c', "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"],
              },
            ],
          },
        },
      },
    },
  });
}

export async function spreadPods(api: ApiClient): Promise<Pod[]> {
  const list = await api.request<PodList>({
    method: 'GET',
    path: PODS,
    query: { labelSelector: `app=${SPREAD_APP}` },
  });
  return list.items;
}

export function podReady(p: Pod): boolean {
  return p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

export function restarts(p: Pod): number {
  return (p.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0);
}

/** Deletes the Deployment (its ReplicaSet and pods follow through the garbage collector). */
export async function deleteSpreadDeployment(api: ApiClient): Promise<void> {
  await orUndefined(
    api.request({
      method: 'DELETE',
      path: `${DEPLOYMENTS}/${SPREAD_APP}`,
      body: { propagationPolicy: 'Foreground' },
    }),
  );
}

/** Force-deletes (grace 0) every pod of the Deployment and every pod bound to one of `nodes`. */
export async function forceDeletePods(api: ApiClient, nodes: readonly string[]): Promise<number> {
  const victims = new Map<string, Pod>();
  for (const p of await spreadPods(api)) victims.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
  for (const node of nodes) {
    const list = await api.request<PodList>({
      method: 'GET',
      path: '/api/v1/pods',
      query: { fieldSelector: `spec.nodeName=${node}` },
    });
    for (const p of list.items) victims.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
  }
  for (const p of victims.values()) {
    await orUndefined(
      api.request({
        method: 'DELETE',
        path: `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}`,
        body: { gracePeriodSeconds: 0 },
      }),
    );
  }
  return victims.size;
}

/** Deletes the Node objects and their Leases. */
export async function deleteNodes(api: ApiClient, nodes: readonly string[]): Promise<void> {
  for (const node of nodes) {
    await orUndefined(api.request({ method: 'DELETE', path: `/api/v1/nodes/${node}` }));
    await orUndefined(api.request({ method: 'DELETE', path: `${LEASES}/${node}` }));
  }
}

/** Nodes in the API whose name starts with `prefix`. */
export async function nodesWithPrefix(api: ApiClient, prefix: string): Promise<string[]> {
  const list = await api.request<{ items: Node[] }>({ method: 'GET', path: '/api/v1/nodes' });
  return list.items.map((n) => n.metadata.name ?? '').filter((n) => n.startsWith(prefix));
}
