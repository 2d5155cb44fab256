/**
 * How the node CLI reaches a kubelet API: the local unix socket (default
 * `/var/lib/kubelet/tskubelet.sock`, root only, no credentials), or HTTPS to `--server` with the
 * client certificate or token of a kubeconfig. Plain requests, streamed responses (logs -f) and
 * upgrades (exec) all go through here; every failure is an `Error` with one readable line.
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { DEFAULT_ROOT_DIR } from '../../config/defaults.ts';
import { request as httpRequest } from '../../util/node-http.ts';
import { readKubeconfig, type KubeconfigContext } from '../../api/kubeconfig.ts';

export const DEFAULT_SOCKET = join(DEFAULT_ROOT_DIR, 'tskubelet.sock');
const REQUEST_TIMEOUT_MS = 30_000;
/** How long the kubelet may take to answer a request's headers (an exec's upgrade included). */
const HEADERS_TIMEOUT_MS = 30_000;

export interface ConnectionOptions {
  socket?: string;
  kubeconfig?: string;
  context?: string;
  server?: string;
  insecureSkipTlsVerify?: boolean;
}

/** An answer from the kubelet that is not a success: the status and the server's message. */
export class NodeApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'NodeApiError';
    this.status = status;
  }
}

export interface Upgraded {
  socket: Duplex;
  head: Buffer;
  response: IncomingMessage;
}

export interface NodeClient {
  /** `unix:/path` or the server URL, for messages. */
  readonly target: string;
  getJSON<T>(path: string, signal: AbortSignal): Promise<T>;
  /** A 2xx response to read as a stream; anything else rejects with NodeApiError. */
  getStream(path: string, signal: AbortSignal): Promise<IncomingMessage>;
  /** An HTTP upgrade (101); a refusal rejects with NodeApiError carrying the server's message. */
  upgrade(path: string, headers: Record<string, string>, signal: AbortSignal): Promise<Upgraded>;
}

/** The message of an error body: a Status's `message`, else the text. */
export function messageOf(body: string, status: number): string {
  const text = body.trim();
  try {
    const j = JSON.parse(text) as { message?: unknown };
    if (typeof j.message === 'string' && j.message) return j.message;
  } catch {
    // Not JSON: the kubelet's plain-text errors.
  }
  return text || `HTTP ${status}`;
}

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => (body += c));
    res.on('end', () => resolve(body));
    res.on('error', reject);
  });
}

function connectionError(err: unknown, target: string, socket: string | undefined): Error {
  const code = (err as { code?: unknown }).code;
  const msg = err instanceof Error ? err.message : String(err);
  if (socket !== undefined) {
    if (code === 'ENOENT')
      return new Error(`no kubelet socket at ${socket} (is tskubelet running? else pass --socket PATH)`);
    if (code === 'EACCES')
      return new Error(
        `permission denied on ${socket}: the local socket is root only (run as root, or use --kubeconfig with --server)`,
      );
    if (code === 'ECONNREFUSED')
      return new Error(`nobody answers on ${socket} (the kubelet is not running?)`);
  }
  return new Error(`cannot reach the kubelet at ${target}: ${msg}`, { cause: err });
}

export async function connectNode(opts: ConnectionOptions): Promise<NodeClient> {
  let base: RequestOptions;
  let send: (o: RequestOptions) => ClientRequest;
  let target: string;
  let socket: string | undefined;
  if (opts.server !== undefined || opts.kubeconfig !== undefined) {
    if (!opts.server)
      throw new Error('--kubeconfig needs --server https://HOST:10250 (the kubelet, not the API server)');
    let url: URL;
    try {
      url = new URL(opts.server);
    } catch {
      throw new Error(`--server ${JSON.stringify(opts.server)} is not a URL (want https://HOST:10250)`);
    }
    if (url.protocol !== 'https:') throw new Error(`--server must be https://… (got ${opts.server})`);
    // The kubeconfig's credentials only: its server is the API server's, not this kubelet's.
    const creds: Partial<KubeconfigContext> = opts.kubeconfig
      ? await readKubeconfig(opts.kubeconfig, opts.context)
      : { insecureSkipTLSVerify: false };
    const insecure = opts.insecureSkipTlsVerify === true || creds.insecureSkipTLSVerify;
    base = {
      host: url.hostname,
      port: Number(url.port) || 443,
      ...(creds.cert ? { cert: creds.cert, key: creds.key } : {}),
      ...(creds.ca && !insecure ? { ca: creds.ca } : {}),
      rejectUnauthorized: !insecure,
      headers: creds.token ? { authorization: `Bearer ${creds.token}` } : {},
    };
    send = (o) => httpsRequest(o);
    target = url.origin;
  } else {
    socket = opts.socket || DEFAULT_SOCKET;
    base = { socketPath: socket, headers: {} };
    send = (o) => httpRequest(o);
    target = `unix:${socket}`;
  }

  function start(
    path: string,
    headers: Record<string, string>,
    signal: AbortSignal,
  ): { req: ClientRequest; done: Promise<IncomingMessage | Upgraded> } {
    const req = send({
      ...base,
      method: 'GET',
      path,
      headers: { ...(base.headers as Record<string, string>), ...headers },
      signal,
    });
    const done = new Promise<IncomingMessage | Upgraded>((resolve, reject) => {
      // The answer's headers (or the upgrade) must come in time; the body may stream for ever (logs -f).
      const timer = setTimeout(
        () => req.destroy(new Error(`no answer within ${HEADERS_TIMEOUT_MS / 1000} s`)),
        HEADERS_TIMEOUT_MS,
      );
      req.once('response', (res: IncomingMessage) => {
        clearTimeout(timer);
        resolve(res);
      });
      req.once('upgrade', (response: IncomingMessage, s: Duplex, head: Buffer) => {
        clearTimeout(timer);
        resolve({ socket: s, head, response });
      });
      req.once('error', (err) => {
        clearTimeout(timer);
        if (signal.aborted) reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        else reject(connectionError(err, target, socket));
      });
    });
    req.end();
    return { req, done };
  }

  async function failure(res: IncomingMessage): Promise<never> {
    const body = await readAll(res);
    throw new NodeApiError(res.statusCode ?? 0, messageOf(body, res.statusCode ?? 0));
  }

  const isUpgrade = (r: IncomingMessage | Upgraded): r is Upgraded => 'socket' in r && 'head' in r;

  return {
    target,
    async getJSON<T>(path: string, signal: AbortSignal): Promise<T> {
      const s = AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]);
      const r = await start(path, { accept: 'application/json' }, s).done;
      if (isUpgrade(r)) throw new Error(`unexpected upgrade answering GET ${path}`);
      if ((r.statusCode ?? 0) >= 300) return failure(r);
      const body = await readAll(r);
      try {
        return JSON.parse(body) as T;
      } catch (err) {
        throw new Error(`GET ${path}: the kubelet's answer is not JSON: ${body.slice(0, 200)}`, {
          cause: err,
        });
      }
    },
    async getStream(path: string, signal: AbortSignal): Promise<IncomingMessage> {
      const r = await start(path, {}, signal).done;
      if (isUpgrade(r)) throw new Error(`unexpected upgrade answering GET ${path}`);
      if ((r.statusCode ?? 0) >= 300) return failure(r);
      return r;
    },
    async upgrade(path: string, headers: Record<string, string>, signal: AbortSignal): Promise<Upgraded> {
      const r = await start(path, headers, signal).done;
      if (!isUpgrade(r)) return failure(r);
      return r;
    },
  };
}
