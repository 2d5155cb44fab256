import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { AsyncQueue } from '../util/async-queue.ts';
import { hasCode } from '../util/errors.ts';
import { flush } from '../util/testing.ts';
import { createStopPod } from './stop-pod.ts';
import { buildPod } from '../../test/kit/pod.ts';
import type { LoopEvent } from './sync-loop.ts';

const pod: KubeletPod = buildPod('web', { namespace: 'ns', containers: ['app'] });

describe('stop pod', () => {
  it('waits the whole 1.5 × grace period for the worker across a 2 h forward wall step', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.UTC(2026, 10, 24, 12) });
    let mono = 1_000;
    t.mock.method(performance, 'now', () => mono);
    let phase: 'syncing' | 'terminating' | 'terminated' = 'terminating';
    const queue = new AsyncQueue<LoopEvent>(10);
    const stop = createStopPod(queue, { phase: () => phase }, new AbortController().signal);
    let settled = 'pending';
    stop(pod, 20, { reason: 'Evicted', message: 'm' }).then(
      () => (settled = 'ok'),
      (err: unknown) => (settled = hasCode(err, 'DeadlineExceeded') ? 'deadline' : String(err)),
    );
    const passTime = async (ms: number) => {
      for (let i = 0; i < ms / 100; i++) {
        mono += 100;
        t.mock.timers.tick(100);
        await flush(2);
      }
    };
    t.mock.timers.setTime(Date.now() + 2 * 3_600_000);
    await passTime(20_000);
    assert.equal(settled, 'pending', 'still within 30 s');
    phase = 'terminated';
    await passTime(200);
    assert.equal(settled, 'ok');
  });
});
