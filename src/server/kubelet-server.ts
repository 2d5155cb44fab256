/**
 * The kubelet API listeners (upstream pkg/kubelet/server/server.go ListenAndServeKubeletServer,
 * ListenAndServeKubeletReadOnlyServer): HTTPS on address:port, every request authenticated and
 * authorized before any handler runs, and (when readOnlyPort > 0) plain HTTP for upstream's
 * read-only routes without authentication (routes.ts READ_ONLY_ROUTES; its debugging routes 405).
 *
 * Unlike upstream (which exits when the port is taken), a listener that cannot bind logs the
 * error and retries every few seconds: pods keep running and the API appears once the port frees.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createServer as createHttpServer } from '../util/node-http.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { ApiHandlers } from './api-handlers.ts';
import type { Authenticator } from './auth/authenticator.ts';
import type { ClientCA } from './auth/client-ca.ts';
import { trackClientCAConnections } from './client-ca-connections.ts';
import { requestAttributes, type Authorizer } from './auth/authorizer.ts';
import { rejectUpgrade, sendText } from './http-util.ts';
import { setRequestUser } from './request-user.ts';
import { DEBUG_ENDPOINTS_DISABLED, matchRoute, readOnlyDisposition, type Route } from './routes.ts';

export interface KubeletServerOptions {
  address: string;
  port: number;
  /** 0: no read-only listener. */
  readOnlyPort: number;
  tls: {
    /** The serving pair; absent when `servingCertificate` gives it. */
    cert?: Buffer;
    key?: Buffer;
    /**
     * A serving certificate issued and renewed elsewhere (serverTLSBootstrap, src/certificate):
     * taken for new handshakes as it rotates; until the first one is issued every handshake fails
     * (upstream: "no serving certificate available for the kubelet").
     */
    servingCertificate?: ServingCertificateSource;
    /**
     * Client CA bundle: client certificates are requested (not required) and verified against it;
     * a reloading one (auth/client-ca.ts) is put in force for new connections as it changes.
     */
    clientCA?: Buffer | Pick<ClientCA, 'current' | 'onChange'>;
    ciphers?: readonly string[];
    minVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
  };
  nodeName: string;
  authenticator: Authenticator;
  authorizer: Authorizer;
  handlers: ApiHandlers;
  logger: Logger;
  /** Delay between bind attempts when the port is taken. */
  bindRetryMs?: number;
  /** Times every request (upstream Server.ServeHTTP feeds kubelet_http_requests_*). */
  requestMetrics?: RequestMetrics;
}

/**
 * The request metrics' hook (src/metrics implements it): called as a request arrives, before
 * authentication, as upstream's ServeHTTP wraps its filters; the returned function is called once,
 * when the response is done or the upgraded stream closes. Must be cheap and never throw.
 */
export interface RequestMetrics {
  requestStarted(method: string | undefined, path: string, serverType: 'readonly' | 'readwrite'): () => void;
}

/** Where a rotating serving certificate comes from (the kubelet's serving certificate manager). */
export interface ServingCertificateSource {
  current(): { certPem: string; keyPem: string } | undefined;
  /** Called with each new pair; returns the unsubscribe. */
  onRotated(cb: () => void): () => void;
}

export interface KubeletServer {
  /** Starts the listeners; resolves after the first bind attempt of each (retries go on in the background). */
  start(): Promise<void>;
  /** The bound ports (0 while not bound); useful with port 0 in tests. */
  ports(): { secure: number; readOnly: number };
  /** The local unix socket's path when one is served (local-socket.ts). */
  localSocketPath?(): string;
  close(): Promise<void>;
}

type Admission = { ok: true } | { ok: false; status: number; body: string };

export function createKubeletServer(opts: KubeletServerOptions): KubeletServer {
  const log = opts.logger.child({ component: 'kubelet-api' });

  async function admit(req: IncomingMessage, path: string): Promise<Admission> {
    const authn = await opts.authenticator.authenticate(req);
    if (!authn.ok) {
      log.debug('unauthenticated request', { path, reason: authn.reason });
      return { ok: false, status: 401, body: 'Unauthorized' };
    }
    setRequestUser(req, authn.user);
    const attrs = requestAttributes(authn.user, req.method, path, opts.nodeName);
    const what = `user=${attrs.user.name}, verb=${attrs.verb}, resource=${attrs.resource}, subresource=${attrs.subresource}`;
    try {
      const decision = await opts.authorizer.authorize(attrs);
      if (decision.allowed) return { ok: true };
      log.debug('forbidden', { path, user: attrs.user.name, reason: decision.reason });
      return { ok: false, status: 403, body: `Forbidden (${what})` };
    } catch (err) {
      // No decision (the API server is unreachable): 503, so clients retry; upstream answers 500.
      log.warn('authorization failed', { path, user: attrs.user.name, err: describeError(err) });
      return { ok: false, status: 503, body: `Authorization error (${what})` };
    }
  }

  /**
   * The request's URL and route, or undefined for a request target that is not a URL at all
   * (`GET http://[ HTTP/1.1`: Node's parser passes absolute-form targets through as they are).
   * Those get 400 before authentication, as Go's server answers them; throwing here would be an
   * uncaught exception in the listener, which ends the process.
   */
  function parse(req: IncomingMessage): { url: URL; route: Route } | undefined {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'https://kubelet');
    } catch {
      log.debug('malformed request URL', { url: req.url?.slice(0, 200) });
      return undefined;
    }
    return { url, route: matchRoute(url.pathname) };
  }

  const MALFORMED = 'Bad Request: malformed request URL';

  function failed(res: ServerResponse, path: string, err: unknown): void {
    log.error('kubelet API handler failed', { path, err: describeError(err) });
    if (!res.headersSent) sendText(res, 500, `internal error: ${describeError(err)}`);
    else res.destroy();
  }

  /** Reports the request to the request metrics, done when `end` (response or socket) closes. */
  function timed(
    req: IncomingMessage,
    end: ServerResponse | Duplex,
    serverType: 'readonly' | 'readwrite',
  ): void {
    if (!opts.requestMetrics) return;
    // The raw target's path: upstream buckets req.URL.Path before any routing.
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    end.once('close', opts.requestMetrics.requestStarted(req.method, path, serverType));
  }

  const clientCA = opts.tls.clientCA;
  /** The TLS context's options (setSecureContext takes them all again when the client CA changes). */
  const serving = opts.tls.servingCertificate;
  const pair = () => {
    if (!serving) return { cert: opts.tls.cert, key: opts.tls.key };
    const p = serving.current();
    return p ? { cert: p.certPem, key: p.keyPem } : {};
  };
  const context = (ca: Buffer | undefined) => ({
    ...pair(),
    ...(ca ? { ca } : {}),
    ...(opts.tls.ciphers && opts.tls.ciphers.length > 0 ? { ciphers: opts.tls.ciphers.join(':') } : {}),
    ...(opts.tls.minVersion ? { minVersion: opts.tls.minVersion } : {}),
  });
  const secure = createHttpsServer(
    {
      ...context(clientCA === undefined || Buffer.isBuffer(clientCA) ? clientCA : clientCA.current()),
      ...(clientCA ? { requestCert: true, rejectUnauthorized: false } : {}),
    },
    (req, res) => {
      if (closedAsStale(req)) return;
      timed(req, res, 'readwrite');
      const parsed = parse(req);
      if (!parsed) {
        sendText(res, 400, MALFORMED, { connection: 'close' });
        return;
      }
      const { url, route } = parsed;
      admit(req, url.pathname)
        .then((a) => {
          if (!a.ok) {
            sendText(res, a.status, a.body);
            return undefined;
          }
          return opts.handlers.request(req, res, route, url);
        })
        .catch((err: unknown) => failed(res, url.pathname, err));
    },
  );
  // A reloading client CA: the new bundle for new handshakes, and the connections verified
  // against an older one closed (client-ca-connections.ts).
  const caConnections =
    clientCA && !Buffer.isBuffer(clientCA)
      ? trackClientCAConnections(secure, clientCA, (ca) => secure.setSecureContext(context(ca)))
      : undefined;
  // A rotated serving certificate: new handshakes get it, open connections keep theirs.
  const currentCA = () =>
    clientCA === undefined || Buffer.isBuffer(clientCA) ? clientCA : clientCA.current();
  const stopServingRotation = serving?.onRotated(() => {
    secure.setSecureContext(context(currentCA()));
    log.info('kubelet API: serving the rotated certificate to new connections');
  });
  if (serving) {
    let lastNoCertLog = -Infinity;
    secure.on('tlsClientError', (err: Error, socket: { remoteAddress?: string }) => {
      if (serving.current()) {
        log.debug('TLS handshake error', { remote: socket.remoteAddress, err: describeError(err) });
        return;
      }
      // Said at most once a minute: until approval, every API server call fails this way.
      const now = performance.now();
      if (now - lastNoCertLog < 60_000) return;
      lastNoCertLog = now;
      log.warn('TLS handshake error: no serving certificate available for the kubelet', {
        remote: socket.remoteAddress,
      });
    });
  }
  /** Closes the request's connection when its client certificate was verified by an older bundle. */
  function closedAsStale(req: IncomingMessage): boolean {
    if (!caConnections?.isStale(req)) return false;
    log.info('closing a connection whose client certificate was verified against the previous client CA', {
      remote: `${req.socket.remoteAddress ?? ''}:${req.socket.remotePort ?? ''}`,
    });
    req.socket.destroy();
    return true;
  }
  /** Upgraded sockets (streams, refused upgrades): the HTTP server no longer tracks them. */
  const upgraded = new Set<Duplex>();
  secure.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    timed(req, socket, 'readwrite');
    socket.once('close', () => upgraded.delete(socket));
    if (closedAsStale(req)) return;
    const parsed = parse(req);
    socket.on('error', (err) =>
      log.debug('upgrade socket error', { path: parsed?.url.pathname, err: describeError(err) }),
    );
    if (!parsed) {
      rejectUpgrade(socket, 400, MALFORMED);
      return;
    }
    const { url, route } = parsed;
    admit(req, url.pathname)
      .then((a) => {
        if (!a.ok) {
          rejectUpgrade(socket, a.status, a.body);
          return undefined;
        }
        return opts.handlers.upgrade(req, socket, head, route, url);
      })
      .catch((err: unknown) => {
        log.error('kubelet API upgrade failed', { path: url.pathname, err: describeError(err) });
        rejectUpgrade(socket, 500, `internal error: ${describeError(err)}`);
      });
  });

  const readOnly =
    opts.readOnlyPort > 0
      ? createHttpServer((req, res) => {
          timed(req, res, 'readonly');
          const parsed = parse(req);
          if (!parsed) {
            sendText(res, 400, MALFORMED, { connection: 'close' });
            return;
          }
          const { url, route } = parsed;
          const disposition = readOnlyDisposition(route.kind);
          if (disposition === 'debugging-disabled') {
            sendText(res, 405, DEBUG_ENDPOINTS_DISABLED);
            return;
          }
          const served = disposition === 'serve' ? route : ({ kind: 'not-found' } as const);
          opts.handlers
            .request(req, res, served, url)
            .catch((err: unknown) => failed(res, url.pathname, err));
        })
      : undefined;

  for (const s of [secure, readOnly]) {
    if (!s) continue;
    // Node hangs up on a CONNECT request when nothing listens for it; answer it as a method the
    // kubelet does not serve, as Go's server does.
    s.on('connect', (_req: IncomingMessage, socket: Duplex) => {
      socket.on('error', () => socket.destroy());
      rejectUpgrade(socket, 405, 'method CONNECT is not allowed');
    });
    s.headersTimeout = 30_000;
    s.requestTimeout = 60_000;
    s.keepAliveTimeout = 30_000;
    s.maxHeadersCount = 200;
  }

  let closed = false;
  const retryTimers = new Set<NodeJS.Timeout>();
  const bound = { secure: 0, readOnly: 0 };

  function listen(server: Server, port: number, which: 'secure' | 'readOnly'): Promise<void> {
    return new Promise((resolve) => {
      const attempt = (first: boolean): void => {
        if (closed) {
          resolve();
          return;
        }
        const onError = (err: NodeJS.ErrnoException): void => {
          server.off('listening', onListening);
          log.error('kubelet API cannot listen; retrying', {
            address: `${opts.address}:${port}`,
            which,
            err: describeError(err),
          });
          const t = setTimeout(() => {
            retryTimers.delete(t);
            attempt(false);
          }, opts.bindRetryMs ?? 5_000);
          retryTimers.add(t);
          if (first) resolve();
        };
        const onListening = (): void => {
          server.off('error', onError);
          bound[which] = (server.address() as AddressInfo).port;
          log.info(
            which === 'secure' ? 'serving the kubelet API (HTTPS)' : 'serving the read-only API (HTTP)',
            {
              address: `${opts.address}:${bound[which]}`,
            },
          );
          resolve();
        };
        server.once('error', onError);
        server.once('listening', onListening);
        server.listen(port, opts.address);
      };
      attempt(true);
    });
  }

  function closeServer(server: Server): Promise<void> {
    return new Promise((resolve) => {
      if (!server.listening) {
        resolve();
        return;
      }
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  return {
    async start() {
      await Promise.all([
        listen(secure, opts.port, 'secure'),
        ...(readOnly ? [listen(readOnly, opts.readOnlyPort, 'readOnly')] : []),
      ]);
    },
    ports: () => ({ ...bound }),
    async close() {
      closed = true;
      stopServingRotation?.();
      for (const t of retryTimers) clearTimeout(t);
      retryTimers.clear();
      const closing = Promise.all([closeServer(secure), ...(readOnly ? [closeServer(readOnly)] : [])]);
      // server.close() waits for every connection, upgraded ones (open exec sessions) too.
      for (const socket of upgraded) socket.destroy();
      await closing;
    },
  };
}
