/**
 * Multi-node (issue 13): three tskubelet nodes on this machine, each in its own network namespace
 * with its own containerd and CNI range, joined to the cluster bed's one control plane
 * (test/reliability/lib/netns-*.ts). The scheduler spreads a Deployment over them; each node holds
 * its Lease; then node 2 is cut off from the API server until the control plane marks it NotReady
 * (and taints it unreachable), and healed: its pods must keep running locally throughout, the
 * others stay Ready, and it must come back Ready with its pods' statuses converged and no container
 * restarted. Every namespace, link, process, cgroup, mount and directory is removed afterwards (also
 * after a failure, and at the start when an earlier run died midway).
 *
 * Partitions (PLAN, one per repetition): a silent black hole (iptables DROP of the API server's
 * address inside the node's namespace) and the host end of its veth set down; in full mode both
 * again held 60 s past NotReady.
 *
 * Timing: NotReady comes from kube-controller-manager's node-monitor-grace-period (read from its
 * command line; the bed sets none, so 1.20's 40 s) after the last Lease renewal it saw, checked every
 * node-monitor-period (5 s): every partition lasts at least about that long.
 */
import { join } from 'node:path';
import { createApiClient } from '../../../src/api/client.ts';
import type { ApiClient } from '../../../src/api/client-types.ts';
import { describeError } from '../../../src/util/errors.ts';
import { startCluster, type ClusterBed } from '../../harness/cluster/index.ts';
import { run as exec } from '../../harness/exec.ts';
import { check, countIs, round, type ScenarioResult } from '../report.ts';
import type { Scenario, ScenarioContext } from '../scenario.ts';
import { deleteSpreadDeployment, nodeMonitorSettings, restarts, spreadPods } from '../lib/netns-cluster.ts';
import { NETNS_DIRS, nodeContainers, setupNode, type NetnsNode } from '../lib/netns-node.ts';
import { allNetns, conflictingRoutes, type PartitionMode } from '../lib/netns-net.ts';
import { partitionCycle, type PartitionOutcome } from '../lib/netns-partition.ts';
import { leakChecks } from '../lib/netns-leaks.ts';
import {
  checkLeases,
  poll,
  removeEverything,
  spreadDeployment,
  waitNodesReady,
  type Body,
} from '../lib/netns-phases.ts';

const FAULT = 'one of three netns nodes cut off from the API server until NotReady, then healed';
const INDEXES = [1, 2, 3] as const;
const VICTIM = 2;
const REPLICAS = 6;
/**
 * One partition per repetition, in turn: a silent black hole (quick mode's one), the link down, then
 * both again held 60 s past NotReady, so the connections the partition froze outlast TCP's
 * retransmission back-off (full mode).
 */
const PLAN: readonly { mode: PartitionMode; holdMs: number }[] = [
  { mode: 'blackhole', holdMs: 0 },
  { mode: 'link-down', holdMs: 0 },
  { mode: 'blackhole', holdMs: 60_000 },
  { mode: 'link-down', holdMs: 60_000 },
];
/** The kubelet's Lease renew interval (upstream: a quarter of the 40 s lease) and its jitter. */
const RENEW_MS = 10_000 * 1.04;
/**
 * Heal → Ready: the kubelet's status loop runs every 10 s, and one request in flight at the heal
 * may have to reach its 10 s timeout first; +5 s margin.
 */
const READY_AFTER_HEAL_MAX_S = 25;
/**
 * Heal → Lease renewed: after failures the lease loop re-reads the lease with a back-off doubling
 * to 7 s, and a request in flight at the heal may have to reach its 10 s timeout; +3 s margin.
 */
const LEASE_AFTER_HEAL_MAX_S = 20;
/**
 * Heal → its pods Running + Ready in the API: the controller's Ready=False reaches the kubelet
 * through its pod watch, which failed during the partition (every connection is closed on repeated
 * heartbeat failures) and is retried with the reflector's back-off, at most 30 s ×1.5 jitter = 45 s;
 * then the status syncer's 10 s pass writes Ready back; +5 s margin.
 */
const CONVERGE_MAX_S = 60;
const REPO = join(import.meta.dirname, '..', '..', '..');
const s = (ms: number) => round(ms / 1000);

function partitionChecks(
  outs: PartitionOutcome[],
  b: Body,
  lo: number,
  hi: number,
  grace: string,
  period: string,
) {
  const list = (f: (o: PartitionOutcome) => string) =>
    outs.map((o) => `${o.mode}${o.holdMs > 0 ? ` +${s(o.holdMs)} s` : ''}: ${f(o)}`).join('; ');
  const n = outs.length;
  b.checks.push(
    check(
      'time from the cut to NotReady in the control plane',
      `${round(lo)}–${round(hi)} s (grace ${grace}, period ${period}, lease every 10 s)`,
      list(
        (o) =>
          `${s(o.notReadyMs)} s (${o.notReadyStatus}; transition at ${o.notReadyTransitionMs === undefined ? '?' : s(o.notReadyTransitionMs)} s)`,
      ),
      outs.every((o) => o.notReadyMs >= lo * 1000 && o.notReadyMs <= hi * 1000),
    ),
  );
  b.checks.push(
    check(
      "partitioned node's pods marked not ready by the control plane",
      'all of its pods, each partition',
      list((o) => `${o.podsMarkedNotReady}/${o.podsOnNode}`),
      outs.every((o) => o.podsMarkedNotReady === o.podsOnNode && o.podsOnNode > 0),
    ),
  );
  b.checks.push(
    check(
      `the cut-off node tainted ${'node.kubernetes.io/unreachable'} by the control plane before the heal`,
      'NoExecute, NoSchedule',
      list((o) => o.taintsAtHeal.join(', ') || 'none'),
      outs.every((o) => o.taintsAtHeal.join() === 'NoExecute,NoSchedule'),
    ),
  );
  b.checks.push(
    check(
      'its containers keep running locally while cut off (CRI: same ids, running, same attempt)',
      'no change',
      list((o) =>
        o.changedDuring.length === 0 ? `${o.containersBefore.length} unchanged` : o.changedDuring.join(', '),
      ),
      outs.every((o) => o.changedDuring.length === 0 && o.containersBefore.length > 0),
    ),
  );
  b.checks.push(
    countIs(
      "partitioned node's kubelet exited while cut off",
      outs.filter((o) => !o.kubeletAliveDuring).length,
    ),
  );
  b.checks.push(
    check(
      'other nodes stay Ready through every partition and heal',
      '0 samples not Ready',
      `${outs.reduce((x, o) => x + o.othersNotReadySamples, 0)} of ${outs.reduce((x, o) => x + o.othersSamples, 0)}`,
      outs.every((o) => o.othersNotReadySamples === 0),
    ),
  );
  b.checks.push(
    check(
      'time from the heal to Ready',
      `≤ ${READY_AFTER_HEAL_MAX_S} s`,
      list((o) => `${s(o.readyMs)} s`),
      outs.every((o) => o.readyMs <= READY_AFTER_HEAL_MAX_S * 1000),
    ),
  );
  b.checks.push(
    check(
      "time from the heal to its Lease's first renewal (renewTime)",
      `≤ ${LEASE_AFTER_HEAL_MAX_S} s`,
      list((o) => (o.leaseRenewedMs === undefined ? 'none' : `${s(o.leaseRenewedMs)} s`)),
      outs.every((o) => o.leaseRenewedMs !== undefined && o.leaseRenewedMs <= LEASE_AFTER_HEAL_MAX_S * 1000),
    ),
  );
  b.checks.push(
    check(
      'time from the heal until its pods are Running + Ready again in the API',
      `≤ ${CONVERGE_MAX_S} s`,
      list((o) => `${s(o.convergeMs)} s`),
      outs.every((o) => o.convergeMs <= CONVERGE_MAX_S * 1000),
    ),
  );
  b.checks.push(
    check(
      'its containers after convergence (CRI: same ids, running, same attempt)',
      'no change',
      list((o) =>
        o.changedAfter.length === 0 ? `${o.containersBefore.length} unchanged` : o.changedAfter.join(', '),
      ),
      outs.every((o) => o.changedAfter.length === 0),
    ),
  );
  b.notes.push(
    `Partitions (${n}): NotReady after ${list((o) => `${s(o.notReadyMs)} s`)}; Ready after heal ${list((o) => `${s(o.readyMs)} s`)}; Lease renewed after heal ${list((o) => (o.leaseRenewedMs === undefined ? 'none' : `${s(o.leaseRenewedMs)} s`))}; pods converged after heal ${list((o) => `${s(o.convergeMs)} s`)}.`,
  );
}

async function runBody(
  ctx: ScenarioContext,
  cluster: ClusterBed,
  api: ApiClient,
  nodes: NetnsNode[],
  b: Body,
): Promise<void> {
  const { logger, signal } = ctx;
  const clash = await conflictingRoutes();
  if (clash.length > 0)
    throw new Error(`routes of the host overlap the scenario's ranges: ${clash.join('; ')}`);
  const monitor = await nodeMonitorSettings();
  const lo = (monitor.gracePeriodMs - RENEW_MS) / 1000 - 1;
  const hi = (monitor.gracePeriodMs + 2 * monitor.periodMs) / 1000 + 5;
  b.notes.push(
    `Node monitor: grace ${s(monitor.gracePeriodMs)} s, period ${s(monitor.periodMs)} s (${monitor.source}). ` +
      `The controller declares a node unknown at its first pass more than the grace after the last Lease renewal it saw; ` +
      `renewals come every 10 s, so NotReady is expected ${round(lo)}–${round(hi)} s after the cut: that is the floor of every partition.`,
  );
  // Build dist/ once: three kubelets starting together would each try.
  await exec('bash', [join(REPO, 'scripts', 'build.sh'), '--if-stale'], { timeoutMs: 300_000 });
  const started = Date.now();
  for (const i of INDEXES) nodes.push(await setupNode(i, { cluster, logger }));
  b.notes.push(
    `Setup of 3 namespaces, containerds (images imported) and kubelets: ${s(Date.now() - started)} s.`,
  );
  await waitNodesReady(api, nodes, started, b, signal);
  await checkLeases(api, nodes, b, signal);
  await spreadDeployment(api, nodes, REPLICAS, b, signal);

  const victim = nodes[VICTIM - 1];
  if (!victim) throw new Error('no victim node');
  const others = nodes.filter((n) => n !== victim);
  const outs: PartitionOutcome[] = [];
  for (let r = 0; r < ctx.reps; r++) {
    const plan = PLAN[r % PLAN.length] ?? { mode: 'blackhole', holdMs: 0 };
    outs.push(
      await partitionCycle(
        api,
        victim,
        others,
        plan.mode,
        {
          holdMs: plan.holdMs,
          notReadyTimeoutMs: (hi + 15) * 1000,
          readyTimeoutMs: 60_000,
          convergeTimeoutMs: 180_000,
          leaseTimeoutMs: 60_000,
        },
        signal,
      ),
    );
  }
  partitionChecks(outs, b, lo, hi, `${s(monitor.gracePeriodMs)} s`, `${s(monitor.periodMs)} s`);
  const pods = await spreadPods(api);
  b.checks.push(
    countIs(
      'container restarts (API restartCount, all spread pods) at the end',
      pods.reduce((x, p) => x + restarts(p), 0),
    ),
  );

  const t0 = Date.now();
  await deleteSpreadDeployment(api);
  const left = await poll('spread pods removed by their kubelets', 60_000, signal, async () => {
    const ps = await spreadPods(api);
    let running = 0;
    for (const n of nodes)
      running += (await nodeContainers(n.layout)).filter((c) => c.state === 'CONTAINER_RUNNING').length;
    return ps.length === 0 && running === 0 ? 0 : undefined;
  }).catch(() => -1);
  b.checks.push(
    check(
      'Deployment deleted: pods gone from the API and every node stopped its containers',
      '0 left within 60 s',
      left === 0 ? `0 left after ${s(Date.now() - t0)} s` : 'some left after 60 s',
      left === 0,
    ),
  );
}

async function runMultiNode(ctx: ScenarioContext): Promise<ScenarioResult> {
  const t0 = Date.now();
  const b: Body = { checks: [], notes: [] };
  const { logger } = ctx;
  const cluster = await startCluster({ logger, signal: ctx.signal });
  let api: ApiClient;
  try {
    api = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  const netnsBefore = new Set(await allNetns());
  const nodes: NetnsNode[] = [];
  try {
    const leftovers = await removeEverything(api, logger, INDEXES, [], false);
    if (leftovers.length > 0)
      throw new Error(`cannot remove an earlier run's leftovers: ${leftovers.join('; ')}`);
    await runBody(ctx, cluster, api, nodes, b);
  } catch (err) {
    b.checks.push(check('the scenario ran to its end', 'no error', describeError(err), false));
  } finally {
    const keepLogs = b.checks.some((c) => !c.ok);
    const errors = await removeEverything(api, logger, INDEXES, nodes, keepLogs);
    b.checks.push(
      check(
        'cleanup',
        'every step succeeded',
        errors.length === 0 ? 'yes' : errors.join('; '),
        errors.length === 0,
      ),
    );
    b.checks.push(...(await leakChecks(api, netnsBefore)));
    if (keepLogs) b.notes.push(`Logs of the failed run kept in ${NETNS_DIRS.log}.`);
    api.close();
    await cluster.stop().catch((err: unknown) => {
      b.checks.push(check('cluster bed stopped as found', 'no error', describeError(err), false));
    });
  }
  return {
    id: multiNode.id,
    fault: FAULT,
    repetitions: ctx.reps,
    checks: b.checks,
    notes: b.notes,
    durationMs: Date.now() - t0,
  };
}

export const multiNode: Scenario = {
  id: 'multi-node',
  fault: FAULT,
  reps: { quick: 1, full: 4 },
  cluster: true,
  run: runMultiNode,
};
