import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { nullLogger } from '../util/logger.ts';
import { detectLayout } from './cgroup-layout.ts';
import { createCgroups, type Cgroups } from './cgroupfs.ts';
import { fakeCgroupFsPerTest, type FakeCgroupFs, type FakeLayout } from './testing.ts';

const fakeTree = fakeCgroupFsPerTest();

async function setUp(layout: FakeLayout): Promise<{ fs: FakeCgroupFs; cg: Cgroups }> {
  const fake = await fakeTree(layout);
  const detected = await detectLayout(fake.root, fake.ops);
  return { fs: fake, cg: createCgroups(detected, fake.ops, nullLogger) };
}

describe('cgroups on v1 (hybrid)', () => {
  it('creates the cgroup in every hierarchy runc uses, name=systemd and unified included', async () => {
    const { fs, cg } = await setUp('v1');
    await cg.apply('/kubepods/burstable/poda', { cpuShares: 512 });
    assert.deepEqual(await fs.dirsOf('/kubepods/burstable/poda'), [
      'blkio/kubepods/burstable/poda',
      'cpu/kubepods/burstable/poda',
      'cpuacct/kubepods/burstable/poda',
      'cpuset/kubepods/burstable/poda',
      'devices/kubepods/burstable/poda',
      'freezer/kubepods/burstable/poda',
      'memory/kubepods/burstable/poda',
      'pids/kubepods/burstable/poda',
      'systemd/kubepods/burstable/poda',
      'unified/kubepods/burstable/poda',
    ]);
    assert.ok(await cg.exists('/kubepods/burstable/poda'));
    assert.equal(await cg.exists('/kubepods/burstable/podb'), false);
  });

  it('copies cpuset.cpus and cpuset.mems down every new level, so tasks can join', async () => {
    const { fs, cg } = await setUp('v1');
    await cg.apply('/kubepods/besteffort/podx', {});
    for (const dir of ['kubepods', 'kubepods/besteffort', 'kubepods/besteffort/podx']) {
      assert.equal(await fs.read(`cpuset/${dir}/cpuset.cpus`), '0-1', dir);
      assert.equal(await fs.read(`cpuset/${dir}/cpuset.mems`), '0', dir);
    }
  });

  it('writes shares, CFS period and quota, memory limit and pids limit to their hierarchies', async () => {
    const { fs, cg } = await setUp('v1');
    await cg.apply('/kubepods/podg', {
      cpuShares: 768,
      cpuQuota: 75_000,
      cpuPeriod: 100_000,
      memory: 100_663_296,
      pidsLimit: 1024,
    });
    assert.equal(await fs.read('cpu/kubepods/podg/cpu.shares'), '768');
    assert.equal(await fs.read('cpu/kubepods/podg/cpu.cfs_quota_us'), '75000');
    assert.equal(await fs.read('cpu/kubepods/podg/cpu.cfs_period_us'), '100000');
    assert.equal(await fs.read('memory/kubepods/podg/memory.limit_in_bytes'), '100663296');
    assert.equal(await fs.read('pids/kubepods/podg/pids.max'), '1024');
    // Untouched values keep the kernel's defaults; the parent got no values at all.
    assert.equal(await fs.read('cpu/kubepods/cpu.shares'), '1024');
    assert.equal(await fs.read('unified/kubepods/podg/cpu.shares'), undefined);
  });

  it('writes -1 and max for "no limit"', async () => {
    const { fs, cg } = await setUp('v1');
    await cg.apply('/kubepods/podg', { cpuQuota: -1, cpuPeriod: 100_000, pidsLimit: -1 });
    assert.equal(await fs.read('cpu/kubepods/podg/cpu.cfs_quota_us'), '-1');
    assert.equal(await fs.read('pids/kubepods/podg/pids.max'), 'max');
  });

  it('lists children across hierarchies', async () => {
    const { cg } = await setUp('v1');
    await cg.apply('/kubepods/poda', {});
    await cg.apply('/kubepods/burstable/podb', {});
    assert.deepEqual(await cg.children('/kubepods'), ['burstable', 'poda']);
    assert.deepEqual(await cg.children('/nothing'), []);
  });

  it('kills leftover tasks, then removes the cgroup and its children everywhere', async () => {
    const { fs, cg } = await setUp('v1');
    await cg.apply('/kubepods/burstable/poda', {});
    // A container cgroup runc left behind, with a task in two hierarchies.
    await cg.apply('/kubepods/burstable/poda/abc123', {});
    await fs.addTask('memory/kubepods/burstable/poda/abc123', 4242);
    await fs.addTask('cpu/kubepods/burstable/poda/abc123', 4242);
    await fs.addTask('pids/kubepods/burstable/poda', 4343);
    assert.deepEqual(await cg.pids('/kubepods/burstable/poda'), [4242, 4343]);
    await cg.destroy('/kubepods/burstable/poda');
    assert.deepEqual(
      fs.kills.map((k) => `${k.pid}:${k.signal}`),
      ['4242:SIGKILL', '4343:SIGKILL'],
    );
    assert.deepEqual(await fs.dirsOf('/kubepods/burstable/poda'), []);
    assert.ok(await cg.exists('/kubepods/burstable'), 'the parent stays');
  });

  it('treats destroying a missing cgroup as done, and refuses to destroy a root', async () => {
    const { cg } = await setUp('v1');
    await cg.destroy('/kubepods/podnothing');
    await assert.rejects(cg.destroy('/'), (err: unknown) => hasCode(err, 'InvalidArgument'));
  });

  it('never signals pid 1 or itself', async () => {
    const { fs, cg } = await setUp('v1');
    await cg.apply('/kubepods/podz', {});
    await fs.addTask('memory/kubepods/podz', 1);
    await assert.rejects(cg.destroy('/kubepods/podz'), /refusing to kill pid 1/);
    assert.deepEqual(fs.kills, []);
  });
});

describe('cgroups on co-mounted v1', () => {
  it('writes cpu values once into cpu,cpuacct', async () => {
    const { fs, cg } = await setUp('v1-comounted');
    await cg.apply('/kubepods/podg', { cpuShares: 300 });
    assert.equal(await fs.read('cpu,cpuacct/kubepods/podg/cpu.shares'), '300');
    assert.ok(await cg.exists('/kubepods/podg'));
  });
});

describe('cgroups on v2', () => {
  it('enables controllers on the way down and writes weight, cpu.max, memory.max, pids.max', async () => {
    const { fs, cg } = await setUp('v2');
    await cg.apply('/kubepods/burstable/podb', {
      cpuShares: 1024,
      cpuQuota: 50_000,
      cpuPeriod: 100_000,
      memory: 67_108_864,
      pidsLimit: -1,
    });
    for (const dir of ['', 'kubepods/', 'kubepods/burstable/']) {
      const enabled = (await fs.read(`${dir}cgroup.subtree_control`)) ?? '';
      for (const c of ['cpu', 'memory', 'pids'])
        assert.ok(enabled.split(' ').includes(c), `${dir}: ${enabled}`);
    }
    assert.equal(await fs.read('kubepods/burstable/podb/cpu.weight'), '39');
    assert.equal(await fs.read('kubepods/burstable/podb/cpu.max'), '50000 100000');
    assert.equal(await fs.read('kubepods/burstable/podb/memory.max'), '67108864');
    assert.equal(await fs.read('kubepods/burstable/podb/pids.max'), 'max');
    assert.ok(await cg.exists('/kubepods/burstable/podb'));
  });

  it('writes "max <period>" when there is no quota', async () => {
    const { fs, cg } = await setUp('v2');
    await cg.apply('/kubepods/podg', { cpuQuota: -1, cpuPeriod: 100_000 });
    assert.equal(await fs.read('kubepods/podg/cpu.max'), 'max 100000');
  });

  it('kills leftover tasks and removes the cgroup tree', async () => {
    const { fs, cg } = await setUp('v2');
    await cg.apply('/kubepods/besteffort/pode', { cpuShares: 2 });
    await cg.apply('/kubepods/besteffort/pode/ctr', {});
    await fs.addTask('kubepods/besteffort/pode/ctr', 777);
    await cg.destroy('/kubepods/besteffort/pode');
    assert.deepEqual(
      fs.kills.map((k) => k.pid),
      [777],
    );
    assert.equal(await fs.exists('kubepods/besteffort/pode'), false);
    assert.equal(await fs.exists('kubepods/besteffort'), true);
  });
});
