import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { systemClock, wallAge, wallToMonotonic } from './clock.ts';
import { createManualTimers, createTestClock } from './testing.ts';

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

  it('manual timers fire in due order on monotonic time, whatever the wall clock does', async () => {
    const clock = createTestClock();
    const timers = createManualTimers(clock);
    const fired: string[] = [];
    const t0 = clock.monotonic();
    void timers.sleep(3_000).then(() => fired.push(`b@${clock.monotonic() - t0}`));
    timers.setTimeout(() => fired.push(`a@${clock.monotonic() - t0}`), 1_000);
    const c = timers.setTimeout(() => fired.push('c'), 2_000);
    timers.clearTimeout(c);
    clock.stepWall(-H);
    await timers.runFor(2_500);
    assert.deepEqual(fired, ['a@1000']);
    await timers.runFor(1_000);
    assert.deepEqual(fired, ['a@1000', 'b@3000']);
    assert.equal(clock.monotonic() - t0, 3_500);
    assert.equal(timers.pending(), 0);
  });

  it('manual sleep rejects when its signal aborts', async () => {
    const timers = createManualTimers(createTestClock());
    const ac = new AbortController();
    const p = timers.sleep(1_000, ac.signal);
    ac.abort(new Error('stop'));
    await assert.rejects(p, /stop/);
    assert.equal(timers.pending(), 0);
  });
});
