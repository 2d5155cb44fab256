import type { Pod } from '../api/types.ts';
import {
  ANNOTATION_CONFIG_MIRROR,
  ANNOTATION_CONFIG_SOURCE,
  SYSTEM_CRITICAL_PRIORITY,
} from '../config/defaults.ts';

/** The config source of pods from the API server (upstream kubetypes.ApiserverSource). */
const API_SOURCE = 'api';

/**
 * Upstream 1.20 `kubelettypes.IsCriticalPod`: a static pod (its config source annotation names a
 * source other than the API server), a mirror pod, or a pod whose resolved priority is at least
 * system-critical (2000000000). The old `scheduler.alpha.kubernetes.io/critical-pod` annotation no
 * longer counts in 1.20, so it does not here either.
 */
export function isCriticalPod(pod: Pod): boolean {
  const annotations = pod.metadata.annotations ?? {};
  const source = annotations[ANNOTATION_CONFIG_SOURCE];
  if (source !== undefined && source !== API_SOURCE) return true;
  if (annotations[ANNOTATION_CONFIG_MIRROR] !== undefined) return true;
  return pod.spec.priority !== undefined && pod.spec.priority >= SYSTEM_CRITICAL_PRIORITY;
}
