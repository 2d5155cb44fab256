/**
 * Where a pod came from, read off the annotations the config sources set (upstream
 * pkg/kubelet/types/pod_update.go: GetPodSource, IsStaticPod, IsMirrorPod). The one place these
 * predicates are written: the kubelet, the status writer, the runtime's service links and the API
 * handlers all ask here.
 */
import type { Pod } from './types.ts';
import { ANNOTATION_CONFIG_MIRROR, ANNOTATION_CONFIG_SOURCE } from '../config/defaults.ts';

/** The config source a pod came from (`file`, `http`, `api`), or undefined when it carries none. */
export function podSource(pod: Pod): string | undefined {
  return pod.metadata.annotations?.[ANNOTATION_CONFIG_SOURCE];
}

/**
 * A pod from a source other than the API server (upstream IsStaticPod: the source annotation is
 * present and not `api`). The pod storage stamps every pod it hands out with `file`, `http` or
 * `api`, so for the kubelet's own pods this is "came from a file or a URL".
 */
export function isStaticPod(pod: Pod): boolean {
  const source = podSource(pod);
  return source !== undefined && source !== 'api';
}

/** The API server's copy of a static pod (upstream IsMirrorPod: it carries `kubernetes.io/config.mirror`). */
export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata.annotations?.[ANNOTATION_CONFIG_MIRROR] !== undefined;
}
