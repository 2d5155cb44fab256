/**
 * The baseline on the node VM (full mode, not in scripts/test.sh): the upstream kubelet 1.20.2
 * (built from Debian's source, test/harness/cluster) and tskubelet, one after the other in the same
 * VM, each as a systemd unit with the same kubeadm-style config (`cgroupDriver: systemd`) and the
 * same static pods; the cgroup v2 values of kubepods, the QoS tiers and every pod's slice must be
 * the same. Where 1.20 differs by design (the OOM group kill came in 1.28) the test says so.
 *
 *   node --test test/node-vm/upstream-baseline.test.ts      (~8 min under TCG)
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { CHECKOUT } from '../harness/index.ts';
import { ensureKubernetesBinaries, kubernetesBinary } from '../harness/cluster/index.ts';
import {
  SOCKET,
  bootNodeBed,
  kubeletConfig,
  qosValues,
  startKubeletUnit,
  stopKubeletUnit,
  stopNodeBed,
  testLogger,
  writeGuestFiles,
  type NodeBed,
  type PodName,
  type PodView,
} from './lib/qos-node.ts';

const SETUP_TIMEOUT_MS = 40 * 60_000;
const SETTINGS = { shutdownGraceS: 20, criticalGraceS: 10 };
/**
 * 1.20 has graceful node shutdown behind an alpha gate; standalone (no API server) it must not ask
 * an API server to authenticate or authorize requests.
 */
const UPSTREAM_STANDALONE = `featureGates:
  GracefulNodeShutdown: true
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
`;

interface Observed {
  values: Record<string, string>;
  oom: NonNullable<NonNullable<PodView['status']>['containerStatuses']>[number]['state'];
}

describe('tskubelet against the upstream kubelet 1.20.2 on the same systemd + cgroup v2 node', () => {
  let bed: NodeBed | undefined;
  const observed = new Map<'upstream' | 'tskubelet', Observed>();
  const observe = (pods: Map<PodName, PodView>) =>
    qosValues((bed as NodeBed).vm, pods).then((values) => ({
      values,
      oom: pods.get('oom')?.status?.containerStatuses?.[0]?.state,
    }));

  before(
    async () => {
      await ensureKubernetesBinaries(testLogger());
      const kubelet = kubernetesBinary('kubelet');
      bed = await bootNodeBed([{ hostPath: path.dirname(kubelet) }]);
      const { vm, results } = bed;
      const unitFile = await readFile(path.join(CHECKOUT, 'deploy/systemd/tskubelet.service'), 'utf8');
      await writeGuestFiles(vm, [
        ['/var/lib/kubelet/upstream.yaml', kubeletConfig(SETTINGS, UPSTREAM_STANDALONE)],
        ['/var/lib/kubelet/config.yaml', kubeletConfig(SETTINGS)],
      ]);
      const upstreamPods = await startKubeletUnit(
        vm,
        {
          unit: 'kubelet.service',
          unitFile,
          execStart:
            `${kubelet} --config=/var/lib/kubelet/upstream.yaml --container-runtime=remote ` +
            `--container-runtime-endpoint=${SOCKET} --root-dir=/var/lib/kubelet-upstream --v=2`,
        },
        results,
        { oomEnds: false },
      );
      // Upstream 1.20 has no OOM group kill: give the kernel time to kill the memory hog.
      await new Promise((r) => setTimeout(r, 20_000));
      observed.set('upstream', await observe(upstreamPods));
      await stopKubeletUnit(vm, 'kubelet.service');
      const ours = await startKubeletUnit(
        vm,
        {
          unit: 'tskubelet.service',
          unitFile,
          execStart: `${CHECKOUT}/bin/tskubelet run --config=/var/lib/kubelet/config.yaml --container-runtime-endpoint=${SOCKET} --v=2`,
        },
        results,
      );
      observed.set('tskubelet', await observe(ours));
    },
    { timeout: SETUP_TIMEOUT_MS },
  );
  after(() => stopNodeBed(bed), { timeout: 180_000 });

  it('writes the same cgroup v2 values to every pod slice, the tiers and kubepods, but for two known differences', (t) => {
    const up = observed.get('upstream');
    const ours = observed.get('tskubelet');
    assert.ok(up && ours, 'both kubelets ran');
    t.diagnostic(`upstream ${JSON.stringify(up.values)}`);
    t.diagnostic(`tskubelet ${JSON.stringify(ours.values)}`);
    const [weight, cpuMax, memoryMax, pidsMax] = [0, 1, 2, 3];
    const field = (v: string | undefined, i: number): string | undefined => v?.split('|')[i];
    // 1. kubepods pids.max: 1.20 takes kernel.pid_max alone; tskubelet the lower of pid_max and
    //    threads-max (the kernel refuses new tasks beyond threads-max whatever pid_max says).
    const threadsMax = Number(field(ours.values['kubepods'], pidsMax));
    assert.ok(threadsMax <= Number(field(up.values['kubepods'], pidsMax)), 'ours is the lower limit');
    // 2. The burstable tier's cpu.weight: 1.20 leaves systemd's default (100) on cgroup v2; tskubelet
    //    writes the weight of the tier's shares (the sum of Burstable cpu requests, 100m → 102 → 4), as
    //    upstream does on cgroup v1 with cpu.shares.
    assert.equal(field(up.values['burstableTier'], weight), '100');
    assert.equal(field(ours.values['burstableTier'], weight), '4');
    for (const [name, value] of Object.entries(up.values)) {
      const keep = (v: string | undefined, skip: number[]): string =>
        (v ?? '')
          .split('|')
          .filter((_, i) => !skip.includes(i))
          .join('|');
      const skip = name === 'kubepods' ? [pidsMax] : name === 'burstableTier' ? [weight] : [];
      assert.equal(
        keep(ours.values[name], skip),
        keep(value, skip),
        `${name} (cpu.weight|cpu.max|memory.max|pids.max)`,
      );
    }
    assert.ok(cpuMax >= 0 && memoryMax >= 0);
  });

  it('ends the over-limit container where upstream 1.20 kills one process (the group kill is 1.28+)', (t) => {
    const up = observed.get('upstream');
    const ours = observed.get('tskubelet');
    assert.ok(up && ours, 'both kubelets ran');
    t.diagnostic(`upstream oom pod ${JSON.stringify(up.oom)}; tskubelet ${JSON.stringify(ours.oom)}`);
    assert.ok(up.oom?.running, 'upstream 1.20: the shell survives its child’s OOM kill');
    assert.equal(ours.oom?.terminated?.reason, 'OOMKilled');
  });
});
