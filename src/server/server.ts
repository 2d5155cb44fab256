/**
 * The healthz listener (upstream cmd/kubelet/app/server.go `run`: an http.ServeMux with
 * healthz.InstallHandler only, on healthzBindAddress:healthzPort, 127.0.0.1:10248 by default):
 * `/healthz`, unauthenticated plain HTTP, and nothing else — the pods are on the kubelet API (and
 * the local socket, and the read-only port when one is enabled).
 *
 * Bound to a loopback address, it answers only to a loopback Host (or none): a web page whose
 * name resolves to 127.0.0.1 (DNS rebinding) is refused, as on the console listener.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isLoopbackIP } from '../config/index.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { createServer } from '../util/node-http.ts';
import { isLoopbackHost } from './host-check.ts';
import { API_HEADERS, sendText } from './http-util.ts';

/**
 * What the healthz listener may ask of the kubelet, as a function field, so the server is
 * testable without one (Virtual Kubelet's PodHandlerConfig habit).
 */
export interface ServerHandlers {
  healthz(): { ok: boolean; message: string };
}

export interface LocalServer {
  /** Resolves with the bound port (useful when asked for port 0). */
  listen(): Promise<number>;
  close(): Promise<void>;
}

export function createLocalServer(
  opts: { host: string; port: number },
  handlers: ServerHandlers,
  logger: Logger,
): LocalServer {
  const checkHost = isLoopbackIP(opts.host);
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    for (const [k, v] of Object.entries(API_HEADERS)) res.setHeader(k, v);
    try {
      route(req, res);
    } catch (err) {
      logger.error('http handler failed', { path: req.url, err: describeError(err) });
      if (!res.headersSent) sendText(res, 500, 'internal error');
      else res.destroy();
    }
  });
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 30_000;

  function route(req: IncomingMessage, res: ServerResponse): void {
    // An absent Host (HTTP/1.0 probes) names no other site; any other name than a loopback one
    // is a page elsewhere reaching 127.0.0.1 through its own DNS.
    if (checkHost && req.headers.host !== undefined && !isLoopbackHost(req.headers.host)) {
      sendText(
        res,
        403,
        `Forbidden: the healthz listener answers only to a loopback Host, not ${JSON.stringify(req.headers.host)}`,
      );
      return;
    }
    let path: string;
    try {
      path = new URL(req.url ?? '/', 'http://localhost').pathname;
    } catch {
      // An absolute-form target that is no URL (`GET http://[ HTTP/1.1`): answered, not thrown.
      sendText(res, 400, 'Bad Request: malformed request URL', { connection: 'close' });
      return;
    }
    if (path !== '/healthz') {
      sendText(res, 404, '404 page not found');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendText(res, 405, `method ${req.method ?? ''} is not allowed`, { allow: 'GET, HEAD' });
      return;
    }
    const h = handlers.healthz();
    res.writeHead(h.ok ? 200 : 500, {
      'content-type': 'text/plain; charset=utf-8',
      'x-content-type-options': 'nosniff',
    });
    res.end(h.ok ? 'ok' : `[-]${h.message}\nhealthz check failed\n`);
  }

  return {
    listen() {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.port, opts.host, () => {
          server.off('error', reject);
          const addr = server.address() as AddressInfo;
          logger.info('serving healthz', { address: `${opts.host}:${addr.port}` });
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
