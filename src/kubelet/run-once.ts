import { restartPolicy } from '../api/pod-util.ts';
import type { KubeletPod } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import { sleep } from '../util/abort.ts';
import {
  RUN_ONCE_MAX_RETRIES,
  RUN_ONCE_RETRY_DELAY_BACKOFF,
  RUN_ONCE_RETRY_DELAY_MS,
} from '../config/defaults.ts';
import type { RuntimePodStatus } from '../runtime/runtime-pod.ts';
import { findContainerStatus } from '../runtime/runtime-pod.ts';
import type { AdmitResult } from './admission.ts';
import { monotonicNow } from '../util/clock.ts';
import { backoffSteps } from '../util/backoff.ts';

export interface RunOnceResult {
  pod: string;
  podUID: string;
  ok: boolean;
  /** `running`, `succeeded`, or why it failed. */
  detail: string;
}

/** What run-once mode needs of the kubelet: the same sources, admission and syncPod as the loop. */
export interface RunOnceHost {
  startSources(): void;
  stopSources(): Promise<void>;
  sourcesReady(): boolean;
  /** The pods the sources delivered. */
  pods(): KubeletPod[];
  /** Admission against the pods admitted so far; a rejection is recorded (event, Failed status). */
  admit(pod: KubeletPod, admitted: KubeletPod[]): AdmitResult;
  /** The sync loop's syncPod: volumes, pod cgroup, containers. */
  syncPod(pod: KubeletPod, signal: AbortSignal): Promise<unknown>;
  podStatus(pod: KubeletPod, signal: AbortSignal): Promise<RuntimePodStatus>;
}

/** Every app container runs, or (for run-to-completion pods) every one already exited 0. */
function outcome(pod: KubeletPod, rs: RuntimePodStatus): 'running' | 'succeeded' | 'failed' | 'pending' {
  const states = pod.spec.containers.map((c) => findContainerStatus(rs, c.name));
  if (states.every((s) => s?.state === 'running')) return 'running';
  if (states.every((s) => s?.state === 'exited' && s.exitCode === 0)) return 'succeeded';
  if (restartPolicy(pod) === 'Never' && states.some((s) => s?.state === 'exited' && s.exitCode !== 0))
    return 'failed';
  return 'pending';
}

/** Upstream runPod: check, sync, wait with a doubling delay, at most RUN_ONCE_MAX_RETRIES times. */
async function runPod(host: RunOnceHost, pod: KubeletPod, signal: AbortSignal): Promise<RunOnceResult> {
  const result = (ok: boolean, detail: string): RunOnceResult => ({
    pod: podFullName(pod),
    podUID: pod.metadata.uid,
    ok,
    detail,
  });
  const delays = backoffSteps({ initialMs: RUN_ONCE_RETRY_DELAY_MS, factor: RUN_ONCE_RETRY_DELAY_BACKOFF });
  for (let attempt = 0; ; attempt++) {
    const o = outcome(pod, await host.podStatus(pod, signal));
    if (o === 'running' || o === 'succeeded') return result(true, o);
    if (o === 'failed') return result(false, 'a container failed');
    if (attempt >= RUN_ONCE_MAX_RETRIES) {
      return result(false, `timeout: containers not running after ${RUN_ONCE_MAX_RETRIES} retries`);
    }
    await host.syncPod(pod, signal);
    await sleep(delays.step(), signal);
  }
}

/** Polls `check` every 50 ms until it holds or `timeoutMs` passed; false on timeout. */
async function waitFor(check: () => boolean, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
  const deadline = monotonicNow() + timeoutMs;
  while (!check()) {
    if (monotonicNow() > deadline) return false;
    await sleep(50, signal);
  }
  return true;
}

/**
 * Upstream RunOnce: read every source once, admit its pods in order, run the admitted ones through
 * syncPod until each is running (or has completed successfully) or failed, and report per pod.
 * Pods are left running.
 */
export async function runOnce(
  host: RunOnceHost,
  log: Logger,
  opts: { sourceTimeoutMs: number; signal: AbortSignal },
): Promise<RunOnceResult[]> {
  host.startSources();
  try {
    const ready = await waitFor(() => host.sourcesReady(), opts.sourceTimeoutMs, opts.signal);
    if (!ready) log.warn('not every pod source answered in time; running the pods seen so far');
    const pods = host.pods();
    log.info('run-once: starting pods', { count: pods.length });
    const admitted: KubeletPod[] = [];
    const runs: Promise<RunOnceResult>[] = [];
    for (const pod of pods) {
      const verdict = host.admit(pod, admitted);
      if (!verdict.admit) {
        const detail = `rejected: ${verdict.reason ?? 'Rejected'}: ${verdict.message ?? ''}`;
        runs.push(Promise.resolve({ pod: podFullName(pod), podUID: pod.metadata.uid, ok: false, detail }));
        continue;
      }
      admitted.push(pod);
      runs.push(
        runPod(host, pod, opts.signal).catch((err: unknown): RunOnceResult => ({
          pod: podFullName(pod),
          podUID: pod.metadata.uid,
          ok: false,
          detail: describeError(err),
        })),
      );
    }
    return await Promise.all(runs);
  } finally {
    await host.stopSources();
  }
}
