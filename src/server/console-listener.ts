/**
 * The node console on a plain-HTTP loopback listener (`--console-address 127.0.0.1:PORT`), for a
 * standalone node without client certificates: no authentication (only processes on this machine
 * can connect), read-only (GET and HEAD), and only the routes the console page uses. A request
 * whose Host header is not a loopback name is refused, so a web page elsewhere cannot reach it
 * through DNS rebinding.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createHttpServer } from '../util/node-http.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { ApiHandlers } from './api-handlers.ts';
import { ANONYMOUS_USER } from './auth/authenticator.ts';
import { isLoopbackHost } from './host-check.ts';
import { setRequestUser } from './request-user.ts';
import { sendText } from './http-util.ts';
import { matchRoute } from './routes.ts';

/**
 * What the loopback listener serves: the console, and the read-only routes its page calls. Route
 * kinds as strings: `debugPodTimeline` and `debugPodWhy` (the timeline and `why`
 * debug endpoints) are served as soon as `routes.ts` knows them.
 */
export const CONSOLE_LISTENER_ROUTES: ReadonlySet<string> = new Set([
  'console',
  'consoleEvents',
  'containerLogs',
  'debugPodTimeline',
  'debugPodWhy',
  'pods',
  'healthz',
  'stats-summary',
]);

export interface ConsoleListenerOptions {
  /** A loopback IP (the flag's check refuses anything else). */
  host: string;
  /** 0: any free port (see `port()`). */
  port: number;
  handlers: Pick<ApiHandlers, 'request'>;
  logger: Logger;
  bindRetryMs?: number;
}

export interface ConsoleListener {
  /** Resolves after the first bind attempt (a taken port is retried in the background). */
  start(): Promise<void>;
  /** The bound port (0 while not bound). */
  port(): number;
  close(): Promise<void>;
}

export function createConsoleListener(opts: ConsoleListenerOptions): ConsoleListener {
  const log = opts.logger.child({ component: 'console-listener' });
  const server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      sendText(res, 400, 'Bad Request: malformed request URL', { connection: 'close' });
      return;
    }
    if (!isLoopbackHost(req.headers.host)) {
      sendText(
        res,
        403,
        `Forbidden: the console listener answers only to a loopback Host, not ${JSON.stringify(req.headers.host ?? '')}`,
      );
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendText(res, 405, `method ${req.method ?? ''} is not allowed: the console listener is read-only`, {
        allow: 'GET, HEAD',
      });
      return;
    }
    const route = matchRoute(url.pathname);
    const allowed = CONSOLE_LISTENER_ROUTES.has(route.kind) ? route : ({ kind: 'not-found' } as const);
    // No authentication here: every request counts as the one anonymous user (the console's
    // per-user stream slots), so this listener cannot take the slots of the API's users.
    setRequestUser(req, ANONYMOUS_USER);
    opts.handlers.request(req, res, allowed, url).catch((err: unknown) => {
      log.error('console listener handler failed', { path: url.pathname, err: describeError(err) });
      if (!res.headersSent) sendText(res, 500, `internal error: ${describeError(err)}`);
      else res.destroy();
    });
  });
  server.headersTimeout = 30_000;
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 30_000;
  let closed = false;
  let bound = 0;
  let retry: NodeJS.Timeout | undefined;

  function attempt(resolve: () => void, first: boolean): void {
    if (closed) {
      resolve();
      return;
    }
    const onError = (err: Error): void => {
      server.off('listening', onListening);
      log.error('console listener cannot listen; retrying', {
        address: `${opts.host}:${opts.port}`,
        err: describeError(err),
      });
      retry = setTimeout(() => attempt(resolve, false), opts.bindRetryMs ?? 5_000);
      if (first) resolve();
    };
    const onListening = (): void => {
      server.off('error', onError);
      bound = (server.address() as AddressInfo).port;
      const shown = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
      log.info('serving the node console (loopback, no authentication)', {
        url: `http://${shown}:${bound}/console/`,
      });
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(opts.port, opts.host);
  }

  return {
    start: () => new Promise<void>((resolve) => attempt(resolve, true)),
    port: () => bound,
    async close() {
      closed = true;
      clearTimeout(retry);
      if (!server.listening) return;
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await done;
    },
  };
}
