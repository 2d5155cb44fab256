import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  emptyRuntimePodStatus,
  findContainerStatus,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
} from './runtime-pod.ts';

function status(name: string, id: string): RuntimeContainerStatus {
  return {
    id,
    name,
    state: 'running',
    createdAt: 0,
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    reason: '',
    message: '',
    image: 'busybox:1.29',
    imageRef: '',
    hash: '',
    restartCount: 0,
    podSandboxId: 'sb',
    attempt: 0,
    terminationMessagePath: '',
    terminationMessagePolicy: '',
    terminationGracePeriodSeconds: undefined,
  };
}

function podWith(containers: RuntimeContainerStatus[]): RuntimePodStatus {
  return { ...emptyRuntimePodStatus('uid', 'p', 'ns'), containers };
}

describe('findContainerStatus', () => {
  for (const n of [3, 1_000]) {
    it(`returns the newest (first) status of a name among ${n} containers`, () => {
      const list = Array.from({ length: n }, (_, i) => status(`c${i}`, `new-${i}`));
      list.push(status('c1', 'old-1'));
      const pod = podWith(list);
      assert.equal(findContainerStatus(pod, 'c1')?.id, 'new-1');
      assert.equal(findContainerStatus(pod, `c${n - 1}`)?.id, `new-${n - 1}`);
      assert.equal(findContainerStatus(pod, 'missing'), undefined);
    });
  }

  it('sees a status appended after an earlier lookup of the same list', () => {
    const list = Array.from({ length: 100 }, (_, i) => status(`c${i}`, `id-${i}`));
    const pod = podWith(list);
    assert.equal(findContainerStatus(pod, 'late'), undefined);
    list.push(status('late', 'id-late'));
    assert.equal(findContainerStatus(pod, 'late')?.id, 'id-late');
  });
});
