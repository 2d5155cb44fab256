/**
 * The root dir's disk full (issue 13): the kubelet's root dir is a small tmpfs; with a pod running
 * that mounts a ConfigMap, the disk is filled to the last byte. Then a new pod that mounts a
 * ConfigMap cannot have its volume written, and an update of the running pod's ConfigMap cannot be
 * projected: both must say so as FailedMount events naming the cause, the running pod must keep
 * running, the kubelet must keep running; once the space is freed, the new pod runs and the update
 * lands, without anyone touching the kubelet.
 */
import { execFile } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { unmountUnder } from '../../kit/bed.ts';
import { IMAGE } from '../../kit/bed.ts';
import { atMost, check, countIs, type Check, type ScenarioResult } from '../report.ts';
import type { Scenario, ScenarioContext } from '../scenario.ts';
import { NS, clusterNode, type ClusterNode } from '../lib/cluster-node.ts';
import { waitFor } from '../lib/wait.ts';
import { describeError } from '../../../src/util/errors.ts';

const NODE = 'rel-disk';
const PORT = 11264;
/** Recovery bound: the pod worker's retry after a failed sync plus a sync (upstream: the next sync). */
const RECOVER_MAX_S = 60;
/** A failed projection is written again at the next periodic sync: 1.5 × syncFrequency, and a margin. */
const UPDATE_MAX_S = 120;
const run = promisify(execFile);

function configMap(name: string, value: string): string {
  return `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}, namespace: ${NS}, labels: {app: reliability}}
data: {value: "${value}"}
`;
}

function podWithConfig(name: string, cm: string): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${NS}, labels: {app: reliability}}
spec:
  nodeName: ${NODE}
  terminationGracePeriodSeconds: 1
  volumes: [{name: conf, configMap: {name: ${cm}}}]
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sleep", "3600"]
    volumeMounts: [{name: conf, mountPath: /conf}]
`;
}

interface EventRow {
  reason: string;
  message: string;
  /** The involved object's UID: pods of an earlier run had the same names. */
  uid: string;
}

/**
 * The pod's FailedMount events, filtered by the API server: the namespace holds every event of the
 * suite (and of earlier runs on the bed, for an hour), which listed whole outgrew kubectl's output
 * buffer (16 MiB) and read as "no event".
 */
async function failedMounts(n: ClusterNode, uid: string): Promise<EventRow[]> {
  const r = await n.kubectl.run([
    'get',
    'events',
    '-n',
    NS,
    '--field-selector',
    `involvedObject.uid=${uid},reason=FailedMount`,
    '-o',
    'json',
  ]);
  if (r.code !== 0)
    throw new Error(`kubectl get events failed (${r.code}): ${r.stderr.trim().slice(0, 300)}`);
  const list = JSON.parse(r.stdout) as {
    items: { reason?: string; message?: string; involvedObject?: { uid?: string } }[];
  };
  return list.items.map((e) => ({
    reason: e.reason ?? '',
    message: e.message ?? '',
    uid: e.involvedObject?.uid ?? '',
  }));
}

export const diskFull: Scenario = {
  id: 'disk-full',
  fault: 'the root dir (a 16 MiB tmpfs) filled to the last byte, then freed',
  reps: { quick: 1, full: 3 },
  cluster: true,
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const t0 = Date.now();
    let diskRoot = '';
    const n = await clusterNode({
      node: NODE,
      port: PORT,
      signal: ctx.signal,
      // Disk eviction off: this is about writes failing, not about pressure (cluster-eviction tests that).
      extraArgs: ['--eviction-hard=memory.available<1Mi'],
      rootDir: async (env) => {
        diskRoot = join(env.dir, 'disk-root');
        await mkdir(diskRoot, { recursive: true });
        await run('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', diskRoot]);
        return diskRoot;
      },
    });
    const checks: Check[] = [];
    const notes: string[] = [];
    try {
      await n.start();
      for (let rep = 0; rep < ctx.reps; rep++) {
        const r = await once(ctx, n, diskRoot, rep);
        checks.push(...r.checks);
        notes.push(...r.notes);
      }
    } finally {
      await n.close().finally(async () => {
        if (diskRoot) {
          await unmountUnder(diskRoot);
          await run('umount', [diskRoot]).catch(() => undefined);
        }
      });
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

async function once(ctx: ScenarioContext, n: ClusterNode, diskRoot: string, rep: number) {
  const first = `disk-a${rep}`;
  const second = `disk-b${rep}`;
  const cm = `disk-conf${rep}`;
  await n.kubectl.ok(['apply', '-f', '-'], configMap(cm, 'v1') + '---\n' + podWithConfig(first, cm));
  await waitFor(
    `${first} Running`,
    90_000,
    ctx.signal,
    async () => (await n.pods()).get(first)?.ready || undefined,
  );
  const filler = join(diskRoot, 'filler');
  // Fill every byte (dd stops at ENOSPC, which is the point).
  await run('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k']).catch(() => undefined);
  await n.kubectl.ok(['apply', '-f', '-'], configMap(cm, 'v2') + '---\n' + podWithConfig(second, cm));
  const uidOf = async (pod: string) =>
    (await n.kubectl.ok(['get', 'pod', '-n', NS, pod, '-o', 'jsonpath={.metadata.uid}'])).trim();
  const [firstUid, secondUid] = [await uidOf(first), await uidOf(second)];
  // A wait that ends without the event says why (its last error) where the check shows what it saw.
  const failed = await waitFor('FailedMount for the new pod', 90_000, ctx.signal, async () =>
    (await failedMounts(n, secondUid)).find((e) => e.uid === secondUid && e.reason === 'FailedMount'),
  ).catch((err: unknown) => ({ message: `no event (${describeError(err)})` }));
  const updateFailed = await waitFor(
    'FailedMount for the running pod’s update',
    60_000,
    ctx.signal,
    async () =>
      (await failedMounts(n, firstUid)).find((e) => e.uid === firstUid && e.reason === 'FailedMount'),
  ).catch((err: unknown) => ({ message: `no event (${describeError(err)})` }));
  const pods = await n.pods();
  const alive = n.proc().child.exitCode === null && n.proc().child.signalCode === null;
  const firstState = pods.get(first);
  const secondState = pods.get(second);
  await rm(filler);
  const freedAt = Date.now();
  const recovered = await waitFor(
    `${second} Running after space returns`,
    RECOVER_MAX_S * 2000,
    ctx.signal,
    async () => (await n.pods()).get(second)?.ready || undefined,
  ).then(
    () => (Date.now() - freedAt) / 1000,
    () => undefined,
  );
  // A failed refresh is tried again at the pod's next periodic sync (syncFrequency 1 min, jittered
  // up to 1.5×), as upstream.
  let lastRead = '';
  const updated = await waitFor('the running pod sees v2', UPDATE_MAX_S * 1000, ctx.signal, async () => {
    const r = await n.kubectl.run(['exec', '-n', NS, first, '--', 'cat', '/conf/value']);
    lastRead = r.code === 0 ? r.stdout.trim() : `exec failed: ${r.stderr.trim().slice(0, 120)}`;
    return lastRead === 'v2' || undefined;
  }).then(
    () => (Date.now() - freedAt) / 1000,
    () => undefined,
  );
  await n.kubectl.run(['delete', 'pod', '-n', NS, first, second, '--grace-period=1', '--wait=true'], {
    timeoutMs: 90_000,
  });
  await n.kubectl.run(['delete', 'configmap', '-n', NS, cm]);
  const checks: Check[] = [
    check(
      'the new pod’s FailedMount names the cause',
      'no space left on device',
      failed?.message.slice(0, 160) ?? 'no event',
      /no space left on device/i.test(failed?.message ?? ''),
    ),
    check(
      'the running pod’s failed update is a FailedMount naming the cause',
      'no space left on device',
      updateFailed?.message.slice(0, 160) ?? 'no event',
      /no space left on device/i.test(updateFailed?.message ?? ''),
    ),
    check(
      'the running pod while the disk is full',
      'Running, Ready, 0 restarts',
      `${firstState?.phase}, ready ${firstState?.ready}, ${firstState?.restarts} restarts`,
      firstState?.phase === 'Running' && firstState.ready && firstState.restarts === 0,
    ),
    check(
      'the new pod while the disk is full',
      'Pending',
      secondState?.phase ?? 'missing',
      secondState?.phase === 'Pending',
    ),
    countIs('kubelet exits', alive ? 0 : 1),
    check(
      'the new pod runs once space returns',
      'yes',
      recovered === undefined ? 'no' : 'yes',
      recovered !== undefined,
    ),
    atMost('space freed → new pod Ready', recovered ?? Infinity, RECOVER_MAX_S, 's'),
    check(
      'the ConfigMap update reaches the running pod once space returns',
      `v2 within ${UPDATE_MAX_S} s`,
      updated === undefined ? `last read: ${lastRead}` : `v2 after ${updated.toFixed(1)} s`,
      updated !== undefined,
    ),
  ];
  return { checks, notes: [`rep ${rep}: space freed → new pod Ready in ${recovered?.toFixed(1) ?? '—'} s.`] };
}
