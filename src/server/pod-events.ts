/**
 * The kubelet's recent events about one pod, for the node CLI's `describe` (kubectl describe's
 * Events section, k8s.io/kubectl/pkg/describe/describe.go DescribeEvents): served on the local
 * socket only (local-socket.ts, root-only), from the in-memory ring the node console keeps
 * (src/console/event-ring.ts: the last 200 events of every recorder). Upstream, describe reads
 * Events from the API server; a standalone tskubelet has none, and the kubelet API has no route.
 *
 *   GET /debug/pods/{namespace}/{name}/events   {events: LocalEvent[]} (oldest first)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJSON, sendText } from './http-util.ts';

/** One recorded event (the console ring's ConsoleEvent, structurally). */
export interface LocalEvent {
  readonly at: string;
  readonly type: string;
  readonly reason: string;
  readonly message: string;
  readonly object: { kind: string; namespace?: string; name: string; uid?: string };
}

const PATH = /^\/debug\/pods\/([^/]+)\/([^/]+)\/events$/;

/** Answers `/debug/pods/{ns}/{name}/events`; false for any other path. */
export function handlePodEvents(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  events: () => readonly LocalEvent[],
): boolean {
  const m = PATH.exec(url.pathname);
  if (!m) return false;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendText(res, 405, 'Method Not Allowed', { allow: 'GET' });
    return true;
  }
  let namespace: string;
  let name: string;
  try {
    namespace = decodeURIComponent(m[1] ?? '');
    name = decodeURIComponent(m[2] ?? '');
  } catch {
    // A malformed escape in the path: the client's mistake, answered as such.
    sendText(res, 400, 'Bad Request: malformed path');
    return true;
  }
  const mine = events().filter(
    (e) =>
      e.object.kind === 'Pod' && e.object.name === name && (e.object.namespace ?? 'default') === namespace,
  );
  sendJSON(res, { events: mine });
  return true;
}
