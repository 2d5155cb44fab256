import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BACKOFF_INITIAL_MS, BACKOFF_MAX_MS } from '../config/defaults.ts';
import { backoffDelay, backoffSteps, createBackoff } from './backoff.ts';
import { createTestClock } from './testing.ts';

const S = 1_000;

describe('createBackoff (upstream flowcontrol.Backoff)', () => {
  it('uses the kubelet defaults: 10s initial, 300s max', () => {
    assert.equal(BACKOFF_INITIAL_MS, 10 * S);
    assert.equal(BACKOFF_MAX_MS, 300 * S);
    const b = createBackoff();
    assert.equal(b.next('k', 0, 0), 10 * S);
  });

  it('has no delay for a key it has never seen', () => {
    const b = createBackoff();
    assert.equal(b.get('k'), 0);
    assert.equal(b.isInBackoffSince('k', 0, 0), false);
  });

  it('doubles the delay on every failure up to the cap', () => {
    const b = createBackoff(10 * S, 300 * S);
    const seen: number[] = [];
    let now = 0;
    for (let i = 0; i < 8; i++) {
      now += S;
      seen.push(b.next('k', now, now));
    }
    assert.deepEqual(
      seen.map((d) => d / S),
      [10, 20, 40, 80, 160, 300, 300, 300],
    );
    assert.equal(b.get('k'), 300 * S);
  });

  it('keeps keys independent', () => {
    const b = createBackoff(10 * S, 300 * S);
    b.next('a', 0, 0);
    b.next('a', 1, 1);
    b.next('b', 1, 1);
    assert.equal(b.get('a'), 20 * S);
    assert.equal(b.get('b'), 10 * S);
  });

  // kuberuntime doBackOff: if IsInBackOffSince(key, finishedAt) → skip the start; otherwise Next(key,
  // finishedAt) and start. The first crash therefore restarts at once and only arms the entry.
  it('lets the first restart through at once and holds back the second one (doBackOff sequence)', () => {
    const b = createBackoff(10 * S, 300 * S);
    const doBackOff = (finishedAt: number, now: number) => {
      if (b.isInBackoffSince('pod/c', finishedAt, now)) return 'backoff';
      b.next('pod/c', finishedAt, now);
      return 'start';
    };
    assert.equal(doBackOff(1 * S, 1 * S), 'start');
    assert.equal(b.get('pod/c'), 10 * S);
    // Crashes again right after: 10s window from its finish time.
    assert.equal(doBackOff(2 * S, 3 * S), 'backoff');
    assert.equal(doBackOff(2 * S, 11 * S), 'backoff');
    assert.equal(doBackOff(2 * S, 12 * S), 'start');
    assert.equal(b.get('pod/c'), 20 * S);
    assert.equal(doBackOff(13 * S, 32 * S), 'backoff');
    assert.equal(doBackOff(13 * S, 33 * S), 'start');
    assert.equal(b.get('pod/c'), 40 * S);
  });

  it('measures the window from the event time, not from the last update', () => {
    const b = createBackoff(10 * S, 300 * S);
    b.next('k', 0, 100 * S);
    assert.equal(b.isInBackoffSince('k', 95 * S, 104 * S), true);
    assert.equal(b.isInBackoffSince('k', 95 * S, 105 * S), false);
  });

  it('starts over from the initial delay when the event is more than 2×max after the last update', () => {
    const b = createBackoff(10 * S, 300 * S);
    for (let i = 0; i < 6; i++) b.next('k', 0, 0);
    assert.equal(b.get('k'), 300 * S);
    // Exactly 2×max is not yet expired (upstream compares with >).
    assert.equal(b.next('k', 600 * S, 600 * S), 300 * S);
    assert.equal(b.next('k', 600 * S + 600 * S + 1, 1_300 * S), 10 * S);
    assert.equal(b.get('k'), 10 * S);
  });

  it('is not in back-off for an event long after the entry went stale', () => {
    const b = createBackoff(10 * S, 300 * S);
    b.next('k', 0, 0);
    // The event happened 2×max + 1 ms after the last update: the entry no longer applies.
    const event = 600 * S + 1;
    assert.equal(b.isInBackoffSince('k', event, event + 1), false);
  });

  it('forgets on reset', () => {
    const b = createBackoff(10 * S, 300 * S);
    b.next('k', 0, 0);
    b.next('k', 0, 0);
    b.reset('k');
    assert.equal(b.get('k'), 0);
    assert.equal(b.next('k', 1, 1), 10 * S);
  });

  it('garbage-collects only entries idle for more than 2×max', () => {
    const b = createBackoff(10 * S, 300 * S);
    b.next('old', 0, 0);
    b.next('fresh', 500 * S, 500 * S);
    b.gc(600 * S);
    assert.deepEqual([...b.entries().keys()].sort(), ['fresh', 'old']);
    b.gc(600 * S + 1);
    assert.deepEqual([...b.entries().keys()], ['fresh']);
    assert.equal(b.get('old'), 0);
  });

  it('exposes entries with their delay and last update time', () => {
    const b = createBackoff(10 * S, 300 * S);
    b.next('k', 1, 7 * S);
    assert.deepEqual(b.entries().get('k'), { delayMs: 10 * S, lastUpdateMs: 7 * S });
  });

  it('restores saved entries, clamping the delay into [initial, max]', () => {
    const b = createBackoff(10 * S, 300 * S);
    b.restore('low', 1, 5 * S);
    b.restore('high', 10_000 * S, 5 * S);
    b.restore('mid', 40 * S, 5 * S);
    assert.equal(b.get('low'), 10 * S);
    assert.equal(b.get('high'), 300 * S);
    assert.equal(b.get('mid'), 40 * S);
    assert.deepEqual(b.entries().get('mid'), { delayMs: 40 * S, lastUpdateMs: 5 * S });
    // A restored entry continues doubling from where it was.
    assert.equal(b.next('mid', 6 * S, 6 * S), 80 * S);
  });

  it('pins an event stamp on the monotonic clock: a later wall step does not move it', () => {
    const b = createBackoff(10 * S, 300 * S);
    const clock = createTestClock();
    const finished = clock.now() - 2 * S;
    const at = b.eventTime('k', finished, clock);
    assert.equal(at, clock.monotonic() - 2 * S);
    clock.stepWall(-3_600 * S);
    clock.advance(5 * S);
    assert.equal(b.eventTime('k', finished, clock), at);
    clock.stepWall(7_200 * S);
    assert.equal(b.eventTime('k', finished, clock), at);
    // A new event of the key is placed afresh; other keys are independent.
    assert.equal(b.eventTime('k', clock.now(), clock), clock.monotonic());
    assert.equal(b.eventTime('other', finished, clock), clock.monotonic() - 3_600 * S - 7 * S);
  });

  it('places a stamp ahead of the wall clock (it stepped back since) at now, never in the future', () => {
    const b = createBackoff(10 * S, 300 * S);
    const clock = createTestClock();
    const finished = clock.now();
    clock.stepWall(-3_600 * S);
    assert.equal(b.eventTime('k', finished, clock), clock.monotonic());
  });

  it('forgets pinned stamps with their entry: on reset, and at gc once idle for 2×max', () => {
    const b = createBackoff(10 * S, 300 * S);
    const clock = createTestClock();
    const stamp = clock.now();
    b.eventTime('k', stamp, clock);
    b.reset('k');
    clock.stepWall(-3_600 * S);
    assert.equal(b.eventTime('k', stamp, clock), clock.monotonic(), 'placed afresh after reset');
    b.gc(clock.monotonic() + 600 * S + 1);
    clock.stepWall(3_600 * S);
    clock.advance(S);
    assert.equal(b.eventTime('k', stamp, clock), clock.monotonic() - S, 'placed afresh after gc');
  });
});

describe('backoffSteps and backoffDelay (upstream wait.Backoff)', () => {
  it('steps from the initial delay, doubling up to the cap, and starts over after reset', () => {
    const steps = backoffSteps({ initialMs: 100, maxMs: 700 });
    assert.deepEqual(
      [1, 2, 3, 4, 5].map(() => steps.step()),
      [100, 200, 400, 700, 700],
    );
    steps.reset();
    assert.equal(steps.step(), 100);
  });

  it('grows without bound when no cap is given, by another factor when one is', () => {
    const steps = backoffSteps({ initialMs: 10, factor: 3 });
    assert.deepEqual(
      [1, 2, 3, 4].map(() => steps.step()),
      [10, 30, 90, 270],
    );
  });

  it('answers the n-th delay directly, capped, and stays finite after any number of failures', () => {
    assert.deepEqual(
      [0, 1, 2, 3].map((n) => backoffDelay(n, { initialMs: 800, maxMs: 3_000 })),
      [800, 1_600, 3_000, 3_000],
    );
    assert.equal(backoffDelay(10_000, { initialMs: 800, maxMs: 30_000 }), 30_000);
    assert.equal(backoffDelay(10_000, { initialMs: 0, maxMs: 30_000 }), 0);
  });
});
