/**
 * `spec.activeDeadlineSeconds` (upstream activeDeadlineHandler): a pod active on the node for
 * longer than its deadline, counted from `status.startTime`, fails with reason DeadlineExceeded
 * and its containers are killed. The deadline may be changed on a running pod.
 */
import type { Pod, PodStatus } from '../api/types.ts';

export const DEADLINE_EXCEEDED_REASON = 'DeadlineExceeded';
export const DEADLINE_EXCEEDED_MESSAGE = 'Pod was active on the node longer than the specified deadline';

/** Milliseconds left before the deadline (≤ 0: passed); undefined without a deadline or start time. */
export function activeDeadlineRemainingMs(pod: Pod, status: PodStatus, nowMs: number): number | undefined {
  const seconds = pod.spec.activeDeadlineSeconds;
  if (seconds === undefined || seconds === null || !status.startTime) return undefined;
  const started = Date.parse(status.startTime);
  if (Number.isNaN(started)) return undefined;
  return started + seconds * 1000 - nowMs;
}

/** The status of a pod whose deadline has passed: Failed, with upstream's reason and message. */
export function deadlineExceededStatus(status: PodStatus): PodStatus {
  return { ...status, phase: 'Failed', reason: DEADLINE_EXCEEDED_REASON, message: DEADLINE_EXCEEDED_MESSAGE };
}
