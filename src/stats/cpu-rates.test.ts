import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createCpuRates } from './cpu-rates.ts';

const S = 1e9; // ns

describe('CPU rates', () => {
  it('gives the rate between two samples, and the same rate for the same sample again', () => {
    const r = createCpuRates();
    assert.equal(r.rate('c', 10 * S, 1 * S, 1), undefined);
    assert.equal(r.rate('c', 12 * S, 2 * S, 2), 0.5e9);
    assert.equal(r.rate('c', 12 * S, 2 * S, 3), 0.5e9);
  });

  it('starts a new baseline from a sample stamped before the last one (the wall clock stepped back)', () => {
    const r = createCpuRates();
    r.rate('c', 3_600 * S, 1 * S, 1);
    assert.equal(r.rate('c', 3_602 * S, 2 * S, 2), 0.5e9);
    // An hour back: the last rate is kept for this sample, the next one measures from it.
    assert.equal(r.rate('c', 4 * S, 3 * S, 3), 0.5e9);
    assert.equal(r.rate('c', 6 * S, 7 * S, 4), 2e9, 'a fresh rate two seconds later, not a frozen one');
  });
});
