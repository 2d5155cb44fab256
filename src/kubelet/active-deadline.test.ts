import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '../api/types.ts';
import { activeDeadlineRemainingMs, deadlineExceededStatus } from './active-deadline.ts';
import { buildPod } from '../../test/kit/pod.ts';

const pod = (activeDeadlineSeconds?: number): Pod =>
  buildPod('p', {
    uid: 'u',
    ...(activeDeadlineSeconds === undefined ? {} : { spec: { activeDeadlineSeconds } }),
  });
const start = '2026-01-01T00:00:00Z';
const t0 = Date.parse(start);

describe('activeDeadlineSeconds', () => {
  it('counts from the start time and is undefined without a deadline or a start time', () => {
    assert.equal(activeDeadlineRemainingMs(pod(5), { startTime: start }, t0 + 2_000), 3_000);
    assert.equal(activeDeadlineRemainingMs(pod(5), { startTime: start }, t0 + 6_000), -1_000);
    assert.equal(activeDeadlineRemainingMs(pod(), { startTime: start }, t0), undefined);
    assert.equal(activeDeadlineRemainingMs(pod(5), {}, t0), undefined);
  });

  it('fails the pod with upstream reason and message', () => {
    assert.deepEqual(deadlineExceededStatus({ phase: 'Running', startTime: start }), {
      phase: 'Failed',
      startTime: start,
      reason: 'DeadlineExceeded',
      message: 'Pod was active on the node longer than the specified deadline',
    });
  });
});
