import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTaints } from './taints.ts';

describe('parseTaints (--register-with-taints)', () => {
  it('parses key=value:Effect and key:Effect', () => {
    assert.deepEqual(parseTaints(['dedicated=gpu:NoSchedule', 'example.com/maint:NoExecute']), [
      { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
      { key: 'example.com/maint', effect: 'NoExecute' },
    ]);
  });

  it('rejects a bad effect, a bad key, and a duplicated key+effect', () => {
    assert.throws(() => parseTaints(['a=b:Sometimes']), /effect must be one of/);
    assert.throws(() => parseTaints(['a=b']), /want key=value:effect/);
    assert.throws(() => parseTaints(['-bad=b:NoSchedule']), /invalid key/);
    assert.throws(() => parseTaints(['a=b:NoSchedule', 'a=c:NoSchedule']), /duplicated/);
  });
});
