import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { hasCode } from '../util/errors.ts';
import {
  createContainerManager,
  type ContainerManager,
  type ContainerManagerOptions,
} from './container-manager.ts';
import {
  fakeCgroupFsPerTest,
  fakeContainerManagerOptions,
  type FakeCgroupFs,
  type FakeLayout,
} from './testing.ts';

const signal = new AbortController().signal;
const GUARANTEED = { cpu: '500m', memory: '64Mi' };

function pod(
  uid: string,
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> },
): KubeletPod {
  return {
    metadata: { name: `p-${uid}`, namespace: 'default', uid },
    spec: { containers: [{ name: 'a', image: 'i', ...(resources ? { resources } : {}) }] },
  };
}
const guaranteed = (uid: string) => pod(uid, { requests: GUARANTEED, limits: GUARANTEED });
const burstable = (uid: string, cpu = '250m') => pod(uid, { requests: { cpu } });
const bestEffort = (uid: string) => pod(uid);

const fakeTree = fakeCgroupFsPerTest();

async function setUp(
  layout: FakeLayout,
  overrides: Partial<ContainerManagerOptions> = {},
): Promise<{ fs: FakeCgroupFs; cm: ContainerManager }> {
  const fake = await fakeTree(layout);
  const cm = createContainerManager(fakeContainerManagerOptions(fake, overrides));
  return { fs: fake, cm };
}

describe('container manager start', () => {
  it('creates kubepods with the node allocatable limits and both QoS tiers (v1)', async () => {
    const { fs, cm } = await setUp('v1', {
      nodeAllocatable: (capacity) => ({ ...capacity, milliCPU: 1500, memory: 4 * 2 ** 30 }),
    });
    await cm.start(signal);
    assert.equal(await fs.read('cpu/kubepods/cpu.shares'), '1536');
    assert.equal(await fs.read('memory/kubepods/memory.limit_in_bytes'), String(4 * 2 ** 30));
    assert.equal(await fs.read('pids/kubepods/pids.max'), '32768');
    assert.equal(await fs.read('cpu/kubepods/burstable/cpu.shares'), '2');
    assert.equal(await fs.read('cpu/kubepods/besteffort/cpu.shares'), '2');
    assert.deepEqual(await fs.dirsOf('/kubepods/besteffort'), [
      'blkio/kubepods/besteffort',
      'cpu/kubepods/besteffort',
      'cpuacct/kubepods/besteffort',
      'cpuset/kubepods/besteffort',
      'devices/kubepods/besteffort',
      'freezer/kubepods/besteffort',
      'memory/kubepods/besteffort',
      'pids/kubepods/besteffort',
      'systemd/kubepods/besteffort',
      'unified/kubepods/besteffort',
    ]);
  });

  it('sizes kubepods from the capacity when "pods" is not enforced', async () => {
    const { fs, cm } = await setUp('v1', {
      enforceNodeAllocatable: [],
      nodeAllocatable: () => ({ milliCPU: 1000, memory: 2 ** 30 }),
    });
    await cm.start(signal);
    assert.equal(await fs.read('cpu/kubepods/cpu.shares'), '2048');
    assert.equal(await fs.read('memory/kubepods/memory.limit_in_bytes'), String(8 * 2 ** 30));
  });

  it('creates the hierarchy under a cgroup root, and refuses a root that does not exist', async () => {
    const { fs, cm } = await setUp('v2', { cgroupRoot: '/missing' });
    await assert.rejects(cm.start(signal), (err: unknown) => hasCode(err, 'FailedPrecondition'));
    assert.equal(await fs.exists('missing'), false);
  });

  it('keeps the burstable shares of a previous run until the first QoS update', async () => {
    const { fs, cm } = await setUp('v1');
    await cm.start(signal);
    await cm.updateQOSCgroups([burstable('b1', '1')], signal);
    const again = createContainerManager(
      fakeContainerManagerOptions(fs, {
        nodeCapacity: () => ({ milliCPU: 2000, memory: 8 * 2 ** 30, pids: 100 }),
      }),
    );
    await again.start(signal);
    assert.equal(await fs.read('cpu/kubepods/burstable/cpu.shares'), '1024');
    assert.equal(await fs.read('pids/kubepods/pids.max'), '100');
  });
});

describe('pod cgroups', () => {
  it('names the cgroup parent by QoS class', async () => {
    const { cm } = await setUp('v1');
    assert.equal(cm.podCgroupParent(guaranteed('g1')), '/kubepods/podg1');
    assert.equal(cm.podCgroupParent(burstable('b1')), '/kubepods/burstable/podb1');
    assert.equal(cm.podCgroupParent(bestEffort('e1')), '/kubepods/besteffort/pode1');
  });

  it('refuses to work before start', async () => {
    const { cm } = await setUp('v1');
    await assert.rejects(cm.ensurePodCgroup(guaranteed('g1'), signal), (err: unknown) =>
      hasCode(err, 'FailedPrecondition'),
    );
  });

  it('creates a Guaranteed pod cgroup with the pod totals and the pod pids limit (v1)', async () => {
    const { fs, cm } = await setUp('v1', { podPidsLimit: 100 });
    await cm.start(signal);
    assert.equal(await cm.podCgroupExists(guaranteed('g1')), false);
    await cm.ensurePodCgroup(guaranteed('g1'), signal);
    assert.ok(await cm.podCgroupExists(guaranteed('g1')));
    assert.equal(await fs.read('cpu/kubepods/podg1/cpu.shares'), '512');
    assert.equal(await fs.read('cpu/kubepods/podg1/cpu.cfs_quota_us'), '50000');
    assert.equal(await fs.read('cpu/kubepods/podg1/cpu.cfs_period_us'), '100000');
    assert.equal(await fs.read('memory/kubepods/podg1/memory.limit_in_bytes'), '67108864');
    assert.equal(await fs.read('pids/kubepods/podg1/pids.max'), '100');
    assert.equal(await fs.read('cpuset/kubepods/podg1/cpuset.cpus'), '0-1');
  });

  it('writes the values once per pod and start, not on every sync', async () => {
    const { fs, cm } = await setUp('v1');
    await cm.start(signal);
    await cm.ensurePodCgroup(burstable('b1'), signal);
    await fs.ops.writeFile(`${fs.root}/cpu/kubepods/burstable/podb1/cpu.shares`, '999');
    await cm.ensurePodCgroup(burstable('b1'), signal);
    assert.equal(await fs.read('cpu/kubepods/burstable/podb1/cpu.shares'), '999');
  });

  it('creates BestEffort and Burstable pod cgroups on v2 with converted values', async () => {
    const { fs, cm } = await setUp('v2');
    await cm.start(signal);
    await cm.ensurePodCgroup(bestEffort('e1'), signal);
    await cm.ensurePodCgroup(burstable('b1'), signal);
    assert.equal(await fs.read('kubepods/besteffort/pode1/cpu.weight'), '1');
    assert.equal(await fs.read('kubepods/burstable/podb1/cpu.weight'), '10');
    assert.equal(await fs.read('kubepods/burstable/podb1/memory.max'), 'max');
    assert.equal(await fs.read('kubepods/memory.max'), String(8 * 2 ** 30));
  });

  it('recomputes the burstable tier from the active pods', async () => {
    const { fs, cm } = await setUp('v1');
    await cm.start(signal);
    await cm.updateQOSCgroups([burstable('b1', '250m'), burstable('b2', '500m'), guaranteed('g1')], signal);
    assert.equal(await fs.read('cpu/kubepods/burstable/cpu.shares'), '768');
    assert.equal(await fs.read('cpu/kubepods/besteffort/cpu.shares'), '2');
    await cm.updateQOSCgroups([], signal);
    assert.equal(await fs.read('cpu/kubepods/burstable/cpu.shares'), '2');
  });

  it('destroys a pod cgroup in every hierarchy, killing what is left in it', async () => {
    const { fs, cm } = await setUp('v1');
    await cm.start(signal);
    await cm.ensurePodCgroup(burstable('b1'), signal);
    await fs.addTask('memory/kubepods/burstable/podb1', 5151);
    await cm.destroyPodCgroup('b1', signal);
    assert.deepEqual(
      fs.kills.map((k) => k.pid),
      [5151],
    );
    assert.deepEqual(await fs.dirsOf('/kubepods/burstable/podb1'), []);
    await cm.destroyPodCgroup('b1', signal); // already gone: fine
    await cm.destroyPodCgroup('../etc', signal); // never a path
  });

  it('times every cgroup create, update and destroy for kubelet_cgroup_manager_duration_seconds', async () => {
    const ops: string[] = [];
    const { cm } = await setUp('v2', { cgroupOperation: (op) => ops.push(op) });
    await cm.start(signal);
    assert.ok(ops.length >= 3 && ops.every((o) => o === 'create'), ops.join(','));
    ops.length = 0;
    await cm.ensurePodCgroup(burstable('b1'), signal);
    await cm.updateQOSCgroups([burstable('b1')], signal);
    await cm.destroyPodCgroup('b1', signal);
    assert.deepEqual(ops, ['create', 'update', 'update', 'destroy']);
  });

  it('removes only the cgroups of pods that are not active', async () => {
    const { fs, cm } = await setUp('v1');
    await cm.start(signal);
    for (const p of [guaranteed('g1'), burstable('b1'), bestEffort('e1'), bestEffort('e2')]) {
      await cm.ensurePodCgroup(p, signal);
    }
    const active = new Set(['b1', 'e2']);
    const removed = await cm.cleanupOrphanedPodCgroups((uid) => active.has(uid), signal);
    assert.deepEqual(removed.sort(), ['e1', 'g1']);
    assert.deepEqual(await fs.dirsOf('/kubepods/podg1'), []);
    assert.deepEqual(await fs.dirsOf('/kubepods/besteffort/pode1'), []);
    assert.ok(await cm.podCgroupExists(burstable('b1')));
    assert.ok(await cm.podCgroupExists(bestEffort('e2')));
    assert.ok(await fs.exists('cpu/kubepods/burstable'), 'QoS tiers are never orphans');
  });

  it('logs and keeps a cgroup it cannot empty, for the next cleanup', async () => {
    const { fs, cm } = await setUp('v1');
    await cm.start(signal);
    await cm.ensurePodCgroup(bestEffort('e1'), signal);
    await fs.addTask('pids/kubepods/besteffort/pode1', 1);
    assert.deepEqual(await cm.cleanupOrphanedPodCgroups(() => false, signal), []);
    assert.ok(await fs.exists('pids/kubepods/besteffort/pode1'));
  });
});

describe('cgroupsPerQOS off', () => {
  it('does nothing and gives the runtime default parent', async () => {
    const { fs, cm } = await setUp('v1', { cgroupsPerQOS: false });
    await cm.start(signal);
    await cm.ensurePodCgroup(guaranteed('g1'), signal);
    assert.equal(cm.enabled, false);
    assert.equal(cm.podCgroupParent(guaranteed('g1')), '');
    assert.equal(await cm.podCgroupExists(guaranteed('g1')), true);
    assert.equal(await fs.exists('cpu/kubepods'), false);
  });
});
