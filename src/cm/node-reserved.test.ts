// Node allocatable enforcement on the reserved cgroups (node-reserved.ts). Upstream counterpart:
// pkg/kubelet/cm/node_container_manager_linux.go (enforceNodeAllocatableCgroups, enforceExistingCgroup).
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { createContainerManager, type ContainerManagerOptions } from './container-manager.ts';
import { reservedCgroupPath } from './node-reserved.ts';
import { cpuSharesToWeight } from './resources.ts';
import {
  fakeCgroupFsPerTest,
  createFakeSystemd,
  fakeContainerManagerOptions,
  type FakeCgroupFs,
  type FakeLayout,
} from './testing.ts';

const signal = new AbortController().signal;
const GI = 2 ** 30;
const MI = 2 ** 20;

const fakeTree = fakeCgroupFsPerTest();

/** Makes an existing cgroup (e.g. systemd's /system.slice) in every hierarchy of the fake tree. */
async function existingCgroup(fs: FakeCgroupFs, layout: FakeLayout, name: string): Promise<void> {
  if (layout === 'v2') {
    for (const c of ['cpu', 'memory', 'pids']) {
      await fs.ops.writeFile(path.join(fs.root, 'cgroup.subtree_control'), `+${c}`);
    }
    await fs.ops.mkdir(path.join(fs.root, name));
    return;
  }
  for (const e of await readdir(fs.root, { withFileTypes: true })) {
    if (e.isDirectory()) await fs.ops.mkdir(path.join(fs.root, e.name, name));
  }
}

async function setUp(layout: FakeLayout, overrides: Partial<ContainerManagerOptions> = {}) {
  const fake = await fakeTree(layout);
  const options = fakeContainerManagerOptions(fake, {
    enforceNodeAllocatable: ['pods', 'system-reserved', 'kube-reserved'],
    nodeCapacity: () => ({ milliCPU: 4000, memory: 8 * GI }),
    // What the kubelet hands in (src/kubelet/node-allocatable.ts): capacity − system − kube reserved.
    nodeAllocatable: (c) => ({
      milliCPU: c.milliCPU - 750,
      memory: c.memory - GI - 512 * MI,
      pids: (c.pids ?? 0) - 1000,
    }),
    systemReserved: { milliCPU: 500, memory: GI, pids: 1000 },
    kubeReserved: { milliCPU: 250, memory: 512 * MI },
    systemReservedCgroup: '/system.slice',
    kubeReservedCgroup: '/kube.slice',
    ...overrides,
  });
  return { fs: fake, options };
}

describe('node allocatable enforcement', () => {
  it('limits kubepods to capacity − reserved and the reserved cgroups to their reservation (cgroupfs, v1)', async () => {
    const { fs, options } = await setUp('v1');
    await existingCgroup(fs, 'v1', 'system.slice');
    await existingCgroup(fs, 'v1', 'kube.slice');
    await createContainerManager(options).start(signal);
    assert.equal(await fs.read('cpu/kubepods/cpu.shares'), String(Math.floor((3250 * 1024) / 1000)));
    assert.equal(await fs.read('memory/kubepods/memory.limit_in_bytes'), String(8 * GI - GI - 512 * MI));
    assert.equal(await fs.read('pids/kubepods/pids.max'), '31768');
    assert.equal(await fs.read('cpu/system.slice/cpu.shares'), '512');
    assert.equal(await fs.read('memory/system.slice/memory.limit_in_bytes'), String(GI));
    assert.equal(await fs.read('pids/system.slice/pids.max'), '1000');
    assert.equal(await fs.read('cpu/kube.slice/cpu.shares'), '256');
    assert.equal(await fs.read('memory/kube.slice/memory.limit_in_bytes'), String(512 * MI));
    assert.equal(await fs.read('pids/kube.slice/pids.max'), 'max');
  });

  it('writes the v2 files of the reserved cgroups (cgroupfs, v2)', async () => {
    const { fs, options } = await setUp('v2', { enforceNodeAllocatable: ['pods', 'system-reserved'] });
    await existingCgroup(fs, 'v2', 'system.slice');
    await createContainerManager(options).start(signal);
    assert.equal(await fs.read('system.slice/cpu.weight'), String(cpuSharesToWeight(512)));
    assert.equal(await fs.read('system.slice/memory.max'), String(GI));
    assert.equal(await fs.read('system.slice/pids.max'), '1000');
    assert.equal(await fs.read('kubepods/memory.max'), String(8 * GI - GI - 512 * MI));
  });

  it('leaves the reserved cgroups alone unless their enforcement is asked for', async () => {
    const { fs, options } = await setUp('v1', { enforceNodeAllocatable: ['pods'] });
    await existingCgroup(fs, 'v1', 'system.slice');
    await createContainerManager(options).start(signal);
    assert.equal(await fs.read('cpu/system.slice/cpu.shares'), '1024');
    assert.equal(await fs.read('memory/kubepods/memory.limit_in_bytes'), String(8 * GI - GI - 512 * MI));
  });

  it('fails the start when a reserved cgroup does not exist, without creating it', async () => {
    const { fs, options } = await setUp('v1');
    await existingCgroup(fs, 'v1', 'system.slice');
    await assert.rejects(
      createContainerManager(options).start(signal),
      (err: unknown) =>
        hasCode(err, 'FailedPrecondition') &&
        /Failed to enforce Kube Reserved Cgroup Limits on "\/kube.slice": "\/kube.slice" cgroup does not exist/.test(
          String(err),
        ),
    );
    assert.equal(await fs.exists('cpu/kube.slice'), false);
  });

  it('records NodeAllocatableEnforced on the Node for kubepods and each reserved cgroup, as upstream', async () => {
    const events: string[] = [];
    const { fs, options } = await setUp('v1', {
      nodeEvent: (type, reason, message) => events.push(`${type} ${reason} ${message}`),
    });
    await existingCgroup(fs, 'v1', 'system.slice');
    await existingCgroup(fs, 'v1', 'kube.slice');
    await createContainerManager(options).start(signal);
    assert.deepEqual(events, [
      'Normal NodeAllocatableEnforced Updated Node Allocatable limit across pods',
      'Normal NodeAllocatableEnforced Updated limits on system reserved cgroup /system.slice',
      'Normal NodeAllocatableEnforced Updated limits on kube reserved cgroup /kube.slice',
    ]);
  });

  it('records FailedNodeAllocatableEnforcement on the Node when a reserved cgroup cannot be limited', async () => {
    const events: string[] = [];
    const { fs, options } = await setUp('v1', {
      nodeEvent: (type, reason, message) => events.push(`${type} ${reason} ${message}`),
    });
    await existingCgroup(fs, 'v1', 'system.slice');
    await assert.rejects(createContainerManager(options).start(signal));
    assert.deepEqual(events.slice(-1), [
      'Warning FailedNodeAllocatableEnforcement Failed to enforce Kube Reserved Cgroup Limits on "/kube.slice": "/kube.slice" cgroup does not exist',
    ]);
  });

  it('records one FailedNodeAllocatableEnforcement while kubepods cannot take its limit, then NodeAllocatableEnforced', async () => {
    const events: string[] = [];
    let failing = true;
    const { options } = await setUp('v1', {
      enforceNodeAllocatable: ['pods'],
      nodeEvent: (type, reason) => events.push(`${type} ${reason}`),
    });
    const ops = options.fs;
    assert.ok(ops);
    const cm = createContainerManager({
      ...options,
      fs: {
        ...ops,
        writeFile: (file, data) =>
          failing && file.endsWith('kubepods/memory.limit_in_bytes')
            ? Promise.reject(Object.assign(new Error('device or resource busy'), { code: 'EBUSY' }))
            : ops.writeFile(file, data),
      },
    });
    await cm.start(signal);
    await cm.updateQOSCgroups([], signal);
    assert.deepEqual(events, ['Warning FailedNodeAllocatableEnforcement']);
    failing = false;
    await cm.updateQOSCgroups([], signal);
    assert.deepEqual(events, ['Warning FailedNodeAllocatableEnforcement', 'Normal NodeAllocatableEnforced']);
  });

  it('fails the start when the enforced reservation is empty, as upstream', async () => {
    const { fs, options } = await setUp('v1', { enforceNodeAllocatable: ['system-reserved'] });
    delete options.systemReserved;
    await existingCgroup(fs, 'v1', 'system.slice');
    await assert.rejects(createContainerManager(options).start(signal), /cgroup is not config properly/);
  });

  it('sets the reservation on an existing slice through systemd with the systemd driver (v2)', async () => {
    const { fs, options } = await setUp('v2', {
      cgroupDriver: 'systemd',
      enforceNodeAllocatable: ['pods', 'system-reserved'],
      systemReservedCgroup: 'system.slice',
    });
    const systemd = createFakeSystemd(fs, 'v2');
    await systemd.startSlice('system.slice', '-.slice', [], signal);
    systemd.calls.length = 0;
    await createContainerManager({ ...options, systemd }).start(signal);
    const set = systemd.calls.find((c) => c.method === 'SetUnitProperties' && c.unit === 'system.slice');
    assert.ok(set, JSON.stringify(systemd.calls));
    assert.ok(!systemd.calls.some((c) => c.method === 'StartTransientUnit' && c.unit === 'system.slice'));
    assert.equal(await fs.read('system.slice/memory.max'), String(GI));
    assert.equal(await fs.read('system.slice/cpu.weight'), String(cpuSharesToWeight(512)));
  });
});

describe('reserved cgroup names', () => {
  it('takes cgroupfs names as paths and systemd names as slices, as upstream CgroupName', () => {
    assert.equal(reservedCgroupPath('system.slice', 'cgroupfs'), '/system.slice');
    assert.equal(reservedCgroupPath('/kube/reserved/', 'cgroupfs'), '/kube/reserved');
    assert.equal(reservedCgroupPath('/system.slice', 'systemd'), '/system.slice');
    assert.equal(reservedCgroupPath('system.slice', 'systemd'), '/system.slice');
    assert.equal(
      reservedCgroupPath('/kube.slice/kube-kubelet.slice', 'systemd'),
      '/kube.slice/kube-kubelet.slice',
    );
    assert.equal(reservedCgroupPath('/runtime', 'systemd'), '/runtime.slice');
  });
});
