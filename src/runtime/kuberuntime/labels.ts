import type { Container, KubeletPod } from '../../api/types.ts';
import {
  ANNOTATION_CONTAINER_HASH,
  ANNOTATION_CONTAINER_PORTS,
  ANNOTATION_CONTAINER_PRESTOP_HANDLER,
  ANNOTATION_CONTAINER_RESTART_COUNT,
  ANNOTATION_CONTAINER_TERMINATION_MESSAGE_PATH,
  ANNOTATION_CONTAINER_TERMINATION_MESSAGE_POLICY,
  ANNOTATION_POD_DELETION_GRACE_PERIOD,
  ANNOTATION_POD_TERMINATION_GRACE_PERIOD,
  DEFAULT_TERMINATION_MESSAGE_PATH,
  LABEL_CONTAINER_NAME,
  LABEL_POD_NAME,
  LABEL_POD_NAMESPACE,
  LABEL_POD_UID,
} from '../../config/defaults.ts';
import { hashContainer } from './hash.ts';

/** Upstream newPodLabels: the pod's own labels plus the three identity labels. */
export function sandboxLabels(pod: KubeletPod): Record<string, string> {
  return {
    ...(pod.metadata.labels ?? {}),
    [LABEL_POD_NAME]: pod.metadata.name,
    [LABEL_POD_NAMESPACE]: pod.metadata.namespace,
    [LABEL_POD_UID]: pod.metadata.uid,
  };
}

export function sandboxAnnotations(pod: KubeletPod): Record<string, string> {
  return { ...(pod.metadata.annotations ?? {}) };
}

/** Upstream newContainerLabels. */
export function containerLabels(pod: KubeletPod, container: Container): Record<string, string> {
  return {
    [LABEL_POD_NAME]: pod.metadata.name,
    [LABEL_POD_NAMESPACE]: pod.metadata.namespace,
    [LABEL_POD_UID]: pod.metadata.uid,
    [LABEL_CONTAINER_NAME]: container.name,
  };
}

/** Upstream newContainerAnnotations: what re-adoption and status computation read back later. */
export function containerAnnotations(
  pod: KubeletPod,
  container: Container,
  restartCount: number,
): Record<string, string> {
  const a: Record<string, string> = {
    [ANNOTATION_CONTAINER_HASH]: hashContainer(container),
    [ANNOTATION_CONTAINER_RESTART_COUNT]: String(restartCount),
    [ANNOTATION_CONTAINER_TERMINATION_MESSAGE_PATH]:
      container.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH,
    [ANNOTATION_CONTAINER_TERMINATION_MESSAGE_POLICY]: container.terminationMessagePolicy ?? 'File',
  };
  if (pod.metadata.deletionGracePeriodSeconds !== undefined) {
    a[ANNOTATION_POD_DELETION_GRACE_PERIOD] = String(pod.metadata.deletionGracePeriodSeconds);
  }
  if (pod.spec.terminationGracePeriodSeconds !== undefined) {
    a[ANNOTATION_POD_TERMINATION_GRACE_PERIOD] = String(pod.spec.terminationGracePeriodSeconds);
  }
  if (container.lifecycle?.preStop) {
    a[ANNOTATION_CONTAINER_PRESTOP_HANDLER] = JSON.stringify(container.lifecycle.preStop);
  }
  if (container.ports && container.ports.length > 0) {
    a[ANNOTATION_CONTAINER_PORTS] = JSON.stringify(container.ports);
  }
  return a;
}

export function intAnnotation(a: Record<string, string>, key: string): number | undefined {
  const v = a[key];
  if (v === undefined) return undefined;
  const n = Number.parseInt(v, 10);
  return Number.isFinite(n) ? n : undefined;
}
