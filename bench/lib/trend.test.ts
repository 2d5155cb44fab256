import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { allowedPer10Min, linearFit, summarizeSeries, verdict } from './trend.ts';

describe('linearFit', () => {
  it('recovers the slope and intercept of points on a line', () => {
    const fit = linearFit([0, 10, 20, 30].map((t) => ({ t, v: 3 + 0.5 * t })));
    assert.equal(fit.n, 4);
    assert.ok(Math.abs(fit.slope - 0.5) < 1e-12);
    assert.ok(Math.abs(fit.intercept - 3) < 1e-12);
  });

  it('gives the least-squares line through noisy points', () => {
    // (0,0) (1,1) (2,1) (3,2): slope 0.6, intercept 0.1
    const fit = linearFit([
      { t: 0, v: 0 },
      { t: 1, v: 1 },
      { t: 2, v: 1 },
      { t: 3, v: 2 },
    ]);
    assert.ok(Math.abs(fit.slope - 0.6) < 1e-12);
    assert.ok(Math.abs(fit.intercept - 0.1) < 1e-12);
  });

  it('keeps its precision with epoch-sized times', () => {
    const t0 = 1_795_000_000;
    const fit = linearFit([0, 10, 20].map((dt) => ({ t: t0 + dt, v: 100 - 2 * dt })));
    assert.ok(Math.abs(fit.slope + 2) < 1e-9);
  });

  it('is NaN for fewer than two points or a single instant, and skips non-finite points', () => {
    assert.ok(Number.isNaN(linearFit([{ t: 1, v: 1 }]).slope));
    assert.ok(
      Number.isNaN(
        linearFit([
          { t: 1, v: 1 },
          { t: 1, v: 2 },
        ]).slope,
      ),
    );
    const fit = linearFit([
      { t: 0, v: 1 },
      { t: 5, v: NaN },
      { t: 10, v: 1 },
    ]);
    assert.equal(fit.n, 2);
    assert.equal(fit.slope, 0);
  });
});

describe('flatness', () => {
  it('allows the larger of the absolute and the relative tolerance', () => {
    assert.equal(allowedPer10Min({ absolute: 2, relative: 0.05 }, 10), 2);
    assert.equal(allowedPer10Min({ absolute: 2, relative: 0.05 }, 100), 5);
    assert.equal(allowedPer10Min({ absolute: 2, relative: 0.05 }, -100), 5);
    assert.equal(allowedPer10Min({ absolute: 2, relative: 0.05 }, NaN), 2);
  });

  it('calls a trend within the tolerance flat, and names the direction beyond it', () => {
    assert.equal(verdict(1.9, 2), 'flat');
    assert.equal(verdict(-2, 2), 'flat');
    assert.equal(verdict(2.1, 2), 'grows');
    assert.equal(verdict(-3, 2), 'shrinks');
    assert.equal(verdict(NaN, 2), 'n/a');
  });
});

describe('summarizeSeries', () => {
  it('reports start, middle, end, max and the trend per 10 minutes', () => {
    // One unit per minute for 10 minutes, sampled every minute: +10 per 10 min.
    const points = Array.from({ length: 11 }, (_, i) => ({ t: 60 * i, v: 100 + i }));
    const s = summarizeSeries(points, { absolute: 1, relative: 0.05 });
    assert.equal(s.start, 100);
    assert.equal(s.middle, 105);
    assert.equal(s.end, 110);
    assert.equal(s.max, 110);
    assert.equal(s.mean, 105);
    assert.ok(Math.abs(s.slopePer10Min - 10) < 1e-9);
    assert.equal(s.allowedPer10Min, 5.25);
    assert.equal(s.verdict, 'grows');
  });

  it('sorts by time and calls a sawtooth around a constant flat', () => {
    const points = Array.from({ length: 60 }, (_, i) => ({ t: 10 * i, v: 20 + (i % 6) }));
    const s = summarizeSeries([...points].reverse(), { absolute: 2, relative: 0.05 });
    assert.equal(s.start, 20);
    assert.equal(s.end, 25);
    assert.equal(s.max, 25);
    assert.equal(s.verdict, 'flat');
  });

  it('is n/a without samples', () => {
    const s = summarizeSeries([], { absolute: 1, relative: 0 });
    assert.equal(s.verdict, 'n/a');
    assert.equal(s.n, 0);
  });
});
