/**
 * tskubelet's own debug endpoints about one pod (issue 15): `/debug/pods/{namespace}/{name}/timeline`.
 * Behind the same authentication and authorization as `/pods` (subresource `proxy`), not gated by
 * enableDebuggingHandlers: they read the kubelet's memory and change nothing.
 */
import type { ServerResponse } from 'node:http';
import type { KubeletApiHost } from './host.ts';
import { sendJSON } from './http-util.ts';

/** A metav1.Status for a pod the kubelet does not know, as the API server words it. */
export function podNotFoundStatus(namespace: string, name: string): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `pods "${name}" not found in namespace "${namespace}"`,
    reason: 'NotFound',
    details: { name, kind: 'pods' },
    code: 404,
  };
}

export function servePodTimeline(
  res: ServerResponse,
  route: { namespace: string; name: string },
  host: Pick<KubeletApiHost, 'podTimeline'>,
): void {
  const timeline = host.podTimeline(route.namespace, route.name);
  if (!timeline) {
    sendJSON(res, podNotFoundStatus(route.namespace, route.name), 404);
    return;
  }
  sendJSON(res, timeline);
}
