import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createKeyedLock } from './keyed-lock.ts';

describe('createKeyedLock', () => {
  it('runs operations on one key one at a time in arrival order, other keys alongside, and survives a failure', async () => {
    const lock = createKeyedLock();
    const log: string[] = [];
    let release = (): void => {};
    const gate = new Promise<void>((r) => (release = r));
    const first = lock('a', async () => {
      log.push('a1 start');
      await gate;
      log.push('a1 end');
      throw new Error('a1 failed');
    });
    const second = lock('a', () => {
      log.push('a2');
      return Promise.resolve(2);
    });
    const other = lock('b', () => {
      log.push('b1');
      return Promise.resolve('b');
    });
    assert.equal(await other, 'b');
    assert.deepEqual(log, ['a1 start', 'b1'], 'b ran while a1 was in flight; a2 waited');
    release();
    await assert.rejects(first, /a1 failed/);
    assert.equal(await second, 2);
    assert.deepEqual(log, ['a1 start', 'b1', 'a1 end', 'a2']);
  });
});
