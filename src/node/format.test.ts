import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatBinary, formatDecimal, formatDecimalMilli } from '../api/quantity-format.ts';
import { formatMicroTime, formatTime } from './format.ts';

describe('quantity formatting matches the API server canonical form', () => {
  it('formats bytes with the largest exact binary suffix', () => {
    assert.equal(formatBinary(0), '0');
    assert.equal(formatBinary(512), '512');
    assert.equal(formatBinary(1024), '1Ki');
    assert.equal(formatBinary(100 * 1024 * 1024), '100Mi');
    assert.equal(formatBinary(24576000 * 1024), '24000Mi');
    assert.equal(formatBinary(24575996 * 1024), '24575996Ki');
    assert.equal(formatBinary(47093746742), '47093746742');
    assert.equal(formatBinary(2 ** 30), '1Gi');
  });

  it('formats cpu millicores and counts as DecimalSI', () => {
    assert.equal(formatDecimalMilli(2000), '2');
    assert.equal(formatDecimalMilli(1500), '1500m');
    assert.equal(formatDecimalMilli(100), '100m');
    assert.equal(formatDecimalMilli(0), '0');
    assert.equal(formatDecimal(110), '110');
    assert.equal(formatDecimal(1000), '1k');
    assert.equal(formatDecimal(250), '250');
  });
});

describe('timestamps', () => {
  it('writes metav1.Time to the second and MicroTime to the microsecond', () => {
    const ms = Date.parse('2026-11-22T01:02:03.123Z');
    assert.equal(formatTime(ms), '2026-11-22T01:02:03Z');
    assert.equal(formatMicroTime(ms), '2026-11-22T01:02:03.123000Z');
  });
});
