import type { Pod } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import { sleep } from '../util/abort.ts';
import type { Kubelet } from './kubelet.ts';
import { waitFor } from './kubelet.ts';
import type { RuntimePodStatus } from '../runtime/runtime-pod.ts';
import { findContainerStatus } from '../runtime/runtime-pod.ts';

/** Upstream runonce constants. */
export const RUN_ONCE_MAX_RETRIES = 10;
export const RUN_ONCE_RETRY_DELAY_MS = 1_000;
export const RUN_ONCE_RETRY_BACKOFF = 2;

export interface RunOnceResult {
  pod: string;
  podUID: string;
  ok: boolean;
  /** `running`, `succeeded`, or why it failed. */
  detail: string;
}

/** Every app container runs, or (for run-to-completion pods) every one already exited 0. */
function outcome(pod: Pod, rs: RuntimePodStatus): 'running' | 'succeeded' | 'failed' | 'pending' {
  const states = pod.spec.containers.map((c) => findContainerStatus(rs, c.name));
  if (states.every((s) => s?.state === 'running')) return 'running';
  if (states.every((s) => s?.state === 'exited' && s.exitCode === 0)) return 'succeeded';
  const policy = pod.spec.restartPolicy ?? 'Always';
  if (policy === 'Never' && states.some((s) => s?.state === 'exited' && s.exitCode !== 0)) return 'failed';
  return 'pending';
}

async function runPod(kubelet: Kubelet, pod: Pod, log: Logger, signal: AbortSignal): Promise<RunOnceResult> {
  const uid = pod.metadata.uid ?? '';
  const name = podFullName(pod);
  let delay = RUN_ONCE_RETRY_DELAY_MS;
  for (let attempt = 0; ; attempt++) {
    const rs = await kubelet.runtime.getPodStatus(
      uid,
      pod.metadata.name ?? '',
      pod.metadata.namespace ?? '',
      signal,
    );
    const o = outcome(pod, rs);
    if (o === 'running' || o === 'succeeded') return { pod: name, podUID: uid, ok: true, detail: o };
    if (o === 'failed') return { pod: name, podUID: uid, ok: false, detail: 'a container failed' };
    if (attempt >= RUN_ONCE_MAX_RETRIES) {
      return {
        pod: name,
        podUID: uid,
        ok: false,
        detail: `timeout: containers not running after ${RUN_ONCE_MAX_RETRIES} retries`,
      };
    }
    const result = await kubelet.runtime.syncPod(pod, rs, signal);
    const failures = [...result.startFailures].map(([c, f]) => `${c}: ${f.reason}`);
    if (result.sandboxError) failures.push(result.sandboxError);
    if (failures.length > 0)
      log.warn('run-once sync incomplete', { pod: name, podUID: uid, attempt, failures });
    await sleep(delay, signal);
    delay *= RUN_ONCE_RETRY_BACKOFF;
  }
}

/**
 * Upstream RunOnce: read every source once, run its pods, wait until each is running (or has
 * completed successfully) or failed, and report per pod. Pods are left running.
 */
export async function runOnce(
  kubelet: Kubelet,
  log: Logger,
  opts: { sourceTimeoutMs: number; signal: AbortSignal },
): Promise<RunOnceResult[]> {
  kubelet.podConfig.start();
  try {
    const ready = await waitFor(() => kubelet.sourcesReady(), opts.sourceTimeoutMs, opts.signal);
    if (!ready) log.warn('not every pod source answered in time; running the pods seen so far');
    const pods = kubelet.podConfig.allPods();
    log.info('run-once: starting pods', { count: pods.length });
    return await Promise.all(
      pods.map((pod) =>
        runPod(kubelet, pod, log, opts.signal).catch((err: unknown): RunOnceResult => ({
          pod: podFullName(pod),
          podUID: pod.metadata.uid ?? '',
          ok: false,
          detail: describeError(err),
        })),
      ),
    );
  } finally {
    await kubelet.podConfig.stop();
  }
}
