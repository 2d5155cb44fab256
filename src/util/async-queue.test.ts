import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AsyncQueue } from './async-queue.ts';
import { hasCode } from './errors.ts';

async function drain<T>(q: AsyncQueue<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of q) out.push(item);
  return out;
}

describe('AsyncQueue', () => {
  it('refuses a non-positive capacity', () => {
    assert.throws(
      () => new AsyncQueue<number>(0),
      (err: unknown) => hasCode(err, 'InvalidArgument'),
    );
    assert.throws(
      () => new AsyncQueue<number>(-1),
      (err: unknown) => hasCode(err, 'InvalidArgument'),
    );
  });

  it('delivers items in FIFO order', async () => {
    const q = new AsyncQueue<number>(10);
    for (const n of [1, 2, 3, 4]) assert.equal(q.push(n), true);
    q.close();
    assert.deepEqual(await drain(q), [1, 2, 3, 4]);
  });

  it('returns false and drops the item when full, without blocking', () => {
    const q = new AsyncQueue<string>(2);
    assert.equal(q.push('a'), true);
    assert.equal(q.push('b'), true);
    assert.equal(q.push('c'), false);
    assert.equal(q.length, 2);
  });

  it('accepts items again once the consumer made room', async () => {
    const q = new AsyncQueue<string>(1);
    assert.equal(q.push('a'), true);
    assert.equal(q.push('b'), false);
    const it = q[Symbol.asyncIterator]();
    assert.deepEqual(await it.next(), { value: 'a', done: false });
    assert.equal(q.push('c'), true);
    assert.deepEqual(await it.next(), { value: 'c', done: false });
  });

  it('hands an item straight to a waiting consumer, even past capacity bookkeeping', async () => {
    const q = new AsyncQueue<number>(1);
    const it = q[Symbol.asyncIterator]();
    const next = it.next();
    assert.equal(q.push(7), true);
    assert.equal(q.length, 0);
    assert.deepEqual(await next, { value: 7, done: false });
  });

  it('ends iteration after the queued items once closed', async () => {
    const q = new AsyncQueue<number>(5);
    q.push(1);
    q.push(2);
    q.close();
    assert.deepEqual(await drain(q), [1, 2]);
  });

  it('wakes a waiting consumer with done on close', async () => {
    const q = new AsyncQueue<number>(5);
    const it = q[Symbol.asyncIterator]();
    const next = it.next();
    q.close();
    assert.deepEqual(await next, { value: undefined, done: true });
  });

  it('refuses pushes after close', async () => {
    const q = new AsyncQueue<number>(5);
    q.close();
    assert.equal(q.push(1), false);
    assert.deepEqual(await drain(q), []);
  });

  it('feeds a for-await consumer that runs alongside the producer', async () => {
    const q = new AsyncQueue<number>(2);
    const consumed = drain(q);
    for (let i = 0; i < 5; i++) {
      assert.equal(q.push(i), true);
      // Let the consumer take the item before the next push.
      await new Promise<void>((r) => setImmediate(r));
    }
    q.close();
    assert.deepEqual(await consumed, [0, 1, 2, 3, 4]);
  });
});
