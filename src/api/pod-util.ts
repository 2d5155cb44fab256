/**
 * Predicates over a pod's spec (upstream pkg/api/v1/pod util.go, podutil): the one place the
 * kubelet's folders ask whether an init container is a sidecar and which restart policy a pod has.
 */
import type { Container, Pod, RestartPolicy } from './types.ts';

/** A sidecar: an init container with `restartPolicy: Always` (upstream IsRestartableInitContainer). */
export function isRestartableInitContainer(container: Container): boolean {
  return container.restartPolicy === 'Always';
}

/** The pod's restart policy, `Always` when unset (the API default). */
export function restartPolicy(pod: Pod): RestartPolicy {
  return pod.spec.restartPolicy ?? 'Always';
}
