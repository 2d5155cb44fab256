import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { nullLogger } from '../util/logger.ts';
import { fakeTimeline } from '../timeline/testing.ts';
import { createPodWorkers, type PodSyncHandlers } from './pod-workers.ts';
import { buildPod } from '../../test/kit/pod.ts';

const pod: KubeletPod = buildPod('web', { namespace: 'ns', uid: 'u1' });

/** Handlers that finish at once; `terminal` makes the next sync report a terminal phase. */
function handlers(terminal: boolean): PodSyncHandlers {
  return {
    syncPod: () => Promise.resolve({ terminal }),
    syncTerminatingPod: () => Promise.resolve(),
    syncTerminatedPod: () => Promise.resolve(),
    onSyncError: () => undefined,
  };
}

it('records kill-requested once when a kill arrives, and forgets the timeline with the worker', async () => {
  const timeline = fakeTimeline();
  const workers = createPodWorkers(handlers(false), nullLogger, { timeline });
  workers.update({ type: 'sync', pod });
  await workers.idle();
  workers.update({ type: 'kill', uid: 'u1', pod });
  workers.update({ type: 'kill', uid: 'u1', pod, gracePeriodOverride: 0 }); // already terminating
  await workers.idle();
  assert.deepEqual(timeline.stepsOf('u1'), ['kill-requested']);
  assert.equal(workers.phase('u1'), 'terminated');
  workers.forget('u1');
  assert.deepEqual(timeline.forgotten, ['u1']);
});

it('records kill-requested when the pod reaches a terminal phase by itself', async () => {
  const timeline = fakeTimeline();
  const workers = createPodWorkers(handlers(true), nullLogger, { timeline });
  workers.update({ type: 'sync', pod });
  await workers.idle();
  assert.deepEqual(timeline.stepsOf('u1'), ['kill-requested']);
  assert.equal(workers.phase('u1'), 'terminated');
});
