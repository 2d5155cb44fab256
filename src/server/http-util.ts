/**
 * Small response helpers shared by the kubelet API handlers (upstream: go-restful's response
 * writers). Every response header block of the API is written here, so every response carries
 * API_HEADERS.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { STATUS_CODES } from '../util/node-http.ts';
import type { Duplex } from 'node:stream';

/**
 * On every response of the kubelet API: a browser takes the declared type as it is and never
 * sniffs a body (a log line, a pod name) into HTML or script.
 */
export const API_HEADERS: Readonly<Record<string, string>> = { 'x-content-type-options': 'nosniff' };

/**
 * On responses whose body is a pod's bytes (container logs, `/run` output) or node files
 * (`/logs/`): opened in a browser, such a response is a sandboxed document that loads nothing and
 * runs nothing, whatever it holds. The console reads logs with fetch(), which a response CSP does
 * not affect.
 */
export const POD_OUTPUT_HEADERS: Readonly<Record<string, string>> = {
  ...API_HEADERS,
  'content-security-policy': "default-src 'none'; sandbox",
};

/** `res.writeHead` with API_HEADERS under the given headers (which may add to or override them). */
export function writeHead(res: ServerResponse, status: number, headers: OutgoingHttpHeaders = {}): void {
  res.writeHead(status, { ...API_HEADERS, ...headers });
}

export function sendText(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    // A stream already started (logs -f): the status cannot change any more; end it.
    res.end();
    return;
  }
  writeHead(res, status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(body.endsWith('\n') ? body : `${body}\n`);
}

export function sendJSON(res: ServerResponse, body: unknown, status = 200): void {
  const data = JSON.stringify(body);
  writeHead(res, status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
  res.end(data);
}

/** How long a refused upgrade's socket may take to be closed by the client before it is destroyed. */
const REJECTED_UPGRADE_LINGER_MS = 5_000;

/**
 * A complete HTTP/1.1 response written straight to a socket (for upgrade requests, which never get
 * a ServerResponse), then the socket is closed. Whatever the client still sends (the rest of a
 * request body) is read and dropped: an upgraded socket nobody reads never sees the client's FIN,
 * so it would stay open for good — a leaked descriptor per request, and a server that cannot close.
 * A client that does not close within a few seconds is cut off.
 */
export function rejectUpgrade(
  socket: Duplex,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (socket.destroyed) return;
  const text = body.endsWith('\n') ? body : `${body}\n`;
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(text)}`,
    'Connection: close',
    ...Object.entries({ ...API_HEADERS, ...headers }).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${text}`);
  socket.resume();
  const linger = setTimeout(() => socket.destroy(), REJECTED_UPGRADE_LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}
