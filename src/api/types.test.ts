import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isKubeletError } from '../util/errors.ts';
import { hasPodIdentity, missingPodIdentity, toKubeletPod, type Pod } from './types.ts';

const pod = (metadata: Pod['metadata']): Pod => ({ metadata, spec: { containers: [] } });

describe('pod identity', () => {
  it('is complete when uid, name and namespace are all non-empty', () => {
    const p = pod({ name: 'web', namespace: 'default', uid: 'u1' });
    assert.deepEqual(missingPodIdentity(p), []);
    assert.equal(hasPodIdentity(p), true);
    assert.equal(toKubeletPod(p, 'test'), p, 'the same object, neither copied nor changed');
  });

  it('names every missing or empty field, in the order uid, name, namespace', () => {
    assert.deepEqual(missingPodIdentity(pod({})), ['uid', 'name', 'namespace']);
    assert.deepEqual(missingPodIdentity(pod({ name: 'web', namespace: '', uid: 'u1' })), ['namespace']);
    assert.deepEqual(missingPodIdentity(pod({ name: '', namespace: 'ns' })), ['uid', 'name']);
    assert.equal(hasPodIdentity(pod({ name: 'web', namespace: 'ns' })), false);
  });

  it('the checked constructor rejects a pod without identity with InvalidArgument naming the fields', () => {
    assert.throws(
      () => toKubeletPod(pod({ name: 'web' }), 'admit pod'),
      (err: unknown) =>
        isKubeletError(err) &&
        err.code === 'InvalidArgument' &&
        err.message === 'admit pod: pod has no metadata.uid, metadata.namespace',
    );
  });
});
