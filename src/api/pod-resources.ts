/**
 * Pod-level resource figures and criticality as the upstream kubelet computes them
 * (pkg/api/v1/resource GetResourceRequestQuantity / PodRequestsAndLimits, kubelet types
 * IsCriticalPod). Quantities in base units (bytes, cores).
 */
import { parseQuantity } from './quantity.ts';
import type { Container, Pod } from './types.ts';

import { SYSTEM_CRITICAL_PRIORITY } from '../config/defaults.ts';
import { isMirrorPod, isStaticPod } from './pod-source.ts';

export { SYSTEM_CRITICAL_PRIORITY };

type Kind = 'requests' | 'limits';

function containerValue(c: Container, kind: Kind, resource: string): number | undefined {
  const q = c.resources?.[kind]?.[resource];
  return q === undefined ? undefined : parseQuantity(q, `resources.${kind}.${resource}`);
}

/**
 * The pod's request (or limit) of one resource: the sum over app containers, at least the largest
 * init container's, plus the pod overhead when the total is not zero. A malformed quantity throws
 * (pods reaching the kubelet were validated).
 */
export function podResourceTotal(pod: Pod, kind: Kind, resource: string): number {
  let total = 0;
  for (const c of pod.spec.containers) total += containerValue(c, kind, resource) ?? 0;
  for (const c of pod.spec.initContainers ?? [])
    total = Math.max(total, containerValue(c, kind, resource) ?? 0);
  const overhead = pod.spec.overhead?.[resource];
  if (overhead !== undefined && total !== 0) total += parseQuantity(overhead, `overhead.${resource}`);
  return total;
}

/** Whether any container (app or init) sets a limit for the resource (upstream: key present). */
export function podHasLimit(pod: Pod, resource: string): boolean {
  return [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].some(
    (c) => c.resources?.limits?.[resource] !== undefined,
  );
}

export function podPriority(pod: Pod): number {
  return pod.spec.priority ?? 0;
}

/** upstream IsCriticalPod: a static pod, a mirror pod, or system-critical priority. */
export function isCriticalPod(pod: Pod): boolean {
  if (isStaticPod(pod) || isMirrorPod(pod)) return true;
  return podPriority(pod) >= SYSTEM_CRITICAL_PRIORITY;
}
