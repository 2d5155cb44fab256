import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseLogOptions, type LogOptions } from './log-options.ts';

function ok(query: string): LogOptions {
  const r = parseLogOptions(new URLSearchParams(query));
  assert.ok(r.ok, `expected ${query} to parse: ${r.ok ? '' : r.message}`);
  return r.options;
}

function fails(query: string): { status: number; message: string } {
  const r = parseLogOptions(new URLSearchParams(query));
  assert.ok(!r.ok, `expected ${query} to fail`);
  return r;
}

describe('parseLogOptions', () => {
  it('defaults to the whole log, once, without timestamps', () => {
    assert.deepEqual(ok(''), { follow: false, previous: false, timestamps: false });
  });

  it('decodes booleans as upstream: only 0 and false (any case) are false, even an empty value is true', () => {
    assert.equal(ok('follow=true').follow, true);
    assert.equal(ok('follow=1').follow, true);
    assert.equal(ok('follow=').follow, true);
    assert.equal(ok('follow=yes').follow, true);
    assert.equal(ok('follow=FALSE').follow, false);
    assert.equal(ok('follow=0').follow, false);
    assert.equal(ok('previous=true&timestamps=true').previous, true);
    assert.equal(ok('timestamps=true').timestamps, true);
    assert.equal(ok('follow=false&follow=true').follow, false, 'the first value counts');
  });

  it('decodes the numeric limits', () => {
    assert.deepEqual(ok('tailLines=10&limitBytes=100&sinceSeconds=5'), {
      follow: false,
      previous: false,
      timestamps: false,
      tailLines: 10,
      limitBytes: 100,
      sinceSeconds: 5,
    });
    assert.equal(ok('tailLines=0').tailLines, 0);
    assert.equal(ok('tailLines=%2B7').tailLines, 7);
  });

  it('decodes sinceTime as RFC3339, fractions included', () => {
    assert.deepEqual(ok('sinceTime=2024-01-02T03:04:05Z').sinceTime, {
      sec: Date.UTC(2024, 0, 2, 3, 4, 5) / 1000,
      nsec: 0,
    });
    assert.deepEqual(ok('sinceTime=2024-01-02T05:04:05.25%2B02:00').sinceTime, {
      sec: Date.UTC(2024, 0, 2, 3, 4, 5) / 1000,
      nsec: 250_000_000,
    });
    // An empty value decodes to Go's zero time: set, but filters nothing.
    assert.ok(ok('sinceTime=').sinceTime!.sec < -6e10);
  });

  it('honours the legacy tail parameter, with tail=all meaning no tail', () => {
    assert.equal(ok('tail=5').tailLines, 5);
    assert.equal(ok('tail=5&tailLines=9').tailLines, 5, 'tail wins');
    assert.equal(ok('tail=all&tailLines=9').tailLines, undefined);
    assert.equal(ok('tail=&tailLines=9').tailLines, 9, 'an empty tail is ignored');
    assert.equal(fails('tail=some').status, 400);
  });

  it('answers 400 for values that do not decode', () => {
    for (const q of [
      'tailLines=abc',
      'tailLines=',
      'limitBytes=1.5',
      'sinceSeconds=1e3',
      'tailLines=%2010',
      'sinceTime=yesterday',
      'sinceTime=2024-01-02',
      'limitBytes=9223372036854775808',
      'tailLines=-9223372036854775809',
    ]) {
      const f = fails(q);
      assert.equal(f.status, 400, q);
      assert.match(f.message, /unable to decode query/, q);
    }
  });

  it('answers 422 for decoded but invalid options, as ValidatePodLogOptions', () => {
    assert.deepEqual(fails('tailLines=-1'), {
      ok: false,
      status: 422,
      message: 'invalid request: tailLines: Invalid value: -1: must be greater than or equal to 0',
    });
    assert.equal(fails('limitBytes=0').status, 422);
    assert.equal(fails('limitBytes=-5').status, 422);
    assert.equal(fails('sinceSeconds=0').status, 422);
    const both = fails('sinceSeconds=10&sinceTime=2024-01-02T03:04:05Z');
    assert.equal(both.status, 422);
    assert.match(both.message, /at most one of `sinceTime` or `sinceSeconds`/);
    assert.equal(fails('sinceSeconds=10&sinceTime=').status, 422, 'an empty sinceTime still counts as set');
    const many = fails('tailLines=-1&limitBytes=0');
    assert.match(many.message, /tailLines.*limitBytes/);
  });

  it('keeps huge in-range values usable: clamped to safe integers, never Infinity or NaN', () => {
    const o = ok('tailLines=9223372036854775807&limitBytes=9223372036854775807&timestamps=1');
    assert.equal(o.tailLines, Number.MAX_SAFE_INTEGER);
    assert.equal(o.limitBytes, Number.MAX_SAFE_INTEGER);
    assert.equal(ok('sinceSeconds=9223372036854775807').sinceSeconds, Number.MAX_SAFE_INTEGER);
    const neg = fails('tailLines=-9223372036854775808');
    assert.equal(neg.status, 422);
  });
});
