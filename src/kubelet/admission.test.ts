import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { maxPodsAdmitHandler, runAdmitHandlers, type PodAdmitHandler } from './admission.ts';
import type { Pod } from '../api/types.ts';

const pod = (name: string): Pod => ({ metadata: { name, uid: name }, spec: { containers: [] } });

describe('pod admission', () => {
  it('admits pods while the node has room for them (maxPods)', () => {
    const h = maxPodsAdmitHandler(2);
    assert.deepEqual(h.admit(pod('a'), []), { admit: true });
    assert.deepEqual(h.admit(pod('b'), [pod('a')]), { admit: true });
  });

  it('rejects with OutOfpods and the upstream message once maxPods are active', () => {
    const r = maxPodsAdmitHandler(2).admit(pod('c'), [pod('a'), pod('b')]);
    assert.equal(r.admit, false);
    assert.equal(r.reason, 'OutOfpods');
    assert.equal(r.message, "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2");
  });

  it('walks the handlers in order and reports the first refusal', () => {
    const calls: string[] = [];
    const yes: PodAdmitHandler = { name: 'yes', admit: () => (calls.push('yes'), { admit: true }) };
    const no: PodAdmitHandler = {
      name: 'no',
      admit: () => (calls.push('no'), { admit: false, reason: 'Nope', message: 'no' }),
    };
    const never: PodAdmitHandler = { name: 'never', admit: () => (calls.push('never'), { admit: true }) };
    assert.equal(runAdmitHandlers([yes, no, never], pod('a'), []).reason, 'Nope');
    assert.deepEqual(calls, ['yes', 'no']);
  });
});
