import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareStrings } from './compare.ts';

describe('compareStrings', () => {
  it('orders by code unit: upper case before lower case, punctuation before letters', () => {
    assert.deepEqual(['b', 'B', 'a', 'a-b', 'a_b', 'A'].sort(compareStrings), [
      'A',
      'B',
      'a',
      'a-b',
      'a_b',
      'b',
    ]);
  });

  it('orders RFC 3339 timestamps of one format chronologically, and equal strings as equal', () => {
    const ts = ['2026-11-24T10:00:00Z', '2026-01-02T00:00:00Z', '2025-12-31T23:59:59Z'];
    assert.deepEqual([...ts].sort(compareStrings), [ts[2], ts[1], ts[0]]);
    assert.equal(compareStrings('x', 'x'), 0);
  });
});
