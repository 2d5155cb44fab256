import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Cgroups } from './cgroupfs.ts';
import { instrumentCgroups } from './instrumented-cgroups.ts';

function fakeCgroups(failApply = false): Cgroups {
  return {
    layout: { mode: 'unified', hierarchies: [] } as unknown as Cgroups['layout'],
    exists: () => Promise.resolve(true),
    existsAnywhere: () => Promise.resolve(true),
    children: () => Promise.resolve([]),
    pids: () => Promise.resolve([]),
    killAll: () => Promise.resolve(),
    apply: () => (failApply ? Promise.reject(new Error('EBUSY')) : Promise.resolve()),
    destroy: () => Promise.resolve(),
  };
}

describe('cgroup manager durations (kubelet_cgroup_manager_duration_seconds)', () => {
  it('times the first apply of a cgroup as create, later ones as update, and destroy; a failure too', async () => {
    const seen: string[] = [];
    let t = 0;
    const cg = instrumentCgroups(
      fakeCgroups(),
      (op, seconds) => seen.push(`${op} ${seconds}`),
      () => (t += 250),
    );
    await cg.apply('kubepods/pod1', {});
    await cg.apply('kubepods/pod1', {});
    await cg.destroy('kubepods/pod1');
    await cg.apply('kubepods/pod1', {});
    assert.deepEqual(seen, ['create 0.25', 'update 0.25', 'destroy 0.25', 'create 0.25']);
    const failing = instrumentCgroups(fakeCgroups(true), (op) => seen.push(`failed ${op}`));
    await assert.rejects(failing.apply('kubepods/pod2', {}), /EBUSY/);
    await assert.rejects(failing.apply('kubepods/pod2', {}), /EBUSY/);
    assert.deepEqual(seen.slice(4), ['failed create', 'failed create']);
  });
});
