import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createRateLimiter } from './rate-limiter.ts';
import { flush } from '../util/testing.ts';

/**
 * The limiter reads time through `now` and sleeps with setTimeout; the test mocks setTimeout and
 * moves both clocks together, so every assertion is about fake time, never the wall clock.
 */
function setup(t: TestContext, qps: number, burst: number) {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let nowMs = 0;
  const limiter = createRateLimiter(qps, burst, () => nowMs);
  return {
    limiter,
    advance: async (ms: number): Promise<void> => {
      nowMs += ms;
      t.mock.timers.tick(ms);
      await flush();
    },
  };
}

/** Tracks how a promise settled, without awaiting it. */
function track(p: Promise<void>) {
  const s: { state: 'pending' | 'fulfilled' | 'rejected'; err?: unknown } = { state: 'pending' };
  p.then(
    () => (s.state = 'fulfilled'),
    (err: unknown) => {
      s.state = 'rejected';
      s.err = err;
    },
  );
  return s;
}

describe('rate limiter (token bucket)', () => {
  it('hands out the burst at once, then one token per 1/qps seconds', async (t) => {
    const { limiter, advance } = setup(t, 2, 3);
    const first = [track(limiter.acquire()), track(limiter.acquire()), track(limiter.acquire())];
    const fourth = track(limiter.acquire());
    const fifth = track(limiter.acquire());
    await flush();
    assert.deepEqual(
      first.map((s) => s.state),
      ['fulfilled', 'fulfilled', 'fulfilled'],
    );
    assert.equal(fourth.state, 'pending');
    assert.equal(limiter.waiting(), 2);

    await advance(499);
    assert.equal(fourth.state, 'pending', 'no token before 500 ms at 2 qps');
    await advance(1);
    assert.equal(fourth.state, 'fulfilled');
    assert.equal(fifth.state, 'pending');
    await advance(500);
    assert.equal(fifth.state, 'fulfilled');
    assert.equal(limiter.waiting(), 0);
  });

  it('saves up at most `burst` tokens while idle', async (t) => {
    const { limiter, advance } = setup(t, 10, 2);
    await Promise.all([limiter.acquire(), limiter.acquire()]);
    await advance(60_000);
    const got = [track(limiter.acquire()), track(limiter.acquire()), track(limiter.acquire())];
    await flush();
    assert.deepEqual(
      got.map((s) => s.state),
      ['fulfilled', 'fulfilled', 'pending'],
    );
    await advance(100);
    assert.equal(got[2]?.state, 'fulfilled');
  });

  it('serves waiters in arrival order', async (t) => {
    const { limiter, advance } = setup(t, 10, 1);
    const order: string[] = [];
    const all = ['a', 'b', 'c', 'd'].map((name) => limiter.acquire().then(() => order.push(name)));
    await flush();
    assert.deepEqual(order, ['a']);
    await advance(100);
    assert.deepEqual(order, ['a', 'b']);
    await advance(100);
    await advance(100);
    await Promise.all(all);
    assert.deepEqual(order, ['a', 'b', 'c', 'd']);
  });

  it('rejects a waiting acquire when its signal aborts, and the next waiter is still served', async (t) => {
    const { limiter, advance } = setup(t, 10, 1);
    await limiter.acquire();
    const ac = new AbortController();
    const aborted = track(limiter.acquire(ac.signal));
    await flush();
    assert.equal(aborted.state, 'pending');
    const reason = new Error('caller gave up');
    ac.abort(reason);
    await flush();
    assert.equal(aborted.state, 'rejected');
    assert.equal(aborted.err, reason);
    assert.equal(limiter.waiting(), 0);

    const next = track(limiter.acquire());
    await advance(100);
    assert.equal(next.state, 'fulfilled', 'the aborted waiter did not keep the token');
  });

  it('rejects an acquire whose signal is already aborted, without spending a token', async (t) => {
    // Upstream (x/time/rate Limiter.WaitN) checks the context before reserving.
    const { limiter } = setup(t, 1, 1);
    const ac = new AbortController();
    ac.abort();
    const aborted = track(limiter.acquire(ac.signal));
    const next = track(limiter.acquire());
    await flush();
    assert.equal(aborted.state, 'rejected');
    assert.equal(next.state, 'fulfilled', 'the token is still there for a live caller');
  });

  it('rejects a queued waiter as soon as its signal aborts, not when its turn comes', async (t) => {
    const { limiter } = setup(t, 1, 1);
    await limiter.acquire();
    const head = track(limiter.acquire()); // waits ~1 s for the next token
    const ac = new AbortController();
    const queued = track(limiter.acquire(ac.signal));
    await flush();
    ac.abort();
    await flush();
    assert.equal(head.state, 'pending');
    assert.equal(queued.state, 'rejected', 'an aborted caller must not wait behind others');
  });

  it('does not limit at all when qps is 0', async () => {
    const limiter = createRateLimiter(0, 0);
    const all = Array.from({ length: 1000 }, () => track(limiter.acquire()));
    await flush(1);
    assert.ok(all.every((s) => s.state === 'fulfilled'));
    assert.equal(limiter.waiting(), 0);
  });
});

describe('rate limiter while the wall clock steps', () => {
  it('serves the next request 1/qps after a 1 h backward wall step, not an hour later (default clock)', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.UTC(2026, 10, 24, 12) });
    let mono = 1_000;
    t.mock.method(performance, 'now', () => mono);
    const limiter = createRateLimiter(5, 10);
    for (let i = 0; i < 10; i++) await limiter.acquire();
    t.mock.timers.setTime(Date.now() - 3_600_000);
    const next = track(limiter.acquire());
    await flush();
    assert.equal(next.state, 'pending', 'the burst is spent');
    mono += 200;
    t.mock.timers.tick(200);
    await flush();
    assert.equal(next.state, 'fulfilled');
  });

  it('refills nothing when its clock goes back', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let nowMs = 10_000;
    const limiter = createRateLimiter(5, 1, () => nowMs);
    await limiter.acquire();
    nowMs -= 3_600_000;
    const next = track(limiter.acquire());
    await flush();
    assert.equal(next.state, 'pending');
    nowMs += 200;
    t.mock.timers.tick(200);
    await flush();
    assert.equal(next.state, 'fulfilled', 'one token 200 ms later, no hour-long debt');
  });
});
