/**
 * Node allocatable and memory-pressure eviction on the systemd + cgroup v2 node VM (full mode, not
 * in scripts/test.sh): tskubelet in the VM joined to the bed's API server (the pods are API pods:
 * static pods are critical and never evicted, as upstream) with kubeReserved / systemReserved,
 * `enforceNodeAllocatable: [pods, kube-reserved]` and a hard memory.available threshold. kubepods.slice must be capacity − reserved,
 * kube.slice the kube reservation; a BestEffort pod filling a memory-backed emptyDir step by step must
 * be evicted (Failed, reason Evicted, upstream's message) before the kernel steps in, while a
 * Guaranteed pod keeps running. Upstream's counterparts: test/e2e_node node_container_manager_test.go
 * and memory_eviction (eviction_test.go).
 *
 *   node --test test/node-vm/node-pressure.test.ts      (~5 min under TCG)
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildManifest } from '../kit/pod.ts';
import { until } from '../kit/poll.ts';
import { clusterNodeSuite, UNIT } from './lib/cluster-node.ts';
import { kubeletConfig, sh, unitState, writeGuestFiles } from './lib/qos-node.ts';

const SETUP_TIMEOUT_MS = 40 * 60_000;
const MI = 2 ** 20;
const KUBE_RESERVED_MI = 512;
const SYSTEM_RESERVED_MI = 256;
const THRESHOLD_MI = 1500;
const NODE = 'node-vm-pressure';
const PODS = [
  { name: 'guaranteed', namespace: 'default' },
  { name: 'hog', namespace: 'default' },
] as const;

const PRESSURE_CONFIG = `evictionHard:
  memory.available: ${THRESHOLD_MI}Mi
evictionPressureTransitionPeriod: 30s
kubeReserved:
  memory: ${KUBE_RESERVED_MI}Mi
systemReserved:
  memory: ${SYSTEM_RESERVED_MI}Mi
kubeReservedCgroup: /kube.slice
enforceNodeAllocatable:
- pods
- kube-reserved
`;

const guaranteed = buildManifest('guaranteed', {
  image: 'docker.io/library/busybox:1.29',
  containers: [
    {
      name: 'c',
      command: ['sh', '-c', 'trap "exit 0" TERM; while :; do sleep 1; done'],
      resources: { limits: { cpu: '100m', memory: '32Mi' } },
    },
  ],
});
/** 40 MiB a second into a Memory emptyDir: slow enough for the 10 s eviction check to see it first. */
const hog = buildManifest('hog', {
  image: 'docker.io/library/busybox:1.29',
  restartPolicy: 'Never',
  containers: [
    {
      name: 'c',
      command: [
        'sh',
        '-c',
        'i=0; while :; do dd if=/dev/zero of=/fill/f$i bs=1M count=40 2>/dev/null; i=$((i+1)); sleep 1; done',
      ],
      volumeMounts: [{ name: 'fill', mountPath: '/fill' }],
    },
  ],
  volumes: [{ name: 'fill', emptyDir: { medium: 'Memory' } }],
});

describe('node allocatable and memory pressure on a systemd + cgroup v2 node (node VM, full mode)', () => {
  const suite = clusterNodeSuite(NODE, PODS);
  const { guest, joined, results } = suite;

  before(
    async () => {
      const node = await suite.join(
        kubeletConfig({ shutdownGraceS: 0, criticalGraceS: 0 }, PRESSURE_CONFIG),
        async ({ vm }) => {
          // The kube-reserved cgroup must exist, as upstream requires: a slice of the node's own.
          await writeGuestFiles(vm, [
            ['/etc/systemd/system/kube.slice', '[Unit]\nDescription=Kubernetes daemons\n'],
          ]);
          await vm.run('systemctl daemon-reload && systemctl start kube.slice');
        },
      );
      await node.create(guaranteed);
      await node.create(hog);
    },
    { timeout: SETUP_TIMEOUT_MS },
  );

  it('limits kubepods.slice to capacity − reserved and kube.slice to the kube reservation', async () => {
    await until(
      'kubepods.slice made',
      async () => (await sh(guest(), 'test -d /sys/fs/cgroup/kubepods.slice && echo yes || true')) === 'yes',
      { timeoutMs: 300_000, intervalMs: 2_000, describe: () => unitState(guest(), UNIT, results()) },
    );
    // In kB, multiplied here: the guest's awk (mawk) prints numbers past 2^31 as 4.1033e+09.
    const capacity = Number(await sh(guest(), "awk '/^MemTotal/ { print $2 }' /proc/meminfo")) * 1024;
    const kubepods = Number(await sh(guest(), 'cat /sys/fs/cgroup/kubepods.slice/memory.max'));
    assert.equal(kubepods, capacity - (KUBE_RESERVED_MI + SYSTEM_RESERVED_MI) * MI);
    assert.equal(
      await sh(guest(), 'cat /sys/fs/cgroup/kube.slice/memory.max'),
      String(KUBE_RESERVED_MI * MI),
    );
  });

  it('evicts the BestEffort pod filling memory, as upstream says, and keeps the Guaranteed one', async () => {
    const pods = await until(
      'the hog evicted',
      async () => {
        const p = await joined().pods();
        return p.get('hog')?.status?.phase === 'Failed' ? p : undefined;
      },
      {
        timeoutMs: 8 * 60_000,
        intervalMs: 3_000,
        describe: async () => ({
          ...(await unitState(guest(), UNIT, results())),
          meminfo: await sh(guest(), 'grep -E "MemTotal|MemFree|MemAvailable|Shmem:" /proc/meminfo'),
        }),
      },
    );
    const evicted = pods.get('hog')?.status;
    assert.equal(evicted?.reason, 'Evicted', JSON.stringify(evicted));
    assert.match(evicted?.message ?? '', /^The node was low on resource: memory\./);
    assert.ok(
      pods.get('guaranteed')?.status?.containerStatuses?.[0]?.state?.running,
      'the Guaranteed pod runs on',
    );
    // The eviction manager, not the kernel, ended it.
    const oomKills = await sh(guest(), "journalctl -k --no-pager -q | grep -c 'oom-kill:' || true");
    assert.equal(oomKills, '0', 'no kernel OOM kill');
  });
});
