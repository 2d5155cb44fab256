import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { churnPlan, parseDurationS, phaseAt, warmupFor } from './churn-schedule.ts';

describe('parseDurationS', () => {
  it('reads seconds, minutes and hours', () => {
    assert.equal(parseDurationS('180'), 180);
    assert.equal(parseDurationS('180s'), 180);
    assert.equal(parseDurationS('30m'), 1800);
    assert.equal(parseDurationS('1h'), 3600);
    assert.equal(parseDurationS(' 1.5m '), 90);
  });

  it('refuses anything else', () => {
    for (const bad of ['', '30 min', '-5', '0', 'm', '3d']) assert.throws(() => parseDurationS(bad), bad);
  });
});

describe('churnPlan', () => {
  it('plans the quick run: 18 rounds, a baseline, then samples between rounds through the drain', () => {
    const p = churnPlan(180, 90);
    assert.equal(p.rounds, 18);
    assert.equal(p.churnS, 180);
    assert.equal(p.warmupS, 60);
    assert.deepEqual(p.sampleTimes.slice(0, 4), [0, 5, 15, 25]);
    assert.equal(p.sampleTimes[p.sampleTimes.length - 1], 265);
    assert.equal(p.sampleTimes.length, 1 + 27);
  });

  it('plans the full run with a five-minute warm-up', () => {
    const p = churnPlan(1800, 90);
    assert.equal(p.rounds, 180);
    assert.equal(p.warmupS, 300);
    assert.equal(p.sampleTimes.filter((t) => phaseAt(p, t) === 'churn').length, 180);
  });

  it('rounds a duration down to whole rounds, at least one', () => {
    assert.equal(churnPlan(185, 0).churnS, 180);
    assert.equal(churnPlan(3, 0).rounds, 1);
  });

  it('names the phase of a sample time', () => {
    const p = churnPlan(180, 90);
    assert.equal(phaseAt(p, 0), 'baseline');
    assert.equal(phaseAt(p, 175), 'churn');
    assert.equal(phaseAt(p, 185), 'drain');
  });
});

describe('warmupFor', () => {
  it('is a fifth of the churn within one to five minutes, at most half the churn', () => {
    assert.equal(warmupFor(180), 60);
    assert.equal(warmupFor(600), 120);
    assert.equal(warmupFor(3600), 300);
    assert.equal(warmupFor(60), 30);
  });
});
