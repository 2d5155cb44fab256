/**
 * API outage (issue 13): a tskubelet node with 50 pods (API pods and static pods) loses its API
 * server — the fault proxy refuses its connections — for 2 minutes (quick mode: 50 s) while pods
 * are deleted and created through the real API server. What must hold:
 *  - the kubelet keeps running and keeps its pods: no container of a static pod or of a pod still
 *    wanted is restarted (CRI container ids and restart counts before and after); a crash-looping
 *    static pod keeps being restarted locally meanwhile (how often depends on where its back-off
 *    stands, so it is a figure) and its mirror pod shows the runtime's restart count afterwards;
 *  - after reconnection the deleted pods are stopped and gone, the new ones Running, and every
 *    pod's status in the API converged within 15 s;
 *  - the watches resume from their resourceVersion: at most one LIST per reflector afterwards;
 *  - the control plane sees the node NotReady only as long as the outage warrants (the bed's
 *    controller-manager runs with upstream's node-monitor-grace-period 40 s and node-monitor-period
 *    5 s) and Ready again soon after;
 *  - memory stays bounded while events cannot be posted (the recorder's queue holds 1000 and
 *    drops the rest; a failed post is not retried).
 * Also measured on the fresh node: the time from the Node's creation to its Lease's.
 *
 * Quick mode's outage is 50 s, not 30–45 s: the node controller marks a node NotReady once no
 * heartbeat came for 40 s, checking every 5 s, and the last heartbeat before the outage may be
 * up to one lease renew interval (10 s + 4 % jitter) old; only an outage longer than 45 s is sure
 * to make the node NotReady (and its pods not Ready), which is the recovery worth testing.
 */
import { sleep } from '../../../src/util/abort.ts';
import type { Pod } from '../../../src/api/types.ts';
import type { Node } from '../../../src/node/types.ts';
import { atMost, check, countIs, round, type Check, type ScenarioResult } from '../report.ts';
import type { Scenario, ScenarioContext } from '../scenario.ts';
import {
  containersIn,
  newestByName,
  podConverged,
  podsOnNode,
  podsPath,
  readyStatus,
  runningByName,
  sleeperPod,
  startProxiedNode,
  timeUntil,
  type ProxiedNode,
} from '../lib/proxied-node.ts';
import { MiB, startSampler, type ProcessSampler } from '../lib/process-sampler.ts';

const NODE = 'rel-api-outage';
const NS = 'rel-api-outage';
const CRASHER = 'static-crasher';
const STATIC = ['static-0', 'static-1', 'static-2'];
/** What the bed's controller-manager uses (its defaults, as upstream's): see the file comment. */
const NODE_MONITOR_GRACE_MS = 40_000;
const NODE_MONITOR_PERIOD_MS = 5_000;
const LEASE_RENEW_MAX_MS = 10_400;
/** src/api/event-recorder.ts QUEUE_CAPACITY. */
const EVENT_QUEUE_CAPACITY = 1000;

const CONFIG = {
  quick: { outageMs: 50_000, apiPods: 46, deleted: 5, created: 5 },
  full: { outageMs: 120_000, apiPods: 46, deleted: 10, created: 10 },
};

interface Readiness {
  at: number;
  status: string;
}

/** Polls the Node's Ready condition every second until stopped. */
function watchReadiness(node: ProxiedNode, signal: AbortSignal): { log: Readiness[]; stop: () => void } {
  const log: Readiness[] = [];
  let stopped = false;
  void (async () => {
    while (!stopped && !signal.aborted) {
      const n = await node.admin
        .request<Node>({ method: 'GET', path: `/api/v1/nodes/${node.node}` })
        .catch(() => undefined);
      const status = readyStatus(n);
      if (log.at(-1)?.status !== status) log.push({ at: Date.now(), status });
      await sleep(1_000, signal).catch(() => undefined);
    }
  })();
  return { log, stop: () => (stopped = true) };
}

function staticPod(name: string, command?: string[]): Pod {
  const p = sleeperPod(name, NS, undefined, command ? { command } : {});
  p.spec.restartPolicy = 'Always';
  return p;
}

async function createPod(node: ProxiedNode, name: string): Promise<void> {
  await node.admin.request({ method: 'POST', path: podsPath(NS), body: sleeperPod(name, NS, NODE) });
}

/** One outage round; returns its checks (suffixed with the round when there are several). */
async function outageRound(
  node: ProxiedNode,
  sampler: ProcessSampler,
  cfg: (typeof CONFIG)['quick'],
  rep: number,
  ctx: ScenarioContext,
): Promise<{ checks: Check[]; notes: string[] }> {
  const { admin, proxy, env, kubelet } = node;
  const sfx = ctx.reps > 1 ? ` (round ${rep + 1})` : '';
  const checks: Check[] = [];
  const notes: string[] = [];
  const apiBefore = (await podsOnNode(admin, NODE)).filter(
    (p) => !p.metadata.annotations?.['kubernetes.io/config.mirror'],
  );
  const victims = apiBefore.slice(0, cfg.deleted).map((p) => p.metadata.name ?? '');
  const newcomers = Array.from({ length: cfg.created }, (_, i) => `new-${rep}-${i}`);
  const beforeAll = await containersIn(env, NS);
  const before = runningByName(beforeAll);
  // Static pods run as `<name>-<node>` (their full name carries the node's, as upstream).
  const crasherKey = `${CRASHER}-${NODE}/main`;
  const crasherRestartsBefore = newestByName(beforeAll).get(crasherKey)?.restartCount ?? 0;
  const readiness = watchReadiness(node, ctx.signal);
  const rss0 = (await sampler.now()).rssBytes;

  const tOut = Date.now();
  await proxy.setMode({ kind: 'refuse' });
  for (const name of victims) await admin.request({ method: 'DELETE', path: `${podsPath(NS)}/${name}` });
  for (const name of newcomers) await createPod(node, name);
  await sleep(Math.max(0, tOut + cfg.outageMs - Date.now()), ctx.signal);
  const alive = kubelet.child.exitCode === null && kubelet.child.signalCode === null;
  const rssPeak = sampler.maxRss(tOut, Date.now());
  const crasherRestartsAtEnd =
    newestByName(await containersIn(env, NS)).get(crasherKey)?.restartCount ?? crasherRestartsBefore;
  const tBack = Date.now();
  await proxy.setMode({ kind: 'pass' });

  // Converged: the deleted pods gone, the new ones and every other pod Running and Ready.
  let last: Pod[] = [];
  const convergedMs = await timeUntil(
    async () => {
      last = await podsOnNode(admin, NODE);
      const names = new Set(last.map((p) => p.metadata.name));
      if (victims.some((v) => names.has(v))) return false;
      if (newcomers.some((n) => !names.has(n))) return false;
      return last.filter((p) => !p.metadata.name?.startsWith(CRASHER)).every(podConverged);
    },
    120_000,
    ctx.signal,
  );
  // Let the dust settle before counting what reconnection cost (a relist storm would show here).
  await sleep(Math.max(0, tBack + 30_000 - Date.now()), ctx.signal);
  readiness.stop();
  const after = await containersIn(env, NS);
  const afterRunning = runningByName(after);

  checks.push(
    check(`kubelet alive through the outage${sfx}`, 'running', alive ? 'running' : 'exited', alive),
  );
  const changed = (names: string[]) =>
    names.filter((n) => {
      const b = before.get(`${n}/main`);
      const a = afterRunning.get(`${n}/main`);
      return !b || !a || a.id !== b.id || a.restartCount !== b.restartCount;
    });
  const staticChanged = changed(STATIC.map((n) => `${n}-${NODE}`));
  checks.push(
    countIs(
      `static pods whose container was restarted or replaced (of ${STATIC.length})${sfx}`,
      staticChanged.length,
    ),
  );
  const kept = apiBefore.map((p) => p.metadata.name ?? '').filter((n) => !victims.includes(n));
  const keptChanged = changed(kept);
  checks.push(
    countIs(
      `API pods kept whose container was restarted or replaced (of ${kept.length})${sfx}`,
      keptChanged.length,
    ),
  );
  // The crash-looping static pod: its mirror pod must show what the runtime has done meanwhile.
  let crasherSeen = '';
  const crasherAgreesMs = await timeUntil(
    async () => {
      const runtime = newestByName(await containersIn(env, NS)).get(crasherKey)?.restartCount;
      const mirror = (await admin.request<Pod>({ method: 'GET', path: `${podsPath(NS)}/${CRASHER}-${NODE}` }))
        .status?.containerStatuses?.[0]?.restartCount;
      crasherSeen = `API ${mirror ?? 'none'}, runtime ${runtime ?? 'none'}`;
      return runtime !== undefined && mirror === runtime;
    },
    15_000,
    ctx.signal,
  );
  checks.push(
    check(
      `crash-looping static pod: restart count in the API matches the runtime's after reconnection${sfx}`,
      'equal within 15 s',
      crasherSeen,
      crasherAgreesMs !== undefined,
    ),
  );
  const victimsRunning = after.filter((c) => c.running && victims.includes(c.pod)).length;
  checks.push(countIs(`containers of pods deleted during the outage still running${sfx}`, victimsRunning));
  checks.push(
    convergedMs === undefined
      ? check(`pods converged in the API after reconnection${sfx}`, '≤ 15 s', 'not within 120 s', false)
      : atMost(`pods converged in the API after reconnection${sfx}`, convergedMs / 1000, 15, 's'),
  );
  if (convergedMs === undefined) {
    const stuck = last
      .filter((p) => !podConverged(p))
      .slice(0, 5)
      .map(
        (p) =>
          `${p.metadata.name}: ${p.status?.phase} ready=${p.status?.conditions?.find((c) => c.type === 'Ready')?.status}`,
      );
    notes.push(`not converged${sfx}: ${stuck.join('; ')}`);
  }

  // Watches resume; at most one relist per reflector.
  const window = proxy.requests(tBack, tBack + 30_000);
  const perReflector = new Map<string, { lists: number; watches: number }>();
  for (const r of window) {
    if (r.verb !== 'LIST' && r.verb !== 'WATCH') continue;
    const key = `${r.resource}${r.selector ? ` ${r.selector}` : ''}`;
    const e = perReflector.get(key) ?? { lists: 0, watches: 0 };
    if (r.verb === 'LIST') e.lists++;
    else e.watches++;
    perReflector.set(key, e);
  }
  const maxLists = Math.max(0, ...[...perReflector.values()].map((e) => e.lists));
  checks.push(
    atMost(
      `LISTs per reflector in the 30 s after reconnection (${perReflector.size} reflectors)${sfx}`,
      maxLists,
      1,
    ),
  );
  const podWatch = window.find((r) => r.verb === 'WATCH' && r.resource === 'pods');
  const resumed =
    podWatch !== undefined && podWatch.resourceVersion !== '' && podWatch.resourceVersion !== '0';
  checks.push(
    check(
      `pod watch resumed from its resourceVersion${sfx}`,
      'WATCH pods?resourceVersion=<last seen>',
      podWatch ? `resourceVersion=${podWatch.resourceVersion || '(none)'}` : 'no pod watch',
      resumed,
    ),
  );
  const firstOf = (verb: string, resource: string) => {
    const r = window.find((x) => x.verb === verb && x.resource === resource);
    return r ? `${round((r.at - tBack) / 1000)} s` : 'none';
  };
  notes.push(
    `after reconnection${sfx}: first WATCH pods at ${firstOf('WATCH', 'pods')}, first pod status ` +
      `PATCH at ${firstOf('PATCH', 'pods/status')}, first Lease UPDATE at ${firstOf('UPDATE', 'leases')}, ` +
      `pods converged at ${convergedMs === undefined ? 'never' : `${round(convergedMs / 1000)} s`}`,
  );
  notes.push(
    `requests in the 30 s after reconnection${sfx}: ` +
      Object.entries(proxy.counts(tBack, tBack + 30_000))
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${k} ${n}`)
        .join(', '),
  );

  // The node in the control plane's view.
  const firstNotReady = readiness.log.find((r) => r.at >= tOut && r.status !== 'True');
  const readyAfter =
    firstNotReady && readiness.log.find((r) => r.at > firstNotReady.at && r.status === 'True');
  const minNotReadyMs = NODE_MONITOR_GRACE_MS - LEASE_RENEW_MAX_MS - 1_000;
  const mustTurn = cfg.outageMs > NODE_MONITOR_GRACE_MS + NODE_MONITOR_PERIOD_MS;
  checks.push(
    check(
      `node NotReady no sooner than grace − renew interval after the outage began${sfx}`,
      `${mustTurn ? 'NotReady, ' : ''}≥ ${minNotReadyMs / 1000} s`,
      firstNotReady
        ? `${firstNotReady.status} after ${round((firstNotReady.at - tOut) / 1000)} s`
        : 'stayed Ready',
      firstNotReady ? firstNotReady.at - tOut >= minNotReadyMs : !mustTurn,
    ),
  );
  const readyAgain = readiness.log.find((r) => r.at >= tBack && r.status === 'True');
  const readyAtEnd = readiness.log.at(-1)?.status === 'True';
  checks.push(
    !readyAtEnd
      ? check(`node Ready again after reconnection${sfx}`, '≤ 25 s', 'not within 30 s', false)
      : atMost(
          `node Ready again after reconnection${sfx}`,
          readyAgain ? (readyAgain.at - tBack) / 1000 : 0,
          25,
          's',
        ),
  );
  if (firstNotReady) {
    notes.push(
      `node not Ready for ${round(((readyAfter?.at ?? Date.now()) - firstNotReady.at) / 1000)} s${sfx} ` +
        `(outage ${cfg.outageMs / 1000} s; the control plane's transitions: ` +
        readiness.log.map((r) => `${r.status} at ${round((r.at - tOut) / 1000)} s`).join(', ') +
        ')',
    );
  }

  // Memory and events while nothing could be posted.
  checks.push(atMost(`kubelet RSS growth during the outage${sfx}`, (rssPeak - rss0) / MiB, 32, 'MiB'));
  const eventPosts = proxy
    .requests(tBack, tBack + 30_000)
    .filter((r) => r.verb === 'CREATE' && r.resource === 'events').length;
  checks.push(
    atMost(
      `events posted in the 30 s after reconnection (queue bound)${sfx}`,
      eventPosts,
      EVENT_QUEUE_CAPACITY,
    ),
  );
  notes.push(
    `RSS ${round(rss0 / MiB)} MiB at the outage's start, peak ${round(rssPeak / MiB)} MiB during it${sfx}; ` +
      `crash-looping static pod restarted ${crasherRestartsAtEnd - crasherRestartsBefore} times during the outage`,
  );
  return { checks, notes };
}

export const apiOutage: Scenario = {
  id: 'api-outage',
  fault:
    'API server unreachable for 2 min (quick: 50 s) — the proxy refuses the kubelet — while 50 pods run and pods are deleted and created',
  reps: { quick: 1, full: 2 },
  cluster: true,
  async run(ctx) {
    const started = Date.now();
    const cfg = CONFIG[ctx.mode];
    const checks: Check[] = [];
    const notes: string[] = [];
    const node = await startProxiedNode({
      node: NODE,
      namespace: NS,
      staticPods: [...STATIC.map((n) => staticPod(n)), staticPod(CRASHER, ['sh', '-c', 'sleep 30; exit 1'])],
      logger: ctx.logger,
      signal: ctx.signal,
    });
    const sampler = startSampler(node.pid);
    try {
      const leaseLagMs = node.leaseSeenAt - node.nodeSeenAt;
      checks.push(atMost('Lease created after the Node (fresh registration)', leaseLagMs / 1000, 2, 's'));
      for (let i = 0; i < cfg.apiPods; i++) await createPod(node, `pod-${i}`);
      const total = cfg.apiPods + STATIC.length + 1;
      const startMs = await timeUntil(
        async () => {
          const pods = await podsOnNode(node.admin, NODE);
          return (
            pods.length === total &&
            pods.filter((p) => !p.metadata.name?.startsWith(CRASHER)).every(podConverged)
          );
        },
        240_000,
        ctx.signal,
        1_000,
      );
      if (startMs === undefined)
        throw new Error(`${total} pods not Running within 240 s; see ${node.kubelet.logFile}`);
      notes.push(
        `${total} pods (${STATIC.length + 1} static) Running ${round(startMs / 1000)} s after creation`,
      );
      notes.push(
        `the bed's controller-manager runs with the 1.20 defaults (no flag given): node-monitor-grace-period ` +
          `${NODE_MONITOR_GRACE_MS / 1000} s, node-monitor-period ${NODE_MONITOR_PERIOD_MS / 1000} s, ` +
          `pod-eviction-timeout 5 min (pods tolerate unreachable/not-ready for 300 s): a ` +
          `${cfg.outageMs / 1000} s outage evicts nothing`,
      );
      for (let rep = 0; rep < ctx.reps; rep++) {
        const r = await outageRound(node, sampler, cfg, rep, ctx);
        checks.push(...r.checks);
        notes.push(...r.notes);
      }
    } finally {
      sampler.stop();
      await node.close();
    }
    return {
      id: apiOutage.id,
      fault: apiOutage.fault,
      repetitions: ctx.reps,
      checks,
      notes,
      durationMs: Date.now() - started,
    } satisfies ScenarioResult;
  },
};
