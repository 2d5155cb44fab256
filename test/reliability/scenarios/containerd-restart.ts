/**
 * containerd killed (SIGKILL) and started again (issue 13), with the kubelet as a cluster node:
 * at steady state (20 pods; one pod's shim killed too while containerd is down, so that containerd
 * comes back without that sandbox) and while a batch of 10 pods is starting. Checks: the kubelet
 * keeps running, the node turns NotReady while the runtime is gone and Ready soon after it is
 * back, no pod lost, no running container restarted except the lost sandbox's, which is recreated,
 * no duplicate sandbox or container.
 */
import { readFile, readdir, unlink } from 'node:fs/promises';
import { sleep } from '../../../src/util/abort.ts';
import { BED_PATHS, startContainerd } from '../../harness/index.ts';
import { bedContainerdPid } from '../../harness/containerd.ts';
import { atMost, check, countIs, type Check, type ScenarioResult } from '../report.ts';
import type { Scenario, ScenarioContext } from '../scenario.ts';
import {
  census,
  duplicateContainers,
  duplicateSandboxes,
  restarted,
  type Census,
} from '../lib/cri-census.ts';
import { NS, boundPod, clusterNode, type ClusterNode } from '../lib/cluster-node.ts';
import { percentile, waitFor } from '../lib/wait.ts';

const NODE = 'rel-ctrd';
const PORT = 11263;
const STEADY = 20;
const BATCH = 10;
/** The node's runtime check runs every 5 s; the status push follows (upstream: NotReady within ~10 s). */
const NOT_READY_MAX_S = 30;
/** containerd back → Ready: the kubelet's reconnect back-off plus a status update. */
const READY_AGAIN_MAX_S = 30;
const DOWN_MS = 10_000;

const mine = (p: string) => p.startsWith(`${NS}/`) && p.includes('/ctrd-');

/** SIGKILLs the bed's containerd (its shims and containers live on). */
async function killContainerd(): Promise<void> {
  const pid = await bedContainerdPid();
  if (pid === undefined) throw new Error('the bed containerd is not running');
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      break; // gone
    }
    await sleep(50);
  }
  await unlink(BED_PATHS.pidFile).catch(() => undefined);
}

/** SIGKILLs the runc shim of a sandbox (containerd then finds the sandbox gone when it returns). */
async function killShim(sandboxId: string): Promise<number> {
  let killed = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes('containerd-shim') && cmd.split('\0').includes(sandboxId)) {
      process.kill(Number(pid), 'SIGKILL');
      killed++;
    }
  }
  return killed;
}

export const containerdRestart: Scenario = {
  id: 'containerd-restart',
  fault:
    'containerd SIGKILLed for 10 s and restarted, at steady state (20 pods, one sandbox lost) or mid-batch (10 pods starting)',
  reps: { quick: 2, full: 8 },
  cluster: true,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const t0 = Date.now();
    const n = await clusterNode({ node: NODE, port: PORT, signal: ctx.signal });
    const checks: Check[] = [];
    const notes: string[] = [];
    try {
      await n.start();
      const steady = Array.from({ length: STEADY }, (_, i) => `ctrd-steady-${i}`);
      await n.kubectl.ok(['apply', '-f', '-'], steady.map((p) => boundPod(NODE, p)).join('---\n'));
      await allRunning(n, steady, ctx.signal, 120_000);
      const r = await repetitions(ctx, n, steady);
      checks.push(...r.checks);
      notes.push(...r.notes);
    } finally {
      // Whatever happened, the bed's containerd runs again for whoever comes next.
      if ((await bedContainerdPid()) === undefined) await startContainerd();
      await n.close();
    }
    return {
      id: this.id,
      fault: this.fault,
      repetitions: ctx.reps,
      checks,
      notes,
      durationMs: Date.now() - t0,
    };
  },
};

async function allRunning(n: ClusterNode, names: string[], signal: AbortSignal, timeoutMs: number) {
  return waitFor(`${names.length} pods Running and Ready`, timeoutMs, signal, async () => {
    await n.proc().assertRunning();
    const pods = await n.pods();
    return names.every((p) => pods.get(p)?.phase === 'Running' && pods.get(p)?.ready) || undefined;
  });
}

async function repetitions(ctx: ScenarioContext, n: ClusterNode, steady: string[]) {
  const notReadyS: number[] = [];
  const readyAgainS: number[] = [];
  const convergeS: number[] = [];
  let notReadySeen = 0;
  let restartedOthers = 0;
  let dupS = 0;
  let dupC = 0;
  let lostRecreated = 0;
  let lostTried = 0;
  let kubeletDied = 0;
  const examples: string[] = [];
  for (let rep = 0; rep < ctx.reps; rep++) {
    const midBatch = rep % 2 === 1;
    const batch = midBatch ? Array.from({ length: BATCH }, (_, i) => `ctrd-b${rep}-${i}`) : [];
    if (midBatch) {
      await n.kubectl.ok(['apply', '-f', '-'], batch.map((p) => boundPod(NODE, p)).join('---\n'));
      await sleep(Math.random() * 3_000, ctx.signal);
    }
    const before = await census(n.env.cri, mine);
    const victim = midBatch
      ? undefined
      : before.sandboxes.find(
          (s) =>
            s.state === 'SANDBOX_READY' && s.labels['io.kubernetes.pod.name'] === steady[rep % steady.length],
        );
    const killedAt = Date.now();
    await killContainerd();
    if (victim) {
      lostTried++;
      if ((await killShim(victim.id)) === 0)
        examples.push(`rep ${rep}: no shim found for ${victim.id.slice(0, 12)}`);
    }
    // NotReady while it is down (kubectl talks to the API server, which is up).
    const sawNotReady = await waitFor(
      'node NotReady',
      DOWN_MS + NOT_READY_MAX_S * 1000,
      ctx.signal,
      async () => (await n.ready()) === 'False' || undefined,
    ).then(
      () => true,
      () => false,
    );
    if (sawNotReady) {
      notReadySeen++;
      notReadyS.push((Date.now() - killedAt) / 1000);
    }
    const left = DOWN_MS - (Date.now() - killedAt);
    if (left > 0) await sleep(left, ctx.signal);
    await startContainerd();
    const backAt = Date.now();
    await waitFor(
      'node Ready again',
      READY_AGAIN_MAX_S * 2000,
      ctx.signal,
      async () => (await n.ready()) === 'True' || undefined,
    ).then(
      () => readyAgainS.push((Date.now() - backAt) / 1000),
      () => undefined,
    );
    const expected = [...steady, ...batch];
    await allRunning(n, expected, ctx.signal, 120_000).then(
      () => convergeS.push((Date.now() - backAt) / 1000),
      (err: unknown) => examples.push(`rep ${rep}: ${String(err)}`),
    );
    if (n.proc().child.exitCode !== null || n.proc().child.signalCode !== null) kubeletDied++;
    await sleep(2_000, ctx.signal);
    const after = await census(n.env.cri, mine);
    const victimName = victim?.labels['io.kubernetes.pod.name'];
    const lost = restarted(before, after).filter(
      (p) => victimName === undefined || !p.includes(`/${victimName}/`),
    );
    restartedOthers += lost.length;
    dupS += duplicateSandboxes(after).length;
    dupC += duplicateContainers(after).length;
    if (victim && recreated(after, victimName ?? '', victim.id)) lostRecreated++;
    for (const e of [
      ...lost.map((x) => `restarted ${x}`),
      ...duplicateSandboxes(after),
      ...duplicateContainers(after),
    ]) {
      if (examples.length < 8) examples.push(`rep ${rep}: ${e}`);
    }
    if (batch.length > 0) {
      await n.kubectl.run(['delete', 'pods', '-n', NS, ...batch, '--grace-period=1', '--wait=true'], {
        timeoutMs: 90_000,
      });
    }
  }
  const checks: Check[] = [
    countIs('kubelet exits', kubeletDied),
    check(
      'runtime outages during which the node turned NotReady',
      `${ctx.reps}`,
      `${notReadySeen}`,
      notReadySeen === ctx.reps,
    ),
    atMost('containerd killed → node NotReady, max', Math.max(0, ...notReadyS), NOT_READY_MAX_S, 's'),
    check(
      'outages after which the node was Ready again',
      `${ctx.reps}`,
      `${readyAgainS.length}`,
      readyAgainS.length === ctx.reps,
    ),
    atMost('containerd back → node Ready, max', Math.max(0, ...readyAgainS), READY_AGAIN_MAX_S, 's'),
    check(
      'outages after which every pod was Running and Ready',
      `${ctx.reps}`,
      `${convergeS.length}`,
      convergeS.length === ctx.reps,
    ),
    countIs('running containers restarted (the lost sandbox’s excepted)', restartedOthers),
    countIs('pods with two ready sandboxes', dupS),
    countIs('containers created twice or running twice', dupC),
    check(
      'lost sandboxes recreated with their container running',
      `${lostTried}`,
      `${lostRecreated}`,
      lostRecreated === lostTried,
    ),
  ];
  const notes = [
    `NotReady after the kill: p50 ${percentile(notReadyS, 0.5).toFixed(1)} s; Ready after containerd returned: p50 ${percentile(readyAgainS, 0.5).toFixed(1)} s; every pod Running and Ready: p50 ${percentile(convergeS, 0.5).toFixed(1)} s, max ${Math.max(0, ...convergeS).toFixed(1)} s.`,
    ...examples,
  ];
  return { checks, notes };
}

/** The pod has a ready sandbox other than `lostId`, with its container running in it. */
function recreated(c: Census, podName: string, lostId: string): boolean {
  const sb = c.sandboxes.find(
    (s) => s.labels['io.kubernetes.pod.name'] === podName && s.state === 'SANDBOX_READY',
  );
  if (!sb || sb.id === lostId) return false;
  return c.containers.some((x) => x.podSandboxId === sb.id && x.state === 'CONTAINER_RUNNING');
}
