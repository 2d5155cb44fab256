import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { detectLayout, settableControllers, type CgroupLayout } from './cgroup-layout.ts';
import { fakeCgroupFsPerTest, type FakeCgroupFs, type FakeLayout } from './testing.ts';

const fakeTree = fakeCgroupFsPerTest();

async function detect(kind: FakeLayout): Promise<{ fs: FakeCgroupFs; layout: CgroupLayout }> {
  const fake = await fakeTree(kind);
  return { fs: fake, layout: await detectLayout(fake.root, fake.ops) };
}

describe('detectLayout', () => {
  it('finds every v1 mount and the hybrid cgroup2 mount, as on these VMs', async () => {
    const { fs, layout } = await detect('v1');
    assert.equal(layout.mode, 'hybrid');
    assert.deepEqual(
      layout.hierarchies.map((h) => `${h.kind}:${path.relative(fs.root, h.dir)}`),
      [
        'v1:blkio',
        'v1:cpu',
        'v1:cpuacct',
        'v1:cpuset',
        'v1:devices',
        'v1:freezer',
        'v1:memory',
        'v1:pids',
        'v1:systemd',
        'v2:unified',
      ],
    );
    assert.deepEqual([...settableControllers(layout)].sort(), [
      'blkio',
      'cpu',
      'cpuacct',
      'cpuset',
      'devices',
      'freezer',
      'memory',
      'pids',
      'systemd',
    ]);
  });

  it('takes a co-mounted hierarchy once, not through its symlinks', async () => {
    const { fs, layout } = await detect('v1-comounted');
    const cpu = layout.hierarchies.filter((h) => h.controllers.has('cpu'));
    assert.deepEqual(
      cpu.map((h) => path.relative(fs.root, h.dir)),
      ['cpu,cpuacct'],
    );
  });

  it('recognizes a unified (v2) root', async () => {
    const { layout } = await detect('v2');
    assert.equal(layout.mode, 'v2');
    assert.ok(settableControllers(layout).has('memory'));
  });

  it('fails clearly when nothing is mounted', async () => {
    const fake = await fakeTree('v1');
    await assert.rejects(detectLayout(path.join(fake.root, 'systemd', 'missing'), fake.ops), (err: unknown) =>
      hasCode(err, 'NotFound'),
    );
  });
});
