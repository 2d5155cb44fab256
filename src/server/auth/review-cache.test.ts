import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createReviewCache } from './review-cache.ts';

describe('review cache', () => {
  it('shares one lookup per key and reuses the answer for its TTL', async () => {
    let mono = 0;
    let lookups = 0;
    const cache = createReviewCache<string>({ ttlMs: () => 1_000, maxEntries: 10, monotonic: () => mono });
    const lookup = () => Promise.resolve(`answer-${++lookups}`);
    assert.deepEqual(await Promise.all([cache.get('k', lookup), cache.get('k', lookup)]), [
      'answer-1',
      'answer-1',
    ]);
    mono += 999;
    assert.equal(await cache.get('k', lookup), 'answer-1');
    mono += 1;
    assert.equal(await cache.get('k', lookup), 'answer-2');
  });

  for (const stepMs of [-3_600_000, 7_200_000]) {
    it(`keeps an answer for its TTL exactly, across a ${stepMs / 3_600_000} h wall step (default clock)`, async (t) => {
      t.mock.timers.enable({ apis: ['Date'], now: Date.UTC(2026, 10, 24, 12) });
      let mono = 1_000;
      t.mock.method(performance, 'now', () => mono);
      let lookups = 0;
      const cache = createReviewCache<string>({ ttlMs: () => 5 * 60_000, maxEntries: 10 });
      const lookup = () => Promise.resolve(`answer-${++lookups}`);
      await cache.get('k', lookup);
      t.mock.timers.setTime(Date.now() + stepMs);
      mono += 5 * 60_000 - 1;
      assert.equal(await cache.get('k', lookup), 'answer-1', 'still within the TTL');
      mono += 1;
      assert.equal(await cache.get('k', lookup), 'answer-2', 'asked again once the TTL is over');
    });
  }
});
