import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cloneJson } from './json.ts';

describe('cloneJson', () => {
  it('copies plain JSON deeply, sharing nothing with the original', () => {
    const pod = {
      metadata: { name: 'p', labels: { a: 'b' } },
      spec: { containers: [{ name: 'c', args: ['x'] }] },
      n: 1,
      t: true,
      z: null,
    };
    const copy = cloneJson(pod);
    assert.deepEqual(copy, pod);
    copy.spec.containers[0]!.args[0] = 'y';
    copy.metadata.labels.a = 'c';
    assert.equal(pod.spec.containers[0]!.args[0], 'x');
    assert.equal(pod.metadata.labels.a, 'b');
  });

  it('copies what is not plain JSON (a Date) faithfully', () => {
    const at = new Date(0);
    const copy = cloneJson({ at });
    assert.ok(copy.at instanceof Date);
    assert.notEqual(copy.at, at);
    assert.equal(copy.at.getTime(), 0);
  });
});
