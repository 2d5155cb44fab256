/**
 * Stopping a pod on the kubelet's own initiative (upstream killPodNow, used by eviction and node
 * shutdown): the sync loop marks the pod Failed with the given reason and hands its worker a kill
 * with the given grace period; the caller waits until the worker has terminated it.
 */
import type { KubeletPod, PodStatus } from '../api/types.ts';
import type { AsyncQueue } from '../util/async-queue.ts';
import { sleep } from '../util/abort.ts';
import { KubeletError } from '../util/errors.ts';
import type { PodWorkers } from './pod-workers.ts';
import type { LoopEvent } from './sync-loop.ts';
import { monotonicNow } from '../util/clock.ts';

/** upstream killPodNow: wait 1.5 × the grace period, at least 10 s. */
const MIN_STOP_TIMEOUT_MS = 10_000;
const POLL_MS = 100;

/**
 * The status of a pod the kubelet stopped (upstream killPodNow's status function: a fresh status
 * of phase, reason and message; the status manager keeps the start time). Written to the API it
 * drops the container statuses and the kubelet's conditions (explicit empty lists: the status
 * patch never drops an absent field), so `kubectl get pods` shows the reason (Evicted, Shutdown)
 * and 0 ready, as upstream.
 */
export function stoppedPodStatus(current: PodStatus, stop: { reason: string; message: string }): PodStatus {
  return {
    phase: 'Failed',
    reason: stop.reason,
    message: stop.message,
    ...(current.startTime ? { startTime: current.startTime } : {}),
    conditions: [],
    containerStatuses: [],
    ...(current.initContainerStatuses?.length ? { initContainerStatuses: [] } : {}),
  };
}

export type StopPodFn = (
  pod: KubeletPod,
  gracePeriodSeconds: number,
  status: { reason: string; message: string },
) => Promise<void>;

export function createStopPod(
  queue: AsyncQueue<LoopEvent>,
  workers: Pick<PodWorkers, 'phase'>,
  signal: AbortSignal,
): StopPodFn {
  return async (pod, gracePeriodSeconds, status) => {
    const uid = pod.metadata.uid;
    if (!queue.push({ kind: 'stop', uid, gracePeriodSeconds, ...status })) {
      throw new KubeletError('Unavailable', 'stop pod', `sync loop queue full; pod ${uid} not stopped`);
    }
    const timeoutMs = Math.max(MIN_STOP_TIMEOUT_MS, gracePeriodSeconds * 1500);
    const deadline = monotonicNow() + timeoutMs;
    while (workers.phase(uid) !== 'terminated') {
      if (signal.aborted) throw new KubeletError('Canceled', 'stop pod', 'kubelet is stopping');
      if (monotonicNow() > deadline) {
        throw new KubeletError(
          'DeadlineExceeded',
          'stop pod',
          `pod ${uid} not stopped within ${timeoutMs} ms`,
        );
      }
      await sleep(POLL_MS, signal);
    }
  };
}
