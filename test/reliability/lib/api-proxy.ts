/**
 * A fault-injecting HTTPS proxy on loopback, between one kubelet and the real kube-apiserver of the
 * bed. It terminates TLS (a serving certificate the kubelet's CA trusts), so it sees every request:
 * it counts them by verb and resource (LIST vs WATCH vs PATCH of pods, leases, …) and answers them
 * as the current mode says. Upstream, it presents the node's own client certificate, so the API
 * server's Node authorizer still sees `system:node:<name>`.
 *
 * Modes, switchable at any time:
 *  - `pass`: forward everything;
 *  - `refuse`: stop listening and reset every open connection (new ones get ECONNREFUSED, as when
 *    the API server is down);
 *  - `delay`: every response head, and every chunk of its body, `ms` later than it came;
 *  - `drop-watches`: forward, but cut each watch's connection `afterMs` into it (and the ones already
 *    open, `afterMs` after the switch);
 *  - `status`: answer with an HTTP error (`429` with `Retry-After`, `500`, …) and a Status body,
 *    every request or only watches;
 *  - `gone-watches`: answer each watch as the API server does when its resourceVersion is too old
 *    (200, one ERROR event carrying a 410 Expired Status, end); other requests pass;
 *  - `truncate`: forward, but cut each response body: a plain response gets the first half of its
 *    bytes with a matching Content-Length (so the client reads malformed JSON), a watch gets half
 *    of its first chunk and a reset.
 * Every switch away from `pass` resets the watches in flight, so the kubelet meets the new mode at
 * once instead of on its next watch.
 *
 * Bounded: at most `maxConnections` client connections and as many upstream sockets, at most
 * `maxBufferedBytes` held per delayed response (the upstream is paused beyond), and the request log
 * keeps the last `logCapacity` entries. Listens on 127.0.0.1 only.
 */
import { Agent, createServer, request as httpsRequest, type Server } from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { classifyRequest, type RequestKind } from './api-request-kind.ts';

export { classifyRequest, type ApiVerb, type RequestKind } from './api-request-kind.ts';

export type ProxyMode =
  | { kind: 'pass' }
  | { kind: 'refuse' }
  | { kind: 'delay'; ms: number }
  | { kind: 'drop-watches'; afterMs: number }
  | { kind: 'status'; code: number; retryAfterSeconds?: number; watchesOnly?: boolean }
  | { kind: 'gone-watches' }
  | { kind: 'truncate' };

export interface ProxiedRequest extends RequestKind {
  /** When it arrived (ms since the epoch). */
  at: number;
  /** The status the kubelet got (0: none, the connection was cut or refused). */
  status: number;
  /** Whether the mode answered or cut it instead of the API server. */
  faulted: boolean;
}

export interface ApiProxyOptions {
  /** The API server, `https://127.0.0.1:<port>`. */
  upstream: string;
  /** PEM: the CA the API server's certificate is signed by. */
  ca: string;
  /** PEM pair the proxy serves with (a certificate for 127.0.0.1 the kubelet's CA trusts). */
  serving: { cert: string; key: string };
  /** PEM pair presented to the API server (the node's client certificate). */
  client: { cert: string; key: string };
  /** 0 (default): any free port, kept across `refuse` periods. */
  port?: number;
  maxConnections?: number;
  maxBufferedBytes?: number;
  logCapacity?: number;
}

export interface ApiProxy {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  mode(): ProxyMode;
  /** Switches mode; resolves once listening (or not, for `refuse`) matches it. */
  setMode(mode: ProxyMode): Promise<void>;
  /** The request log (the last `logCapacity` requests), oldest first, optionally within [from, to). */
  requests(from?: number, to?: number): ProxiedRequest[];
  /** Requests per `VERB resource` within [from, to). */
  counts(from?: number, to?: number): Record<string, number>;
  /** Connections open now (client side). */
  openConnections(): number;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'host',
]);

function forwardHeaders(h: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
  return out;
}

function statusBody(code: number): string {
  const reason =
    code === 429 ? 'TooManyRequests' : code === 410 ? 'Expired' : code >= 500 ? 'InternalError' : 'Unknown';
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `injected by the fault proxy (${code})`,
    reason,
    code,
  });
}

interface WatchHandle {
  cut: () => void;
  timer?: NodeJS.Timeout;
}

const GONE_EVENT =
  JSON.stringify({
    type: 'ERROR',
    object: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'too old resource version (injected by the fault proxy)',
      reason: 'Expired',
      code: 410,
    },
  }) + '\n';

export async function startApiProxy(opts: ApiProxyOptions): Promise<ApiProxy> {
  const upstream = new URL(opts.upstream);
  const maxConnections = opts.maxConnections ?? 128;
  const maxBuffered = opts.maxBufferedBytes ?? 8 << 20;
  const logCapacity = opts.logCapacity ?? 200_000;
  const agent = new Agent({
    keepAlive: true,
    maxSockets: maxConnections,
    maxFreeSockets: 16,
    ca: opts.ca,
    cert: opts.client.cert,
    key: opts.client.key,
  });
  let mode: ProxyMode = { kind: 'pass' };
  const log: ProxiedRequest[] = [];
  let logStart = 0; // ring buffer: oldest entry's index once full
  const sockets = new Set<Socket>();
  /** Watches in flight: cut them (mode switch, drop-watches). */
  const watches = new Set<WatchHandle>();
  let closed = false;

  function record(entry: ProxiedRequest): void {
    if (log.length < logCapacity) log.push(entry);
    else {
      log[logStart] = entry;
      logStart = (logStart + 1) % logCapacity;
    }
  }

  function ordered(): ProxiedRequest[] {
    return log.length < logCapacity ? [...log] : [...log.slice(logStart), ...log.slice(0, logStart)];
  }

  function answer(res: ServerResponse, entry: ProxiedRequest, code: number, retryAfter?: number): void {
    const body = statusBody(code);
    entry.status = code;
    entry.faulted = true;
    res.writeHead(code, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(body),
      ...(retryAfter !== undefined ? { 'Retry-After': String(retryAfter) } : {}),
    });
    res.end(body);
  }

  /**
   * The head, then every chunk, each `ms` after it came from upstream, in order; `src` is paused
   * while more than maxBuffered bytes are held.
   */
  function delayedPipe(src: IncomingMessage, res: ServerResponse, ms: number, writeHead: () => void): void {
    let held = 0;
    const after = (due: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, due - Date.now())));
    let last = after(Date.now() + ms).then(() => {
      if (!res.destroyed) writeHead();
    });
    src.on('data', (chunk: Buffer) => {
      held += chunk.length;
      if (held > maxBuffered) src.pause();
      const due = Date.now() + ms;
      last = last
        .then(() => after(due))
        .then(() => {
          held -= chunk.length;
          if (!res.destroyed) res.write(chunk);
          if (held <= maxBuffered && src.isPaused()) src.resume();
        });
    });
    src.on('end', () => void last.then(() => res.end()));
  }

  function forward(
    req: IncomingMessage,
    res: ServerResponse,
    entry: ProxiedRequest,
    isWatch: boolean,
    at: ProxyMode,
  ): void {
    const up = httpsRequest({
      protocol: upstream.protocol,
      hostname: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: forwardHeaders(req.headers),
      agent,
    });
    const w: WatchHandle = { cut: () => res.socket?.destroy() };
    let upstreamDone = false;
    res.on('close', () => {
      if (w.timer) clearTimeout(w.timer);
      watches.delete(w);
      if (!upstreamDone) up.destroy();
    });
    up.on('error', () => {
      if (!res.headersSent) {
        entry.status = 502;
        res.writeHead(502, { 'Content-Type': 'text/plain' });
        res.end('upstream error');
      } else res.destroy();
    });
    up.on('response', (ures) => {
      const status = ures.statusCode ?? 502;
      entry.status = status;
      ures.on('end', () => (upstreamDone = true));
      const headers = forwardHeaders(ures.headers);
      if (isWatch) {
        watches.add(w);
        if (mode.kind === 'drop-watches') armDrop(w, mode.afterMs);
      }
      if (res.destroyed) {
        ures.destroy();
      } else if (at.kind === 'truncate') {
        entry.faulted = true;
        truncate(ures, res, status, headers, isWatch);
      } else if (at.kind === 'delay') {
        entry.faulted = true;
        delayedPipe(ures, res, at.ms, () => res.writeHead(status, headers));
      } else {
        res.writeHead(status, headers);
        ures.pipe(res);
      }
    });
    req.pipe(up);
  }

  function truncate(
    ures: IncomingMessage,
    res: ServerResponse,
    status: number,
    headers: Record<string, string | string[]>,
    isWatch: boolean,
  ): void {
    if (isWatch) {
      res.writeHead(status, headers);
      ures.once('data', (chunk: Buffer) => {
        res.write(chunk.subarray(0, Math.max(1, chunk.length >> 1)));
        ures.destroy();
        setImmediate(() => res.socket?.destroy());
      });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    ures.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBuffered) {
        ures.destroy();
        res.destroy();
        return;
      }
      chunks.push(c);
    });
    ures.on('end', () => {
      const body = Buffer.concat(chunks);
      const cut = body.subarray(0, body.length >> 1);
      delete headers['content-length'];
      res.writeHead(status, { ...headers, 'Content-Length': cut.length });
      res.end(cut);
    });
  }

  function armDrop(w: WatchHandle, afterMs: number): void {
    if (w.timer) clearTimeout(w.timer);
    w.timer = setTimeout(w.cut, afterMs);
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const kind = classifyRequest(req.method ?? 'GET', req.url ?? '/');
    const entry: ProxiedRequest = { ...kind, at: Date.now(), status: 0, faulted: false };
    record(entry);
    const isWatch = kind.verb === 'WATCH';
    const at = mode;
    switch (at.kind) {
      case 'refuse':
        // Only a connection accepted just before the switch gets here.
        entry.faulted = true;
        req.socket.destroy();
        return;
      case 'status':
        if (!at.watchesOnly || isWatch) {
          req.resume();
          answer(res, entry, at.code, at.retryAfterSeconds);
          return;
        }
        break;
      case 'gone-watches':
        if (isWatch) {
          req.resume();
          entry.status = 200;
          entry.faulted = true;
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(GONE_EVENT);
          return;
        }
        break;
      default:
        break;
    }
    forward(req, res, entry, isWatch, at);
  }

  const server: Server = createServer({ cert: opts.serving.cert, key: opts.serving.key }, handle);
  server.maxConnections = maxConnections;
  // Longer than the kubelet's idle keep-alive sockets live: a proxy that closes idle connections
  // first would add resets of its own (a request racing the close) to the faults it injects.
  server.keepAliveTimeout = 10 * 60_000;
  // Raw TCP sockets, so a connection still in its TLS handshake is reset too (refuse, close).
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('tlsClientError', (_err, s) => s.destroy());

  let port = opts.port ?? 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        const addr = server.address();
        if (addr && typeof addr === 'object') port = addr.port;
        resolve();
      });
    });
  const unlisten = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
  await listen();

  return {
    get url() {
      return `https://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    mode: () => mode,
    async setMode(next) {
      if (closed) return;
      const prev = mode;
      mode = next;
      if (next.kind === 'refuse' && prev.kind !== 'refuse') {
        await unlisten();
        return;
      }
      if (prev.kind === 'refuse' && next.kind !== 'refuse') await listen();
      if (next.kind === 'drop-watches') for (const w of watches) armDrop(w, next.afterMs);
      else if (next.kind !== 'pass') for (const w of [...watches]) w.cut();
    },
    requests(from = 0, to = Infinity) {
      return ordered().filter((r) => r.at >= from && r.at < to);
    },
    counts(from = 0, to = Infinity) {
      const out: Record<string, number> = {};
      for (const r of ordered()) {
        if (r.at < from || r.at >= to) continue;
        const k = `${r.verb} ${r.resource}`;
        out[k] = (out[k] ?? 0) + 1;
      }
      return out;
    },
    openConnections: () => sockets.size,
    async close() {
      if (closed) return;
      closed = true;
      for (const w of watches) if (w.timer) clearTimeout(w.timer);
      if (mode.kind !== 'refuse') await unlisten();
      agent.destroy();
    },
  };
}
