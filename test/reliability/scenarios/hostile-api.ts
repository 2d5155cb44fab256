/**
 * A hostile API server (issue 13): the fault proxy in front of a tskubelet node with pods cycles
 * through 429 Too Many Requests with Retry-After (run on, at most 46 s, until a reflector was
 * throttled twice), slow answers (every response 2 s late), watches cut every 3 s, 500s, 410 Gone
 * on every watch, and bodies cut in half — each for a bounded time (quick 10 s, full 60 s), with a pod created and one deleted through the real API server
 * meanwhile — then back to pass-through. For each mode:
 *  - the kubelet keeps running;
 *  - its CPU stays low: ≤ 15 % of one core averaged over the window. Idle with these pods it uses
 *    ~1–3 %; failing requests cost a TLS handshake and a log line each, so a kubelet that backs off
 *    stays within a few times its idle cost, while a retry loop without back-off saturates a core;
 *  - its memory does not grow: RSS at the window's end ≤ 32 MiB above its start (V8 heap growth
 *    from retried work, not a leak, fits well below);
 *  - its request rate stays bounded: ≤ 10 requests/s averaged over the window. What the kubelet
 *    sends by itself: a Lease renewal and a node status read every 10 s, up to 5 immediate retries
 *    of each per round, pod status patches re-sent every 10 s for pods the API has not
 *    acknowledged (12 here), reflectors retrying with a back-off from 0.8 s: a few requests per
 *    second at worst; a busy retry loop at the client's 50 QPS would be 5× the bound;
 *  - once the proxy passes everything again, the pod created meanwhile runs, the one deleted is
 *    gone, every pod is Running and Ready in the API and the node Ready: within 60 s (the
 *    reflectors' back-off may have grown to its 30 s cap, ×1.5 jitter, in the full mode's minute).
 * And across all modes: no container of a pod that was not deleted was restarted.
 */
import { sleep } from '../../../src/util/abort.ts';
import type { Pod } from '../../../src/api/types.ts';
import type { Lease, Node } from '../../../src/node/types.ts';
import { atMost, check, countIs, round, type Check, type ScenarioResult } from '../report.ts';
import type { Scenario } from '../scenario.ts';
import type { ProxiedRequest, ProxyMode } from '../lib/api-proxy.ts';
import {
  containersIn,
  podConverged,
  podsOnNode,
  podsPath,
  readyStatus,
  runningByName,
  sleeperPod,
  startProxiedNode,
  timeUntil,
} from '../lib/proxied-node.ts';
import { MiB, startSampler } from '../lib/process-sampler.ts';

const NODE = 'rel-api-hostile';
const NS = 'rel-api-hostile';
const STATIC = ['static-0', 'static-1'];
const CPU_MAX = 0.15;
const RSS_GROWTH_MAX_MIB = 32;
const RATE_MAX = 10;
const CONVERGE_MAX_S = 60;
const WINDOW_MS = { quick: 10_000, full: 60_000 };
const LEASE = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`;

/**
 * How long the 429 window may run past its end for a reflector to be throttled twice: the longest
 * back-off a reflector waits between two tries (its 30 s cap, ×1.5 jitter), and a second.
 */
const THROTTLED_TWICE_EXTRA_MS = 46_000;

// 429 first: a reflector's back-off is then at its floor (0.4–1.2 s for its first failure), so the
// Retry-After of 2 s is what its wait must honour; after the other modes its grown back-off may
// already exceed it.
const MODES: { name: string; mode: ProxyMode }[] = [
  { name: '429 with Retry-After: 2', mode: { kind: 'status', code: 429, retryAfterSeconds: 2 } },
  { name: 'every response 2 s late', mode: { kind: 'delay', ms: 2_000 } },
  { name: 'watches cut every 3 s', mode: { kind: 'drop-watches', afterMs: 3_000 } },
  { name: '500 on every request', mode: { kind: 'status', code: 500 } },
  { name: '410 Gone on every watch', mode: { kind: 'gone-watches' } },
  { name: 'bodies cut in half', mode: { kind: 'truncate' } },
];

/**
 * The shortest time between two throttled LIST/WATCH requests of one reflector (one resource and
 * selector), ms; undefined when no reflector was throttled twice. A reflector that honours
 * Retry-After never asks again sooner than it.
 */
export function shortestRetryGapMs(sent: readonly ProxiedRequest[]): number | undefined {
  const last = new Map<string, number>();
  let shortest: number | undefined;
  for (const r of sent) {
    if (!r.faulted || (r.verb !== 'LIST' && r.verb !== 'WATCH')) continue;
    const key = `${r.resource} ${r.selector ?? ''}`;
    const prev = last.get(key);
    if (prev !== undefined) shortest = Math.min(shortest ?? Infinity, r.at - prev);
    last.set(key, r.at);
  }
  return shortest;
}

export const hostileApi: Scenario = {
  id: 'hostile-api',
  fault:
    'API server answers slowly (2 s), cuts watches, answers 429 / 500 / 410 Gone, truncates bodies — each mode 10 s (full: 60 s)',
  reps: { quick: 1, full: 1 },
  cluster: true,
  async run(ctx) {
    const started = Date.now();
    const windowMs = WINDOW_MS[ctx.mode];
    // One pod deleted per mode and round, four that stay throughout.
    const apiPods = MODES.length * ctx.reps + 4;
    const checks: Check[] = [];
    const notes: string[] = [];
    const node = await startProxiedNode({
      node: NODE,
      namespace: NS,
      staticPods: STATIC.map((n) => sleeperPod(n, NS, undefined)),
      logger: ctx.logger,
      signal: ctx.signal,
    });
    const { admin, proxy, kubelet, env } = node;
    const sampler = startSampler(node.pid);
    const create = (name: string) =>
      admin.request({ method: 'POST', path: podsPath(NS), body: sleeperPod(name, NS, NODE) });
    const allConverged = async (gone: string[], present: string[]) => {
      const pods: Pod[] = await podsOnNode(admin, NODE);
      const names = new Set(pods.map((p) => p.metadata.name));
      return (
        gone.every((n) => !names.has(n)) && present.every((n) => names.has(n)) && pods.every(podConverged)
      );
    };
    try {
      for (let i = 0; i < apiPods; i++) await create(`pod-${i}`);
      const startMs = await timeUntil(() => allConverged([], []), 120_000, ctx.signal, 500);
      if (startMs === undefined) throw new Error(`pods not Running within 120 s; see ${kubelet.logFile}`);
      const before = runningByName(await containersIn(env, NS));
      const idle0 = await sampler.now();
      await sleep(10_000, ctx.signal);
      const idle1 = await sampler.now();
      const idleRate = proxy.requests(idle0.at, idle1.at).length / ((idle1.at - idle0.at) / 1000);
      notes.push(
        `${apiPods + STATIC.length} pods; idle before the faults: CPU ${round(100 * sampler.cpuShare(idle0, idle1))} % ` +
          `of a core, ${round(idleRate)} requests/s, RSS ${round(idle1.rssBytes / MiB)} MiB`,
      );
      const deleted: string[] = [];
      for (let rep = 0; rep < ctx.reps; rep++) {
        for (const [i, m] of MODES.entries()) {
          const sfx = ctx.reps > 1 ? ` (round ${rep + 1})` : '';
          const tag = `${m.name}${sfx}`;
          const victim = `pod-${rep * MODES.length + i}`;
          const newcomer = `new-${rep}-${i}`;
          const s0 = await sampler.now();
          await proxy.setMode(m.mode);
          await admin.request({ method: 'DELETE', path: `${podsPath(NS)}/${victim}` });
          deleted.push(victim);
          await create(newcomer);
          await sleep(Math.max(0, s0.at + windowMs - Date.now()), ctx.signal);
          const retryAfterSeconds = m.mode.kind === 'status' ? m.mode.retryAfterSeconds : undefined;
          // The wait between two throttled requests is only seen once a reflector was throttled
          // twice: the window runs on until one was (its back-off bounds how long that takes).
          const extendedMs =
            retryAfterSeconds !== undefined
              ? await timeUntil(
                  () => Promise.resolve(shortestRetryGapMs(proxy.requests(s0.at)) !== undefined),
                  THROTTLED_TWICE_EXTRA_MS,
                  ctx.signal,
                  250,
                )
              : 0;
          const s1 = await sampler.now();
          const alive = kubelet.child.exitCode === null && kubelet.child.signalCode === null;
          const sent = proxy.requests(s0.at, s1.at);
          const perSecond = new Map<number, number>();
          for (const r of sent)
            perSecond.set(Math.floor(r.at / 1000), (perSecond.get(Math.floor(r.at / 1000)) ?? 0) + 1);
          const tPass = Date.now();
          await proxy.setMode({ kind: 'pass' });
          const convergedMs = await timeUntil(
            async () =>
              (await allConverged(deleted, [newcomer])) &&
              readyStatus(await admin.request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` })) ===
                'True' &&
              Date.parse((await admin.request<Lease>({ method: 'GET', path: LEASE })).spec?.renewTime ?? '') >
                tPass,
            120_000,
            ctx.signal,
          );
          checks.push(check(`${tag}: kubelet alive`, 'running', alive ? 'running' : 'exited', alive));
          checks.push(
            atMost(`${tag}: kubelet CPU`, 100 * sampler.cpuShare(s0, s1), 100 * CPU_MAX, '% of a core'),
          );
          checks.push(
            atMost(`${tag}: RSS growth`, (s1.rssBytes - s0.rssBytes) / MiB, RSS_GROWTH_MAX_MIB, 'MiB'),
          );
          checks.push(
            atMost(`${tag}: requests to the API`, sent.length / ((s1.at - s0.at) / 1000), RATE_MAX, '/s'),
          );
          if (retryAfterSeconds !== undefined) {
            if (extendedMs === undefined || extendedMs > 0)
              notes.push(
                `${tag}: window run on ${extendedMs === undefined ? `${THROTTLED_TWICE_EXTRA_MS} ms (its bound)` : `${Math.round(extendedMs)} ms`} until a reflector was throttled twice`,
              );
            // Timestamps are taken as requests arrive at the proxy: allow 100 ms of scheduling.
            const gap = shortestRetryGapMs(sent);
            const want = retryAfterSeconds * 1000 - 100;
            checks.push(
              check(
                `${tag}: shortest wait of a reflector between two throttled requests`,
                `≥ ${want} ms`,
                gap === undefined ? 'none throttled twice' : `${Math.round(gap)} ms`,
                gap !== undefined && gap >= want,
              ),
            );
          }
          checks.push(
            convergedMs === undefined
              ? check(
                  `${tag}: converged after pass-through`,
                  `≤ ${CONVERGE_MAX_S} s`,
                  'not within 120 s',
                  false,
                )
              : atMost(`${tag}: converged after pass-through`, convergedMs / 1000, CONVERGE_MAX_S, 's'),
          );
          const top = Object.entries(proxy.counts(s0.at, s1.at))
            .sort((a, b) => b[1] - a[1])
            .slice(0, 6)
            .map(([k, n]) => `${k} ${n}`)
            .join(', ');
          notes.push(
            `${tag}: ${sent.length} requests in ${round((s1.at - s0.at) / 1000)} s (busiest second ` +
              `${Math.max(0, ...perSecond.values())}; ${sent.filter((r) => r.faulted).length} faulted): ${top}`,
          );
        }
      }
      const after = runningByName(await containersIn(env, NS));
      const kept = [...before.keys()].filter((k) => !deleted.includes(k.split('/')[0] ?? ''));
      const restarted = kept.filter((k) => after.get(k)?.id !== before.get(k)?.id);
      checks.push(
        countIs(`containers of pods not deleted that were restarted (of ${kept.length})`, restarted.length),
      );
      if (restarted.length > 0) notes.push(`restarted: ${restarted.join(', ')}`);
    } finally {
      sampler.stop();
      await node.close();
    }
    return {
      id: hostileApi.id,
      fault: hostileApi.fault,
      repetitions: ctx.reps,
      checks,
      notes,
      durationMs: Date.now() - started,
    } satisfies ScenarioResult;
  },
};
