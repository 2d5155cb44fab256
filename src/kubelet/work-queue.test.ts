import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTestClock } from '../util/testing.ts';
import { createWorkQueue } from './work-queue.ts';

const H = 3_600_000;

describe('work queue', () => {
  it('hands out a pod when its delay is over, once; re-enqueueing moves its due time', () => {
    const clock = createTestClock();
    const q = createWorkQueue(clock.monotonic);
    q.enqueue('a', 10_000);
    q.enqueue('b', 5_000);
    clock.advance(5_000);
    assert.deepEqual(q.takeDue(clock.monotonic()), ['b']);
    q.enqueue('a', 20_000);
    clock.advance(10_000);
    assert.deepEqual(q.takeDue(clock.monotonic()), []);
    clock.advance(10_000);
    assert.deepEqual(q.takeDue(clock.monotonic()), ['a']);
    assert.equal(q.size(), 0);
  });

  for (const stepMs of [-H, 2 * H]) {
    it(`keeps due times across a ${stepMs / H} h wall step: nothing early, nothing held back`, () => {
      const clock = createTestClock();
      const q = createWorkQueue(clock.monotonic);
      q.enqueue('resync', 60_000);
      q.enqueue('backoff-end', 10_000);
      clock.stepWall(stepMs);
      assert.deepEqual(q.takeDue(clock.monotonic()), [], 'nothing due at once');
      clock.advance(10_000);
      assert.deepEqual(q.takeDue(clock.monotonic()), ['backoff-end']);
      clock.advance(50_000);
      assert.deepEqual(q.takeDue(clock.monotonic()), ['resync']);
    });
  }
});
