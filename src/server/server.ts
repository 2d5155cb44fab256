import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from '../util/node-http.ts';
import type { AddressInfo } from 'node:net';
import type { Pod, PodList, PodStatus } from '../api/types.ts';
import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import { API_HEADERS } from './http-util.ts';

/**
 * What the HTTP server may ask of the kubelet, as function fields, so the server is testable
 * without one (Virtual Kubelet's PodHandlerConfig habit).
 */
export interface ServerHandlers {
  healthz(): { ok: boolean; message: string };
  pods(): { pod: Pod; status: PodStatus | undefined }[];
}

export interface LocalServer {
  /** Resolves with the bound port (useful when asked for port 0). */
  listen(): Promise<number>;
  close(): Promise<void>;
}

/**
 * The local, unauthenticated endpoints: `/healthz` (upstream healthz server) and a read-only
 * `/pods` (upstream read-only API): a PodList with the kubelet's computed statuses.
 */
export function createLocalServer(
  opts: { host: string; port: number },
  handlers: ServerHandlers,
  logger: Logger,
): LocalServer {
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    for (const [k, v] of Object.entries(API_HEADERS)) res.setHeader(k, v);
    try {
      route(req, res);
    } catch (err) {
      logger.error('http handler failed', { path: req.url, err: describeError(err) });
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error\n');
    }
  });
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 30_000;

  function route(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' });
      res.end('method not allowed\n');
      return;
    }
    if (path === '/healthz') {
      const h = handlers.healthz();
      res.writeHead(h.ok ? 200 : 500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(h.ok ? 'ok' : `[-]${h.message}\nhealthz check failed\n`);
      return;
    }
    if (path === '/pods' || path === '/pods/') {
      const list: PodList = {
        apiVersion: 'v1',
        kind: 'PodList',
        metadata: {},
        items: handlers.pods().map(({ pod, status }) => ({
          apiVersion: 'v1',
          kind: 'Pod',
          ...pod,
          ...(status ? { status } : {}),
        })),
      };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(list));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('404 page not found\n');
  }

  return {
    listen() {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.port, opts.host, () => {
          server.off('error', reject);
          const addr = server.address() as AddressInfo;
          logger.info('serving healthz and read-only pods', { address: `${opts.host}:${addr.port}` });
          resolve(addr.port);
        });
      });
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
