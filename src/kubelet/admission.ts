import type { Pod } from '../api/types.ts';

export interface AdmitResult {
  admit: boolean;
  reason?: string;
  message?: string;
}

/** Upstream lifecycle.PodAdmitHandler: the kubelet walks a list of these before starting a pod. */
export interface PodAdmitHandler {
  readonly name: string;
  admit(pod: Pod, activePods: readonly Pod[]): AdmitResult;
}

/** The `pods` resource check of upstream's predicate admit handler (reason OutOfpods). */
export function maxPodsAdmitHandler(maxPods: number): PodAdmitHandler {
  return {
    name: 'MaxPods',
    admit(_pod, activePods) {
      if (activePods.length + 1 <= maxPods) return { admit: true };
      return {
        admit: false,
        reason: 'OutOfpods',
        message: `Node didn't have enough resource: pods, requested: 1, used: ${activePods.length}, capacity: ${maxPods}`,
      };
    },
  };
}

export function runAdmitHandlers(
  handlers: readonly PodAdmitHandler[],
  pod: Pod,
  active: readonly Pod[],
): AdmitResult {
  for (const h of handlers) {
    const r = h.admit(pod, active);
    if (!r.admit) return r;
  }
  return { admit: true };
}
