/**
 * The container hash (upstream pkg/kubelet/container/helpers.go HashContainer), written to the
 * `io.kubernetes.container.hash` annotation.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../util/json.ts';

/**
 * A short hash of the container spec (sha256 of its canonical JSON, 8 hex digits). A running
 * container whose hash differs from its spec is restarted; that is how an in-place image update
 * reaches the runtime. The value must stay the same across kubelet versions for every spec, or a
 * restarted kubelet restarts containers that did not change (hash.test.ts pins it).
 */
export function hashContainer(container: object): string {
  return createHash('sha256').update(canonicalJson(container)).digest('hex').slice(0, 8);
}
