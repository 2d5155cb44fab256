/**
 * The attacker's hands: one batch of actions (HTTP requests to a listener, file access checks, unix
 * socket connects, a TLS handshake, a race for a socket being bound) executed by whoever runs this
 * process — `runuser -u nobody` (as-nobody.ts) for the "any local user" probes, or in-process.
 * No upstream counterpart: upstream has no attacker suite. Node built-ins only, so it runs as
 * any user from a checkout it can read.
 *
 *   runuser -u nobody -- node test/security/lib/prober.ts < actions.json > results.json
 */
import { accessSync, constants, readdirSync, readFileSync, watch } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';

/** A client certificate, by file (the files must be readable by the prober's user). */
export interface ClientCert {
  cert: string;
  key: string;
}

export interface HttpAction {
  op: 'http';
  /** `https://127.0.0.1:10250/pods`, `http://…`, or `unix:/path/to.sock` + `path`. */
  url: string;
  /** For a unix socket: the request path (and query). */
  path?: string;
  method: string;
  headers?: Record<string, string>;
  body?: string;
  cert?: ClientCert;
  /**
   * Send an RFC 6455 WebSocket handshake (the answer is 101 when accepted); an accepted stream is
   * held open `holdMs` (default 0) before it is closed.
   */
  websocket?: { protocols: readonly string[]; holdMs?: number };
  /** How long to wait for the status line (a stream's body is never waited for). */
  timeoutMs?: number;
  /** Body bytes kept (default 2 KiB) and how long the body is read after the status (default 400 ms). */
  maxBody?: number;
  bodyWaitMs?: number;
}

export interface AccessAction {
  op: 'access';
  path: string;
}

export interface ConnectAction {
  op: 'connect';
  /** A unix socket: connect, send `GET /pods`, report what came back. */
  path: string;
}

export interface TlsAction {
  op: 'tls';
  host: string;
  port: number;
  minVersion: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
  maxVersion: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
  /** OpenSSL cipher list the client offers. */
  ciphers?: string;
}

export interface RaceAction {
  op: 'race';
  /** Every socket that appears in this directory is connected to as soon as it is seen. */
  dir: string;
  /** Stop once this file exists (the final socket) plus `afterMs`, or at `maxMs`. */
  until: string;
  afterMs: number;
  maxMs: number;
}

export type Action = HttpAction | AccessAction | ConnectAction | TlsAction | RaceAction;

export interface HttpResult {
  op: 'http';
  status?: number;
  headers?: Record<string, string>;
  /** The first bytes of the body (a stream is cut after a short wait). */
  body?: string;
  error?: string;
}

export interface AccessResult {
  op: 'access';
  exists: boolean;
  read: boolean;
  write: boolean;
  /** Search (directories) or execute. */
  exec: boolean;
}

export interface ConnectResult {
  op: 'connect';
  connected: boolean;
  /** The HTTP status line's code when the socket answered. */
  status?: number;
  error?: string;
}

export interface TlsResult {
  op: 'tls';
  handshake: boolean;
  protocol?: string;
  cipher?: string;
  error?: string;
}

export interface RaceResult {
  op: 'race';
  /** Connects attempted, sockets that accepted one, and HTTP answers got through them. */
  attempts: number;
  connected: number;
  answered: number;
  /** Names seen in the directory. */
  seen: string[];
}

export type ActionResult = HttpResult | AccessResult | ConnectResult | TlsResult | RaceResult;

const BODY_BYTES = 2048;
/** How long a body is read after the status (streams such as SSE never end by themselves). */
const BODY_WAIT_MS = 400;

function flatHeaders(h: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}

function readSome(res: IncomingMessage, maxBody: number, waitMs: number): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      clearTimeout(timer);
      res.destroy();
      resolve(Buffer.concat(chunks).subarray(0, maxBody).toString('utf8'));
    };
    const timer = setTimeout(done, waitMs);
    res.on('data', (c: Buffer) => {
      chunks.push(c);
      size += c.length;
      if (size >= maxBody) done();
    });
    res.once('end', done);
    res.once('error', done);
  });
}

export function runHttp(a: HttpAction): Promise<HttpResult> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { ...(a.headers ?? {}) };
    if (a.websocket) {
      headers.connection = 'Upgrade';
      headers.upgrade = 'websocket';
      headers['sec-websocket-version'] = '13';
      headers['sec-websocket-key'] = Buffer.from('attacker-suite!!').toString('base64');
      if (a.websocket.protocols.length > 0)
        headers['sec-websocket-protocol'] = a.websocket.protocols.join(', ');
    }
    if (a.body !== undefined) headers['content-length'] = String(Buffer.byteLength(a.body));
    const common = { method: a.method, headers, agent: false as const, timeout: a.timeoutMs ?? 10_000 };
    let req;
    if (a.url.startsWith('unix:')) {
      req = httpRequest({ ...common, socketPath: a.url.slice('unix:'.length), path: a.path ?? '/' });
    } else {
      const u = new URL(a.url);
      // The Host header stays the caller's when given (DNS rebinding probes).
      req =
        u.protocol === 'https:'
          ? httpsRequest(u, {
              ...common,
              rejectUnauthorized: false,
              ...(a.cert ? { cert: readFileSync(a.cert.cert), key: readFileSync(a.cert.key) } : {}),
            })
          : httpRequest(u, common);
    }
    let settled = false;
    const finish = (r: HttpResult): void => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    req.once('timeout', () => {
      req.destroy(new Error('no answer in time'));
    });
    req.once('error', (err) => finish({ op: 'http', error: errorText(err) }));
    req.once('upgrade', (res: IncomingMessage, socket) => {
      socket.on('error', () => socket.destroy());
      socket.resume();
      setTimeout(() => {
        socket.destroy();
        finish({ op: 'http', status: res.statusCode ?? 0, headers: flatHeaders(res.headers), body: '' });
      }, a.websocket?.holdMs ?? 0);
    });
    req.once('response', (res: IncomingMessage) => {
      void readSome(res, a.maxBody ?? BODY_BYTES, a.bodyWaitMs ?? BODY_WAIT_MS).then((body) =>
        finish({ op: 'http', status: res.statusCode ?? 0, headers: flatHeaders(res.headers), body }),
      );
    });
    req.end(a.body);
  });
}

export function runAccess(a: AccessAction): AccessResult {
  const can = (mode: number): boolean => {
    try {
      accessSync(a.path, mode);
      return true;
    } catch {
      // EACCES (or ENOENT): this user cannot, which is the answer.
      return false;
    }
  };
  return {
    op: 'access',
    exists: can(constants.F_OK),
    read: can(constants.R_OK),
    write: can(constants.W_OK),
    exec: can(constants.X_OK),
  };
}

/** Connects to a unix socket and sends `GET /pods`; the status code if anything answered. */
function tryConnect(path: string, timeoutMs = 3_000): Promise<ConnectResult> {
  return new Promise((resolve) => {
    const s = netConnect({ path });
    let connected = false;
    let data = '';
    const done = (r: Omit<ConnectResult, 'op' | 'connected'>): void => {
      clearTimeout(timer);
      s.destroy();
      resolve({ op: 'connect', connected, ...r });
    };
    const timer = setTimeout(() => done({ error: 'no answer in time' }), timeoutMs);
    s.once('connect', () => {
      connected = true;
      s.write('GET /pods HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    });
    s.on('data', (c: Buffer) => {
      data += c.toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(data);
      if (m) done({ status: Number(m[1]) });
    });
    s.once('error', (err) => done({ error: errorText(err) }));
    s.once('close', () => done({}));
  });
}

export function runTls(a: TlsAction): Promise<TlsResult> {
  return new Promise((resolve) => {
    const s = tlsConnect({
      host: a.host,
      port: a.port,
      rejectUnauthorized: false,
      minVersion: a.minVersion,
      maxVersion: a.maxVersion,
      // Level 0: the client itself must be willing to offer the weak protocol or cipher.
      ciphers: a.ciphers ?? 'DEFAULT:@SECLEVEL=0',
    });
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ op: 'tls', handshake: false, error: 'no answer in time' });
    }, 5_000);
    s.once('secureConnect', () => {
      clearTimeout(timer);
      const cipher = s.getCipher().name;
      const protocol = s.getProtocol() ?? undefined;
      s.destroy();
      resolve({ op: 'tls', handshake: true, cipher, ...(protocol ? { protocol } : {}) });
    });
    s.once('error', (err) => {
      clearTimeout(timer);
      resolve({ op: 'tls', handshake: false, error: errorText(err) });
    });
  });
}

/**
 * Connects to every socket that appears in `dir` as soon as it is seen (inotify, plus a rescan
 * every millisecond), until `until` exists and `afterMs` more have passed.
 */
export async function runRace(a: RaceAction): Promise<RaceResult> {
  const seen = new Set<string>();
  let attempts = 0;
  let connected = 0;
  let answered = 0;
  const started = Date.now();
  let untilSince: number | undefined;
  const pending = new Set<Promise<void>>();
  const attempt = (name: string): void => {
    attempts++;
    const p = tryConnect(join(a.dir, name), 1_000).then((r) => {
      if (r.connected) connected++;
      if (r.status !== undefined) answered++;
    });
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };
  const scan = (): void => {
    let names: string[] = [];
    try {
      names = readdirSync(a.dir);
    } catch {
      // The directory may not exist yet: the kubelet makes it.
      return;
    }
    for (const n of names) {
      seen.add(n);
      attempt(n);
    }
  };
  let watcher: ReturnType<typeof watch> | undefined;
  try {
    watcher = watch(a.dir, (_e, name) => {
      if (name) {
        seen.add(name);
        attempt(name);
      }
    });
  } catch {
    // No directory yet: the rescan loop alone.
  }
  for (;;) {
    scan();
    if (untilSince === undefined && runAccess({ op: 'access', path: a.until }).exists)
      untilSince = Date.now();
    if (untilSince !== undefined && Date.now() - untilSince > a.afterMs) break;
    if (Date.now() - started > a.maxMs) break;
    await new Promise((r) => setTimeout(r, 1));
  }
  watcher?.close();
  await Promise.all([...pending]);
  return { op: 'race', attempts, connected, answered, seen: [...seen].sort() };
}

export async function runAction(a: Action): Promise<ActionResult> {
  switch (a.op) {
    case 'http':
      return runHttp(a);
    case 'access':
      return runAccess(a);
    case 'connect':
      return tryConnect(a.path);
    case 'tls':
      return runTls(a);
    case 'race':
      return runRace(a);
  }
}

/** Runs the actions a few at a time, results in the same order. */
export async function runActions(actions: readonly Action[], concurrency = 8): Promise<ActionResult[]> {
  const out: ActionResult[] = new Array<ActionResult>(actions.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < actions.length) {
      const i = next++;
      out[i] = await runAction(actions[i] as Action);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, actions.length) }, worker));
  return out;
}

if (import.meta.main) {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const actions = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Action[];
  process.stdout.write(JSON.stringify(await runActions(actions)));
}
