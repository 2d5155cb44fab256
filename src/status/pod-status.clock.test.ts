/**
 * Status times are wall time, written to the API: a step shows in the next transition's stamp and
 * nowhere else. Unchanged conditions keep their times, startTime never moves, and nothing computes
 * a duration from them (so a stamp earlier than the one before cannot go negative anywhere).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod, PodStatus } from '../api/types.ts';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../runtime/kuberuntime/runtime-pod.ts';
import { computePodStatus, type WaitingReason } from './pod-status.ts';
import { buildPod } from '../../test/kit/pod.ts';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const H = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

const pod: Pod = buildPod('web', { uid: 'uid-1', containers: ['app'] });

function runtime(state: 'running' | 'exited'): RuntimePodStatus {
  const c: RuntimeContainerStatus = {
    id: 'c1',
    name: 'app',
    state,
    createdAt: T0,
    startedAt: T0 + 1_000,
    finishedAt: state === 'exited' ? T0 + 2_000 : 0,
    exitCode: state === 'exited' ? 1 : 0,
    reason: state === 'exited' ? 'Error' : '',
    message: '',
    image: 'docker.io/library/busybox:1.29',
    imageRef: 'sha256:1234',
    hash: 'abcd',
    restartCount: 0,
    podSandboxId: 's1',
    attempt: 0,
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    terminationGracePeriodSeconds: undefined,
  };
  return {
    uid: 'uid-1',
    name: 'web',
    namespace: 'default',
    sandboxes: [
      { id: 's1', ready: true, createdAt: T0, attempt: 0, ip: '10.88.0.5', ips: [], hostNetwork: false },
    ],
    containers: [c],
    timestamp: 1,
  };
}

const compute = (rs: RuntimePodStatus, previous: PodStatus | undefined, nowMs: number) =>
  computePodStatus({
    pod,
    runtime: rs,
    previous,
    waiting: new Map<string, WaitingReason>(),
    hostIP: '192.168.1.10',
    now: () => nowMs,
  });

const ready = (s: PodStatus) => s.conditions?.find((c) => c.type === 'Ready');

describe('pod status times while the wall clock steps', () => {
  it('keeps startTime and unchanged transition times; stamps the next transition with the stepped wall time', () => {
    const first = compute(runtime('running'), undefined, T0 + 5_000);
    assert.equal(first.startTime, iso(T0 + 5_000));
    assert.equal(ready(first)?.status, 'True');
    assert.equal(ready(first)?.lastTransitionTime, iso(T0 + 5_000));

    // The wall clock steps back an hour: an unchanged status is the same status.
    const same = compute(runtime('running'), first, T0 + 6_000 - H);
    assert.deepEqual(same, first);

    // A transition after the step carries the wall time it happened at, earlier than the last one.
    const died = compute(runtime('exited'), same, T0 + 7_000 - H);
    assert.equal(died.startTime, first.startTime);
    assert.equal(ready(died)?.status, 'False');
    assert.equal(ready(died)?.lastTransitionTime, iso(T0 + 7_000 - H));
    assert.equal(died.containerStatuses?.[0]?.state?.terminated?.finishedAt, iso(T0 + 2_000));
  });
});
