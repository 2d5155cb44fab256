/**
 * `GET /debug/pods/{namespace}/{name}/why` (tskubelet's own, no upstream counterpart): the host's PodWhy as JSON; an unknown pod is
 * a 404 with a Kubernetes Status body. Authorized as the `proxy` subresource like every path without
 * its own; a debugging handler (it returns containers' last log lines): 405 when
 * enableDebuggingHandlers is off, never on the read-only port.
 */
import type { ServerResponse } from 'node:http';
import type { KubeletApiHost } from './host.ts';
import { sendJSON } from './http-util.ts';

/** A `metav1.Status` failure body, as the API server writes one. */
export function statusBody(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

export async function servePodWhy(
  res: ServerResponse,
  route: { namespace: string; pod: string },
  host: Pick<KubeletApiHost, 'podWhy'>,
  signal: AbortSignal,
): Promise<void> {
  const why = await host.podWhy(route.namespace, route.pod, signal);
  if (!why) {
    sendJSON(res, statusBody(404, 'NotFound', `pod "${route.namespace}/${route.pod}" not found`), 404);
    return;
  }
  sendJSON(res, why);
}
