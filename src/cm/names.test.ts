import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { hasCode } from '../util/errors.ts';
import { cleanCgroupName, parsePodCgroupDirName, podCgroupName, qosCgroupNames } from './names.ts';

function pod(
  uid: string,
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> },
): KubeletPod {
  return {
    metadata: { name: 'p', namespace: 'default', uid },
    spec: { containers: [{ name: 'a', image: 'i', ...(resources ? { resources } : {}) }] },
  };
}

describe('cgroup names', () => {
  it('puts kubepods under the cgroup root, with burstable and besteffort below it', () => {
    const names = qosCgroupNames('/');
    assert.deepEqual(
      [names.root, names.guaranteed, names.burstable, names.besteffort],
      ['/', '/kubepods', '/kubepods/burstable', '/kubepods/besteffort'],
    );
    assert.equal(qosCgroupNames('/tskubelet/').guaranteed, '/tskubelet/kubepods');
    assert.equal(qosCgroupNames('').guaranteed, '/kubepods');
    assert.equal(cleanCgroupName('a//b/'), '/a/b');
  });

  it('places Guaranteed pods directly under kubepods and the others under their tier', () => {
    const names = qosCgroupNames('/');
    const limits = { cpu: '1', memory: '64Mi' };
    assert.equal(podCgroupName(names, pod('g1', { requests: limits, limits })), '/kubepods/podg1');
    assert.equal(podCgroupName(names, pod('b1', { requests: { cpu: '1' } })), '/kubepods/burstable/podb1');
    assert.equal(podCgroupName(names, pod('e1')), '/kubepods/besteffort/pode1');
  });

  it('refuses a UID that is not a single safe path component', () => {
    const names = qosCgroupNames('/');
    for (const uid of ['', '..', '../x', 'a/b', '.hidden']) {
      assert.throws(
        () => podCgroupName(names, pod(uid)),
        (err: unknown) => hasCode(err, 'InvalidArgument'),
        uid,
      );
    }
  });

  it('reads the UID back from a pod cgroup directory name, ignoring anything else', () => {
    assert.equal(
      parsePodCgroupDirName('pod0b5e0c3a-1f2e-4c4d-9d55-7a0f2b1c9e11'),
      '0b5e0c3a-1f2e-4c4d-9d55-7a0f2b1c9e11',
    );
    assert.equal(parsePodCgroupDirName('burstable'), undefined);
    assert.equal(parsePodCgroupDirName('pod'), undefined);
    assert.equal(parsePodCgroupDirName('pod..'), undefined);
  });
});
