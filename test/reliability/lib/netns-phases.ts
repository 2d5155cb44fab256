/**
 * The phases of the multi-node scenario before and after its partitions: the nodes coming up Ready,
 * their Leases, the Deployment the scheduler spreads over them, and the removal of everything the
 * scenario makes (also what a dead run left). Each phase records its checks with figures.
 */
import { rm } from 'node:fs/promises';
import type { ApiClient } from '../../../src/api/client-types.ts';
import { describeError } from '../../../src/util/errors.ts';
import type { Logger } from '../../../src/util/logger.ts';
import { check, round, type Check } from '../report.ts';
import { until } from '../../kit/poll.ts';
import {
  createSpreadDeployment,
  deleteNodes,
  deleteSpreadDeployment,
  forceDeletePods,
  getLease,
  getNode,
  podReady,
  readyStatus,
  spreadPods,
} from './netns-cluster.ts';
import { NETNS_DIRS, nodeContainers, nodeLayout, teardownNode, type NetnsNode } from './netns-node.ts';

/** What a scenario run records. */
export interface Body {
  checks: Check[];
  notes: string[];
}

const s = (ms: number) => round(ms / 1000);

export function poll<T>(
  what: string,
  timeoutMs: number,
  signal: AbortSignal,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  return until(what, probe, { timeoutMs, intervalMs: 500, signal });
}

/**
 * Removes every API object, node process, namespace, link, cgroup, mount and directory of nodes
 * `indexes`; returns the steps that failed (after trying every one).
 */
export async function removeEverything(
  api: ApiClient,
  logger: Logger,
  indexes: readonly number[],
  nodes: readonly NetnsNode[],
  keepLogs: boolean,
): Promise<string[]> {
  const errors: string[] = [];
  const names = indexes.map((i) => nodeLayout(i).name);
  const attempt = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (err) {
      errors.push(`${what}: ${describeError(err)}`);
    }
  };
  await attempt('delete Deployment', () => deleteSpreadDeployment(api));
  await attempt('force-delete pods', () => forceDeletePods(api, names));
  await Promise.all(
    indexes.map((i) => attempt(`tear down node ${i}`, () => teardownNode(i, logger, keepLogs))),
  );
  for (const n of nodes) await attempt(`stop forwarder ${n.forwarder.listen}`, () => n.forwarder.stop());
  await attempt('delete Nodes and Leases', () => deleteNodes(api, names));
  await attempt('remove directories', async () => {
    await rm(NETNS_DIRS.lib, { recursive: true, force: true });
    await rm(NETNS_DIRS.run, { recursive: true, force: true });
    if (!keepLogs) await rm(NETNS_DIRS.log, { recursive: true, force: true });
  });
  return errors;
}

export async function waitNodesReady(
  api: ApiClient,
  nodes: readonly NetnsNode[],
  started: number,
  b: Body,
  signal: AbortSignal,
) {
  const readyAt = new Map<string, number>();
  await poll('3 netns nodes Ready and untainted', 90_000, signal, async () => {
    for (const n of nodes) {
      if (readyAt.has(n.layout.name)) continue;
      const node = await getNode(api, n.layout.name);
      const tainted = (node?.spec?.taints ?? []).some((t) => t.key.startsWith('node.kubernetes.io/'));
      if (readyStatus(node) === 'True' && !tainted) readyAt.set(n.layout.name, Date.now() - started);
    }
    return readyAt.size === nodes.length ? true : undefined;
  });
  b.checks.push(
    check(
      'netns nodes registered and Ready (no node.kubernetes.io taint)',
      `${nodes.length}/${nodes.length} within 90 s`,
      `${readyAt.size}/${nodes.length} (${[...readyAt.values()].map(s).join(', ')} s after the first start)`,
      readyAt.size === nodes.length,
    ),
  );
  const addrs = [];
  for (const n of nodes) {
    const node = await getNode(api, n.layout.name);
    addrs.push(node?.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? 'none');
  }
  const want = nodes.map((n) => n.layout.link.nodeAddr);
  b.checks.push(
    check(
      'each node reports its namespace address as InternalIP',
      want.join(', '),
      addrs.join(', '),
      addrs.join() === want.join(),
    ),
  );
}

export async function checkLeases(api: ApiClient, nodes: readonly NetnsNode[], b: Body, signal: AbortSignal) {
  const renewOf = async (name: string) => Date.parse((await getLease(api, name))?.spec?.renewTime ?? '');
  // The first renewTime seen per node (a lease may not exist yet at the first look), then a later one.
  const first = new Map<string, number>();
  const intervals = new Map<string, number>();
  await poll('every Lease renewed', 30_000, signal, async () => {
    for (const n of nodes) {
      const name = n.layout.name;
      const r = await renewOf(name);
      if (!Number.isFinite(r) || intervals.has(name)) continue;
      const r0 = first.get(name);
      if (r0 === undefined) first.set(name, r);
      else if (r > r0) intervals.set(name, r - r0);
    }
    return intervals.size === nodes.length ? true : undefined;
  });
  const holders = [];
  for (const n of nodes) holders.push((await getLease(api, n.layout.name))?.spec?.holderIdentity ?? 'none');
  b.checks.push(
    check(
      "each node's Lease renewed (renewTime advancing, holder = node)",
      `${nodes.length}/${nodes.length}, every 9–12 s (10 s + 4 % jitter + latency)`,
      `${intervals.size}/${nodes.length}; intervals ${[...intervals.values()].map(s).join(', ')} s; holders ${holders.join(', ')}`,
      intervals.size === nodes.length &&
        [...intervals.values()].every((ms) => ms >= 9_000 && ms <= 12_000) &&
        holders.join() === nodes.map((n) => n.layout.name).join(),
    ),
  );
}

export async function spreadDeployment(
  api: ApiClient,
  nodes: readonly NetnsNode[],
  replicas: number,
  b: Body,
  signal: AbortSignal,
) {
  const t0 = Date.now();
  await createSpreadDeployment(api, replicas);
  const pods = await poll(`${replicas} spread pods Running and Ready`, 120_000, signal, async () => {
    const ps = await spreadPods(api);
    const ok = ps.filter((p) => p.status?.phase === 'Running' && podReady(p));
    return ok.length === replicas && ps.length === replicas ? ps : undefined;
  });
  b.checks.push(
    check(
      'Deployment pods (no nodeName) scheduled and Running + Ready',
      `${replicas} within 120 s`,
      `${pods.length} after ${s(Date.now() - t0)} s`,
      pods.length === replicas,
    ),
  );
  const perNode = nodes.map((n) => pods.filter((p) => p.spec.nodeName === n.layout.name));
  const even = replicas / nodes.length;
  b.checks.push(
    check(
      'pods per node (spread by the scheduler, maxSkew 1)',
      nodes.map(() => even).join(' / '),
      perNode.map((p) => p.length).join(' / '),
      perNode.every((p) => p.length === even),
    ),
  );
  const inRange = pods.filter((p) => {
    const i = nodes.findIndex((n) => n.layout.name === p.spec.nodeName);
    const prefix = nodes[i]?.layout.link.podSubnet.replace(/0\/24$/, '');
    return prefix !== undefined && (p.status?.podIP ?? '').startsWith(prefix);
  });
  b.checks.push(
    check(
      "pod IPs in their node's own CNI range (10.214.<i>.0/24)",
      `${replicas}/${replicas}`,
      `${inRange.length}/${replicas}`,
      inRange.length === replicas,
    ),
  );
  const cri = [];
  for (const n of nodes)
    cri.push((await nodeContainers(n.layout)).filter((c) => c.state === 'CONTAINER_RUNNING').length);
  b.checks.push(
    check(
      "running containers in each node's own containerd",
      perNode.map((p) => p.length).join(' / '),
      cri.join(' / '),
      cri.every((c, i) => c === perNode[i]?.length),
    ),
  );
  b.notes.push(`Pods per node: ${nodes.map((n, i) => `${n.layout.name} ${perNode[i]?.length}`).join(', ')}.`);
}
