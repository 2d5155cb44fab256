/**
 * One partition of a netns node and its heal, measured from outside: the control plane's view of
 * every node (sampled every 500 ms), the partitioned node's containers through its own containerd,
 * and its pods' statuses in the API until they converge after the heal.
 */
import type { ApiClient } from '../../../src/api/client-types.ts';
import type { Pod } from '../../../src/api/types.ts';
import { sleep } from '../../../src/util/abort.ts';
import { KubeletError } from '../../../src/util/errors.ts';
import {
  getLease,
  getNode,
  podReady,
  readyCondition,
  readyStatus,
  restarts,
  spreadPods,
} from './netns-cluster.ts';
import { nodeContainers, type CriContainerSummary, type NetnsNode } from './netns-node.ts';
import { alive } from './netns-host.ts';
import type { PartitionMode } from './netns-net.ts';

const SAMPLE_MS = 500;
const UNREACHABLE = 'node.kubernetes.io/unreachable';

export interface PartitionBounds {
  /** How long to keep the partition once the node is NotReady and its pods marked not ready. */
  holdMs: number;
  /** How long to wait for NotReady before giving up. */
  notReadyTimeoutMs: number;
  readyTimeoutMs: number;
  convergeTimeoutMs: number;
  /** How long after the heal to wait for the Lease's first renewal. */
  leaseTimeoutMs: number;
}

export interface PartitionOutcome {
  mode: PartitionMode;
  holdMs: number;
  /** From the cut to the first sample showing the node's Ready condition not True. */
  notReadyMs: number;
  /** From the cut to the Ready condition's lastTransitionTime (the controller's own clock). */
  notReadyTransitionMs: number | undefined;
  notReadyStatus: string;
  /** Pods on the node the controller marked Ready=False while it was cut off (of `podsOnNode`). */
  podsMarkedNotReady: number;
  podsOnNode: number;
  /** Effects of the node's unreachable taints when it was healed. */
  taintsAtHeal: string[];
  /** Running containers of the node's containerd just before the cut. */
  containersBefore: CriContainerSummary[];
  /** Differences found in the node's containers at NotReady, and after convergence. */
  changedDuring: string[];
  changedAfter: string[];
  kubeletAliveDuring: boolean;
  /** From the heal to the first sample showing Ready=True. */
  readyMs: number;
  /** From the heal until all its pods are Running and Ready again in the API. */
  convergeMs: number;
  /** From the heal to the first renewTime after it (undefined: none within the bound). */
  leaseRenewedMs: number | undefined;
  /** Samples of the other nodes whose Ready was not True, during the whole cycle. */
  othersNotReadySamples: number;
  othersSamples: number;
  /** API restart counts of the node's pods after convergence. */
  restartsAfter: number;
}

/** Keys that must not change while a node is cut off: container id, attempt, and it must be running. */
export function containerChanges(before: CriContainerSummary[], now: CriContainerSummary[]): string[] {
  const out: string[] = [];
  const byId = new Map(now.map((c) => [c.id, c]));
  for (const b of before) {
    const c = byId.get(b.id);
    if (!c) out.push(`${b.name} ${b.id.slice(0, 12)} gone`);
    else if (c.state !== 'CONTAINER_RUNNING') out.push(`${b.name} ${b.id.slice(0, 12)} ${c.state}`);
    else if (c.attempt !== b.attempt) out.push(`${b.name} attempt ${b.attempt} → ${c.attempt}`);
  }
  const known = new Set(before.map((b) => b.id));
  for (const c of now) if (!known.has(c.id)) out.push(`new container ${c.name} ${c.id.slice(0, 12)}`);
  return out;
}

async function runningContainers(node: NetnsNode): Promise<CriContainerSummary[]> {
  return (await nodeContainers(node.layout)).filter((c) => c.state === 'CONTAINER_RUNNING');
}

/** Partitions `victim`, waits for NotReady, checks its containers, heals, waits for Ready and convergence. */
export async function partitionCycle(
  api: ApiClient,
  victim: NetnsNode,
  others: readonly NetnsNode[],
  mode: PartitionMode,
  bounds: PartitionBounds,
  signal: AbortSignal,
): Promise<PartitionOutcome> {
  const name = victim.layout.name;
  let othersNotReadySamples = 0;
  let othersSamples = 0;
  const sampleOthers = async () => {
    for (const o of others) {
      othersSamples++;
      if (readyStatus(await getNode(api, o.layout.name)) !== 'True') othersNotReadySamples++;
    }
  };
  const onNode = async (): Promise<Pod[]> => (await spreadPods(api)).filter((p) => p.spec.nodeName === name);

  const containersBefore = await runningContainers(victim);
  const podNames = new Set((await onNode()).map((p) => p.metadata.name));
  const cutAt = Date.now();
  await victim.partition(mode);

  let notReadyMs: number | undefined;
  let notReadyStatus = 'True';
  let notReadyTransitionMs: number | undefined;
  while (notReadyMs === undefined) {
    const node = await getNode(api, name);
    notReadyStatus = readyStatus(node);
    if (notReadyStatus !== 'True') {
      notReadyMs = Date.now() - cutAt;
      const t = Date.parse(readyCondition(node)?.lastTransitionTime ?? '');
      // lastTransitionTime has second precision.
      if (Number.isFinite(t)) notReadyTransitionMs = t - Math.floor(cutAt / 1000) * 1000;
      break;
    }
    if (Date.now() - cutAt > bounds.notReadyTimeoutMs) {
      throw new KubeletError(
        'DeadlineExceeded',
        `partition ${name}`,
        `still Ready ${bounds.notReadyTimeoutMs} ms after the cut`,
      );
    }
    await sampleOthers();
    await sleep(SAMPLE_MS, signal);
  }

  // The controller marks the node's pods not ready once it declares the node unknown.
  let podsMarkedNotReady = 0;
  const markDeadline = Date.now() + 15_000;
  for (;;) {
    const pods = await onNode();
    podsMarkedNotReady = pods.filter((p) => !podReady(p)).length;
    if (podsMarkedNotReady >= podNames.size || Date.now() > markDeadline) break;
    await sampleOthers();
    await sleep(SAMPLE_MS, signal);
  }
  // Both unreachable taints (the NoExecute one comes from the taint manager's queue, a little
  // later): the kubelet's first status write after the heal meets them.
  let taintsAtHeal: string[] = [];
  const taintDeadline = Date.now() + 30_000;
  for (;;) {
    taintsAtHeal = ((await getNode(api, name))?.spec?.taints ?? [])
      .filter((t) => t.key === UNREACHABLE)
      .map((t) => t.effect)
      .sort();
    if (taintsAtHeal.length >= 2 || Date.now() > taintDeadline) break;
    await sampleOthers();
    await sleep(SAMPLE_MS, signal);
  }
  // Held longer, the partition outlasts TCP's retransmission back-off on the connections it froze.
  const holdUntil = Date.now() + bounds.holdMs;
  while (Date.now() < holdUntil) {
    await sampleOthers();
    await sleep(SAMPLE_MS, signal);
  }
  const changedDuring = containerChanges(containersBefore, await runningContainers(victim));
  const kubeletAliveDuring = !victim.kubelet.exited() && alive(victim.kubelet.pid);

  const healAt = Date.now();
  // The first renewTime after the heal, sampled with everything else (a later read would only see
  // the latest renewal).
  let leaseRenewedMs: number | undefined;
  const sampleLease = async () => {
    if (leaseRenewedMs !== undefined) return;
    const renew = Date.parse((await getLease(api, name))?.spec?.renewTime ?? '');
    if (Number.isFinite(renew) && renew > healAt) leaseRenewedMs = renew - healAt;
  };
  await victim.heal(mode);
  let readyMs: number | undefined;
  while (readyMs === undefined) {
    if (readyStatus(await getNode(api, name)) === 'True') {
      readyMs = Date.now() - healAt;
      break;
    }
    if (Date.now() - healAt > bounds.readyTimeoutMs) {
      throw new KubeletError(
        'DeadlineExceeded',
        `heal ${name}`,
        `not Ready ${bounds.readyTimeoutMs} ms after the heal`,
      );
    }
    await sampleOthers();
    await sampleLease();
    await sleep(SAMPLE_MS, signal);
  }

  let convergeMs: number | undefined;
  let last: Pod[] = [];
  while (convergeMs === undefined) {
    last = await onNode();
    const settled =
      last.length === podNames.size &&
      last.every((p) => podNames.has(p.metadata.name) && p.status?.phase === 'Running' && podReady(p));
    if (settled) {
      convergeMs = Date.now() - healAt;
      break;
    }
    if (Date.now() - healAt > bounds.convergeTimeoutMs) {
      const seen = last.map(
        (p) => `${p.metadata.name}:${p.status?.phase}/${podReady(p) ? 'ready' : 'not ready'}`,
      );
      throw new KubeletError(
        'DeadlineExceeded',
        `pods of ${name} after the heal`,
        `not all Running and Ready ${bounds.convergeTimeoutMs} ms after the heal: ${seen.join(', ')}`,
      );
    }
    await sampleOthers();
    await sampleLease();
    await sleep(SAMPLE_MS, signal);
  }
  // The Lease comes back on its own schedule: after failures the lease loop backs off (≤ 7 s).
  await sampleLease();
  while (leaseRenewedMs === undefined && Date.now() - healAt < bounds.leaseTimeoutMs) {
    await sleep(SAMPLE_MS, signal);
    await sampleLease();
  }
  return {
    mode,
    holdMs: bounds.holdMs,
    notReadyMs,
    notReadyTransitionMs,
    notReadyStatus,
    podsMarkedNotReady,
    podsOnNode: podNames.size,
    taintsAtHeal,
    containersBefore,
    changedDuring,
    changedAfter: containerChanges(containersBefore, await runningContainers(victim)),
    kubeletAliveDuring,
    readyMs,
    convergeMs,
    leaseRenewedMs,
    othersNotReadySamples,
    othersSamples,
    restartsAfter: last.reduce((n, p) => n + restarts(p), 0),
  };
}
