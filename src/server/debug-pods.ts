/**
 * tskubelet's own debug endpoints about one pod (no upstream counterpart): `/debug/pods/{namespace}/{name}/timeline`.
 * Behind the same authentication and authorization as `/pods` (subresource `proxy`); a debugging
 * handler (routes.ts DEBUGGING_ROUTES: a failed hook's step carries its output), so not on the
 * read-only port, and 405 when enableDebuggingHandlers is off. Reads the kubelet's memory only.
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
