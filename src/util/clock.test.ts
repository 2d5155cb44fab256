import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { systemClock, wallAge, wallToMonotonic } from './clock.ts';
import { createTestClock } from './testing.ts';

const H = 3_600_000;

describe('clock', () => {
  it('reads the system wall clock and a monotonic clock that never goes back', () => {
    const before = Date.now();
    const wall = systemClock.now();
    assert.ok(wall >= before && wall <= Date.now());
    const a = systemClock.monotonic();
    const b = systemClock.monotonic();
    assert.ok(b >= a);
  });

  it('never reports a negative age for a wall stamp ahead of now (the clock stepped back)', () => {
    assert.equal(wallAge(1_000, 5_000), 4_000);
    assert.equal(wallAge(5_000 + H, 5_000), 0);
  });

  it('places a wall stamp on the monotonic timeline, clamped at now after a backward step', () => {
    const clock = createTestClock();
    const finished = clock.now() - 3_000;
    assert.equal(wallToMonotonic(finished, clock), clock.monotonic() - 3_000);
    clock.stepWall(-H);
    assert.equal(wallToMonotonic(finished, clock), clock.monotonic());
  });

  it('test clock: a wall step moves the wall clock only; advance moves both', () => {
    const clock = createTestClock(10 * H, 100);
    clock.stepWall(2 * H);
    assert.deepEqual([clock.now(), clock.monotonic()], [12 * H, 100]);
    clock.stepWall(-5 * H);
    clock.advance(1_000);
    assert.deepEqual([clock.now(), clock.monotonic()], [7 * H + 1_000, 1_100]);
    assert.throws(() => clock.advance(-1), /does not go back/);
  });
});
