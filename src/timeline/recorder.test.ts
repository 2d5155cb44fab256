import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { createTimelineRecorder, noopTimeline } from './recorder.ts';
import { registerStepDurationHistogram, STEP_DURATION_METRIC } from './metrics.ts';
import type { TimelineStep } from './types.ts';

function clocks(startWall = Date.UTC(2026, 10, 24, 20, 0, 0)) {
  let mono = 1000;
  return {
    now: () => startWall + (mono - 1000),
    monotonic: () => mono,
    advance(ms: number) {
      mono += ms;
    },
  };
}

test('serves the steps of a pod in order with offsets from its first step and wall times', () => {
  const c = clocks();
  const t = createTimelineRecorder(c);
  t.begin('u1', 'default', 'web', 'file');
  c.advance(5);
  t.record('u1', 'admitted');
  c.advance(100.04);
  t.record('u1', 'image-pull-done', { container: 'main', image: 'busybox:1.29', bytes: 42, cached: false });
  const tl = t.findByName('default', 'web');
  assert.ok(tl);
  assert.equal(tl.apiVersion, 'tskubelet.io/v1alpha1');
  assert.equal(tl.kind, 'PodTimeline');
  assert.equal(tl.uid, 'u1');
  assert.equal(tl.droppedSteps, 0);
  assert.equal(tl.attempts.length, 1);
  assert.deepEqual(tl.attempts[0], {
    attempt: 1,
    steps: [
      { step: 'seen', at: '2026-11-24T20:00:00.000Z', offsetMs: 0, source: 'file' },
      { step: 'admitted', at: '2026-11-24T20:00:00.005Z', offsetMs: 5 },
      {
        step: 'image-pull-done',
        at: '2026-11-24T20:00:00.105Z',
        offsetMs: 105,
        container: 'main',
        image: 'busybox:1.29',
        bytes: 42,
        cached: false,
      },
    ],
  });
});

test('a second sandbox opens a new attempt; steps before the first sandbox belong to attempt 1', () => {
  const t = createTimelineRecorder(clocks());
  t.begin('u1', 'ns', 'p', 'api');
  t.record('u1', 'admitted');
  t.record('u1', 'sandbox-requested');
  t.record('u1', 'sandbox-created');
  t.record('u1', 'kill-requested');
  t.record('u1', 'sandbox-requested');
  t.record('u1', 'sandbox-created');
  const tl = t.get('u1');
  assert.ok(tl);
  assert.deepEqual(
    tl.attempts.map((a) => [a.attempt, a.steps.map((s) => s.step)]),
    [
      [1, ['seen', 'admitted', 'sandbox-requested', 'sandbox-created', 'kill-requested']],
      [2, ['sandbox-requested', 'sandbox-created']],
    ],
  );
});

test('the ring keeps the newest steps of an attempt and counts the dropped ones', () => {
  const c = clocks();
  const t = createTimelineRecorder({ ...c, stepsPerAttempt: 4 });
  t.begin('u1', 'ns', 'p', 'file');
  for (let i = 0; i < 6; i++) {
    c.advance(1);
    t.record('u1', 'container-started', { container: `c${i}` });
  }
  const tl = t.get('u1');
  assert.ok(tl);
  assert.equal(tl.droppedSteps, 3);
  assert.deepEqual(
    tl.attempts[0]?.steps.map((s) => s.container),
    ['c2', 'c3', 'c4', 'c5'],
  );
  const offsets = tl.attempts[0]?.steps.map((s) => s.offsetMs) ?? [];
  assert.deepEqual(offsets, [3, 4, 5, 6]);
});

test('only the newest attempts are kept; the dropped attempts count as dropped steps', () => {
  const t = createTimelineRecorder({ ...clocks(), attemptsPerPod: 2 });
  t.begin('u1', 'ns', 'p', 'file');
  for (let i = 0; i < 3; i++) {
    t.record('u1', 'sandbox-requested');
    t.record('u1', 'sandbox-created');
  }
  const tl = t.get('u1');
  assert.ok(tl);
  assert.deepEqual(
    tl.attempts.map((a) => a.attempt),
    [2, 3],
  );
  assert.equal(tl.droppedSteps, 3); // attempt 1: seen, sandbox-requested, sandbox-created
});

test('steps for a pod never begun are ignored (orphans leave nothing behind)', () => {
  const t = createTimelineRecorder(clocks());
  t.record('orphan', 'container-stopped', { container: 'x' });
  t.recordFirst('orphan', 'ready');
  assert.equal(t.get('orphan'), undefined);
});

test('recordFirst records a step once per attempt and per container or volume', () => {
  const t = createTimelineRecorder(clocks());
  t.begin('u1', 'ns', 'p', 'file');
  t.recordFirst('u1', 'volume-ready', { volume: 'a' });
  t.recordFirst('u1', 'volume-ready', { volume: 'a' });
  t.recordFirst('u1', 'volume-ready', { volume: 'b' });
  t.recordFirst('u1', 'ready');
  t.recordFirst('u1', 'ready');
  t.record('u1', 'sandbox-requested');
  t.record('u1', 'sandbox-requested');
  t.recordFirst('u1', 'ready');
  const tl = t.get('u1');
  assert.deepEqual(
    tl?.attempts.map((a) => a.steps.map((s) => s.step)),
    [
      ['seen', 'volume-ready', 'volume-ready', 'ready', 'sandbox-requested'],
      ['sandbox-requested', 'ready'],
    ],
  );
});

test('forget drops the pod from the live set; it stays readable among the recently forgotten', () => {
  const t = createTimelineRecorder({ ...clocks(), recentlyForgotten: 2 });
  for (const uid of ['a', 'b', 'c']) {
    t.begin(uid, 'ns', uid, 'file');
    t.forget(uid);
  }
  t.record('c', 'ready'); // forgotten: no longer recorded
  assert.equal(t.get('a'), undefined, 'the oldest forgotten timeline is dropped');
  assert.deepEqual(
    t.get('c')?.attempts[0]?.steps.map((s) => s.step),
    ['seen'],
  );
  assert.equal(t.findByName('ns', 'b')?.uid, 'b');
});

test('findByName prefers the live pod, then the newest of that name', () => {
  const t = createTimelineRecorder(clocks());
  t.begin('old', 'ns', 'web', 'file');
  t.forget('old');
  assert.equal(t.findByName('ns', 'web')?.uid, 'old');
  t.begin('new', 'ns', 'web', 'file');
  assert.equal(t.findByName('ns', 'web')?.uid, 'new');
  assert.equal(t.findByName('other', 'web'), undefined);
});

test('live timelines are bounded: beyond the limit the oldest is forgotten', () => {
  const t = createTimelineRecorder({ ...clocks(), maxLivePods: 2 });
  t.begin('a', 'ns', 'a', 'file');
  t.begin('b', 'ns', 'b', 'file');
  t.begin('c', 'ns', 'c', 'file');
  t.record('a', 'admitted');
  assert.deepEqual(
    t.get('a')?.attempts[0]?.steps.map((s) => s.step),
    ['seen'],
  );
});

test('observes the seconds since the previous step of the same attempt, not across attempts', () => {
  const c = clocks();
  const seen: [TimelineStep, number][] = [];
  const t = createTimelineRecorder({ ...c, observe: (step, s) => seen.push([step, s]) });
  t.begin('u1', 'ns', 'p', 'file');
  c.advance(250);
  t.record('u1', 'sandbox-requested');
  c.advance(1500);
  t.record('u1', 'sandbox-created');
  c.advance(10);
  t.record('u1', 'sandbox-requested');
  assert.deepEqual(seen, [
    ['sandbox-requested', 0.25],
    ['sandbox-created', 1.5],
  ]);
});

test('the histogram exposes one series per step on the registry', async () => {
  const registry = new Registry();
  const observe = registerStepDurationHistogram(registry);
  observe('sandbox-created', 0.08);
  observe('sandbox-created', 0.2);
  observe('container-started', 0.003);
  const text = await registry.metrics();
  assert.match(text, new RegExp(`# HELP ${STEP_DURATION_METRIC} `));
  assert.match(text, new RegExp(`${STEP_DURATION_METRIC}_count\\{step="sandbox-created"\\} 2`));
  assert.match(text, new RegExp(`${STEP_DURATION_METRIC}_bucket\\{le="0.004",step="container-started"\\} 1`));
});

test('the no-op recorder keeps nothing', () => {
  noopTimeline.begin('u', 'ns', 'p', 'file');
  noopTimeline.record('u', 'ready');
  assert.equal(noopTimeline.get('u'), undefined);
  assert.equal(noopTimeline.findByName('ns', 'p'), undefined);
});

test('a pod’s first step is at offset 0 even when the clock moves between every reading', () => {
  let mono = 1000;
  const t = createTimelineRecorder({ now: () => Date.now(), monotonic: () => (mono += 0.3) });
  t.begin('u1', 'default', 'web', 'file');
  t.record('u1', 'admitted');
  const steps = t.get('u1')?.attempts[0]?.steps;
  assert.equal(steps?.[0]?.offsetMs, 0);
  assert.ok((steps?.[1]?.offsetMs ?? 0) > 0);
});
