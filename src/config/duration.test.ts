import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { formatGoDuration, parseGoDuration, tryParseGoDuration } from './duration.ts';

describe('parseGoDuration', () => {
  const valid: [string, number][] = [
    ['0', 0],
    ['0s', 0],
    ['-0', 0],
    ['1s', 1_000],
    ['20s', 20_000],
    ['1m', 60_000],
    ['1m30s', 90_000],
    ['2m0s', 120_000],
    ['1h', 3_600_000],
    ['1h0m0s', 3_600_000],
    ['1h2m3s4ms', 3_723_004],
    ['250ms', 250],
    ['1.5s', 1_500],
    ['.5s', 500],
    ['1.s', 1_000],
    ['1.5h', 5_400_000],
    ['1000us', 1],
    ['1000\u00b5s', 1],
    ['1000\u03bcs', 1],
    ['1500000ns', 1.5],
    ['1us', 0.001],
    ['+5s', 5_000],
    ['-1s', -1_000],
    ['-1.5m', -90_000],
    ['2562047h', 2562047 * 3_600_000],
  ];
  for (const [input, ms] of valid) {
    it(`reads ${JSON.stringify(input)} as ${ms} ms`, () => {
      assert.equal(parseGoDuration(input, 'syncFrequency'), ms);
    });
  }

  const invalid = [
    '',
    '5',
    '1x',
    's',
    '.s',
    '-',
    '+',
    ' 1s',
    '1s ',
    '1 s',
    '1e3s',
    '1m-1s',
    '1S',
    '1sec',
    '9999999h',
  ];
  for (const input of invalid) {
    it(`rejects ${JSON.stringify(input)}`, () => {
      assert.equal(tryParseGoDuration(input).ok, false);
    });
  }

  it('throws InvalidArgument naming the field and the bad value', () => {
    assert.throws(
      () => parseGoDuration('5x', 'syncFrequency'),
      (err: unknown) => {
        assert.ok(hasCode(err, 'InvalidArgument'));
        assert.match(String(err), /syncFrequency/);
        assert.match(String(err), /"5x"/);
        return true;
      },
    );
  });

  it('says which unit is unknown and when the unit is missing', () => {
    const unknown = tryParseGoDuration('5x');
    assert.ok(!unknown.ok && unknown.reason.includes('unknown unit "x"'));
    const missing = tryParseGoDuration('5');
    assert.ok(!missing.ok && missing.reason.includes('missing unit'));
  });
});

describe('formatGoDuration', () => {
  const cases: [number, string][] = [
    [0, '0s'],
    [20_000, '20s'],
    [60_000, '1m0s'],
    [90_000, '1m30s'],
    [120_000, '2m0s'],
    [3_600_000, '1h0m0s'],
    [1_023_000, '17m3s'],
    [1_500, '1.5s'],
    [250, '250ms'],
    [0.001, '1\u00b5s'],
    [0.000_5, '500ns'],
    [-1_000, '-1s'],
  ];
  for (const [ms, text] of cases) {
    it(`formats ${ms} ms as ${text}, which parses back to the same value`, () => {
      assert.equal(formatGoDuration(ms), text);
      assert.equal(parseGoDuration(text, 'x'), ms);
    });
  }

  it('formats the durations of the image Pulled event as Go does', () => {
    assert.equal(formatGoDuration(0), '0s');
    assert.equal(formatGoDuration(0.5), '500µs');
    assert.equal(formatGoDuration(81), '81ms');
    assert.equal(formatGoDuration(81.25), '81.25ms');
    assert.equal(formatGoDuration(1234), '1.234s');
    assert.equal(formatGoDuration(2000), '2s');
    assert.equal(formatGoDuration(61_500), '1m1.5s');
    assert.equal(formatGoDuration(3_600_000), '1h0m0s');
  });
});
