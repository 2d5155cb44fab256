/**
 * kubelet SIGKILL at random points (issue 13): 50 static pods run throughout; odd repetitions kill
 * the kubelet while a batch of 30 more is starting, even ones at steady state. After each restart:
 * no running container restarted, no duplicate sandbox or container, every pod converges; at the
 * end, with every manifest removed, no pod directory, mount or pod cgroup is left.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { LABEL_POD_UID } from '../../../src/config/defaults.ts';
import { sleep } from '../../../src/util/abort.ts';
import { IMAGE, podManifest, setupEnv, writeManifest, type Env } from '../../kit/bed.ts';
import type { Pod } from '../../../src/api/types.ts';
import { atMost, check, countIs, type Check, type ScenarioResult } from '../report.ts';
import type { Scenario, ScenarioContext } from '../scenario.ts';
import {
  census,
  duplicateContainers,
  duplicateSandboxes,
  notConverged,
  restarted,
  type Census,
} from '../lib/cri-census.ts';
import { readyPods } from '../lib/pods-api.ts';
import {
  mountsBelow,
  podCgroups,
  podDirs,
  standaloneNode,
  type StandaloneNode,
} from '../lib/standalone-node.ts';
import { percentile, waitFor } from '../lib/wait.ts';

const NODE = 'rel-kill';
const PORT = 11261;
const READ_ONLY_PORT = 11262;
const STEADY = 50;
const BATCH = 30;
/** How long pods may take to converge after a restart (30 pods starting on 2 cores, plus the restart). */
const CONVERGE_MS = 120_000;

function pod(name: string): Pod {
  return podManifest(name, {
    terminationGracePeriodSeconds: 1,
    volumes: [
      { name: 'scratch', emptyDir: {} },
      { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
    ],
    containers: [
      {
        name: 'main',
        image: IMAGE,
        command: ['sleep', '3600'],
        volumeMounts: [
          { name: 'scratch', mountPath: '/scratch' },
          { name: 'mem', mountPath: '/mem' },
        ],
      },
    ],
  });
}

const key = (name: string) => `default/${name}-${NODE}`;

export const kubeletKill: Scenario = {
  id: 'kubelet-kill',
  fault: 'kubelet SIGKILL at a random point, mid-batch (30 pods starting) or at steady state (50 pods)',
  reps: { quick: 2, full: 20 },
  cluster: false,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const t0 = Date.now();
    const env = await setupEnv();
    const node = standaloneNode(env, {
      nodeName: NODE,
      port: PORT,
      extraArgs: ['--read-only-port', String(READ_ONLY_PORT)],
    });
    const checks: Check[] = [];
    const notes: string[] = [];
    try {
      await mkdir(env.manifests, { recursive: true });
      node.start();
      const steady = Array.from({ length: STEADY }, (_, i) => `steady-${i}`);
      for (const n of steady) await writeManifest(env, `${n}.yaml`, pod(n));
      await waitFor('the 50 steady pods running', CONVERGE_MS, ctx.signal, async () => {
        await node.proc.assertRunning();
        const ready = await readyPods(READ_ONLY_PORT).catch(() => new Set<string>());
        return steady.every((n) => ready.has(key(n))) || undefined;
      });
      const r = await killRepetitions(ctx, env, node, steady.map(key));
      checks.push(...r.checks);
      notes.push(...r.notes);
      checks.push(...(await leftovers(ctx, env, node, r.uids)));
    } finally {
      await node.kill();
      await env.close();
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

async function killRepetitions(ctx: ScenarioContext, env: Env, node: StandaloneNode, steadyKeys: string[]) {
  const mine = (p: string) => p.endsWith(`-${NODE}`);
  const uids = new Set<string>();
  const remember = (c: Census) => {
    for (const s of c.sandboxes) if (s.labels[LABEL_POD_UID]) uids.add(s.labels[LABEL_POD_UID]);
  };
  let restartedTotal = 0;
  let dupSandboxes = 0;
  let dupContainers = 0;
  let unconverged = 0;
  let extraSandboxes = 0;
  const convergeMs: number[] = [];
  const examples: string[] = [];
  let midBatch = 0;
  for (let rep = 0; rep < ctx.reps; rep++) {
    ctx.signal.throwIfAborted();
    const batch = rep % 2 === 0 ? Array.from({ length: BATCH }, (_, i) => `batch${rep}-${i}`) : [];
    if (batch.length > 0) midBatch++;
    for (const n of batch) await writeManifest(env, `${n}.yaml`, pod(n));
    // A random point: within the batch's start (a 30-pod batch takes ~5–10 s here), or any moment
    // of steady work (relists, syncs, housekeeping).
    await sleep(Math.random() * (batch.length > 0 ? 6_000 : 5_000), ctx.signal);
    await node.kill();
    const atKill = await census(env.cri, mine);
    remember(atKill);
    const restartAt = Date.now();
    node.start();
    const expected = [...steadyKeys, ...batch.map(key)];
    const converged = await waitFor(
      'every pod running after the restart',
      CONVERGE_MS,
      ctx.signal,
      async () => {
        await node.proc.assertRunning();
        const ready = await readyPods(READ_ONLY_PORT).catch(() => new Set<string>());
        return expected.every((p) => ready.has(p)) || undefined;
      },
    ).then(
      () => true,
      () => false,
    );
    if (converged) convergeMs.push(Date.now() - restartAt);
    await sleep(2_000, ctx.signal); // a relist and a sync of every pod after the report
    const after = await census(env.cri, mine);
    remember(after);
    const lost = restarted(atKill, after);
    const dupS = duplicateSandboxes(after);
    const dupC = duplicateContainers(after);
    const stuck = notConverged(after, expected, ['main']);
    const perPod = new Map<string, number>();
    for (const s of after.sandboxes)
      perPod.set(
        s.labels['io.kubernetes.pod.name'] ?? '',
        (perPod.get(s.labels['io.kubernetes.pod.name'] ?? '') ?? 0) + 1,
      );
    const extra = [...perPod.values()].filter((n) => n > 1).length;
    restartedTotal += lost.length;
    dupSandboxes += dupS.length;
    dupContainers += dupC.length;
    unconverged += stuck.length;
    extraSandboxes += extra;
    for (const e of [
      ...lost.map((x) => `restarted ${x}`),
      ...dupS,
      ...dupC,
      ...stuck.map((x) => `not converged ${x}`),
    ]) {
      if (examples.length < 8) examples.push(`rep ${rep}: ${e}`);
    }
    ctx.logger.info('kubelet-kill repetition', {
      rep,
      batch: batch.length,
      lost: lost.length,
      stuck: stuck.length,
    });
    // The batch goes again before the next repetition.
    for (const n of batch) await rm(join(env.manifests, `${n}.yaml`));
    await waitFor('the batch stopped', 60_000, ctx.signal, async () => {
      const c = await census(env.cri, (p) => batch.some((n) => p === key(n)));
      return c.containers.every((x) => x.state !== 'CONTAINER_RUNNING') || undefined;
    });
  }
  const checks: Check[] = [
    countIs('running containers restarted by a restart (all repetitions)', restartedTotal),
    countIs('pods with two ready sandboxes', dupSandboxes),
    countIs('containers created twice (same pod, name, attempt) or running twice', dupContainers),
    countIs('pods with more than one sandbox of any state', extraSandboxes),
    countIs('pods not running after the restart', unconverged),
    check(
      'restarts after which every pod converged',
      `${ctx.reps}`,
      `${convergeMs.length}`,
      convergeMs.length === ctx.reps,
    ),
  ];
  if (convergeMs.length > 0) {
    checks.push(
      atMost('time from restart to every pod reported running, max', Math.max(...convergeMs) / 1000, 60, 's'),
    );
  }
  const notes = [
    `${midBatch} kills mid-batch (${BATCH} pods starting next to ${STEADY} running), ${ctx.reps - midBatch} at steady state (${STEADY} pods).`,
    `Restart → every pod reported running: p50 ${(percentile(convergeMs, 0.5) / 1000).toFixed(1)} s, max ${(Math.max(0, ...convergeMs) / 1000).toFixed(1)} s.`,
    ...examples,
  ];
  return { checks, notes, uids };
}

/** Every manifest removed: nothing of the pods may stay on the host. */
async function leftovers(
  ctx: ScenarioContext,
  env: Env,
  node: StandaloneNode,
  uids: Set<string>,
): Promise<Check[]> {
  await rm(env.manifests, { recursive: true, force: true });
  await mkdir(env.manifests);
  const t = Date.now();
  const clean = await waitFor('pods cleaned up', 90_000, ctx.signal, async () => {
    await node.proc.assertRunning();
    const dirs = await podDirs(env.rootDir);
    const mounts = await mountsBelow(env.rootDir);
    const cgroups = await podCgroups(uids);
    return dirs.length + mounts.length + cgroups.length === 0 || undefined;
  }).then(
    () => true,
    () => false,
  );
  const dirs = await podDirs(env.rootDir);
  const mounts = await mountsBelow(env.rootDir);
  const cgroups = await podCgroups(uids);
  const running = (await census(env.cri, (p) => p.endsWith(`-${NODE}`))).containers.filter(
    (c) => c.state === 'CONTAINER_RUNNING',
  );
  return [
    countIs('pod directories left once every pod is removed', dirs.length),
    countIs('mounts left under the root dir', mounts.length),
    countIs('pod cgroups left (memory, pids)', cgroups.length),
    countIs('containers still running', running.length),
    check(
      'cleaned up within 90 s of the last removal',
      'yes',
      clean ? `yes, ${((Date.now() - t) / 1000).toFixed(1)} s` : 'no',
      clean,
    ),
  ];
}
