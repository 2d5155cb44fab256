/**
 * The kubelet's API client (upstream client-go rest.RESTClient + transport, the parts a kubelet
 * uses): raw JSON over a keep-alive node:https agent, a token bucket, a timeout per request, watches
 * as line-delimited JSON. Credentials come from the kubeconfig and are kept current by
 * credentials.ts (certificate files, tokenFile, exec plugins; reloadCredentials() for the
 * certificate manager).
 */
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { KubeletError, describeError } from '../util/errors.ts';
import { combineSignals, untilAborted } from '../util/abort.ts';
import { monotonicNow } from '../util/clock.ts';
import { nullLogger, type Logger } from '../util/logger.ts';
import { createRateLimiter, type RateLimiter } from './rate-limiter.ts';
import { loadKubeconfig } from './kubeconfig.ts';
import { createClientCredentials, type ClientCredentials, type RequestCredentials } from './credentials.ts';
import {
  ApiError,
  QuietWatchError,
  type ApiClient,
  type ApiRequest,
  type WatchEvent,
} from './client-types.ts';

export interface ApiClientOptions {
  /** Path to a kubeconfig (the kubelet's --kubeconfig). */
  kubeconfig: string;
  /** kubeAPIQPS / kubeAPIBurst; qps 0 disables the limit. */
  qps: number;
  burst: number;
  /** Per-request timeout (watches are exempt). Default 10 s. */
  requestTimeoutMs?: number;
  /** The User-Agent header (default `tskubelet`). */
  userAgent?: string;
  /** The longest watch event line accepted (default MAX_WATCH_LINE_BYTES); longer cuts the watch off. */
  maxWatchLineBytes?: number;
  /** Where credential rotation and exec plugin trouble is logged (default: nowhere). */
  logger?: Logger;
  /** How often client certificate files are checked (default CLIENT_CERT_FILE_CHECK_PERIOD_MS). */
  certCheckPeriodMs?: number;
  /**
   * Called once per finished request (client-go's request metrics): the method, the full URL, the
   * HTTP status (undefined when none came back) and the duration. Must be cheap and never throw.
   */
  onRequestDone?: (r: {
    verb: string;
    url: URL;
    status: number | undefined;
    durationSeconds: number;
  }) => void;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
/** One watch event's line; a stream that sends more without a newline is cut off. */
export const MAX_WATCH_LINE_BYTES = MAX_RESPONSE_BYTES;
/** A Retry-After longer than this is taken as this (client-go honours any; a hostile value is not). */
const MAX_RETRY_AFTER_S = 60;

/**
 * The Retry-After header of a 429 or 5xx answer, in seconds (client-go's checkWait: integer seconds
 * only, the HTTP-date form is ignored); undefined when absent or unusable.
 */
export function parseRetryAfter(status: number, header: string | string[] | undefined): number | undefined {
  if (status !== 429 && status < 500) return undefined;
  const v = Array.isArray(header) ? header[0] : header;
  if (v === undefined || !/^\s*\d+\s*$/.test(v)) return undefined;
  return Math.min(Number(v), MAX_RETRY_AFTER_S);
}

function buildPath(path: string, query: ApiRequest['query']): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

async function readBody(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > MAX_RESPONSE_BYTES)
      throw new KubeletError('ResourceExhausted', 'read API response', 'response too large');
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function errorFromBody(op: string, res: IncomingMessage, body: string): ApiError {
  const status = res.statusCode ?? 0;
  const retryAfterSeconds = parseRetryAfter(status, res.headers['retry-after']);
  const options = retryAfterSeconds === undefined ? undefined : { retryAfterSeconds };
  try {
    const s = JSON.parse(body) as { kind?: string; reason?: string; message?: string };
    if (s.kind === 'Status') return new ApiError(op, status, s.reason ?? '', s.message ?? body, options);
  } catch {
    // not a Status object: fall through to the raw body
  }
  return new ApiError(op, status, '', body.slice(0, 500), options);
}

/**
 * Creates an API client from a kubeconfig (see ApiClient). One keep-alive agent per client; the
 * kubelet makes a second client for Lease heartbeats so they never queue behind pod traffic.
 */
export async function createApiClient(opts: ApiClientOptions): Promise<ApiClient> {
  const kc = await loadKubeconfig(opts.kubeconfig);
  const server = new URL(kc.server);
  const creds: ClientCredentials = createClientCredentials(kc, {
    logger: (opts.logger ?? nullLogger).child({ kubeconfig: opts.kubeconfig }),
    ...(opts.certCheckPeriodMs !== undefined ? { certCheckPeriodMs: opts.certCheckPeriodMs } : {}),
  });
  const limiter: RateLimiter = createRateLimiter(opts.qps, opts.burst);
  const timeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const userAgent = opts.userAgent ?? 'tskubelet';
  const maxLine = opts.maxWatchLineBytes ?? MAX_WATCH_LINE_BYTES;
  const closed = new AbortController();

  function send(
    auth: RequestCredentials,
    method: string,
    path: string,
    body: string | undefined,
    contentType: string | undefined,
    signal: AbortSignal,
  ): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = {
        Accept: 'application/json',
        'User-Agent': userAgent,
      };
      if (auth.authorization) headers.Authorization = auth.authorization;
      if (body !== undefined) {
        headers['Content-Type'] = contentType ?? 'application/json';
        headers['Content-Length'] = String(Buffer.byteLength(body));
      }
      const req = httpsRequest(
        {
          protocol: server.protocol,
          hostname: server.hostname,
          port: server.port,
          path: `${server.pathname.replace(/\/$/, '')}${path}`,
          method,
          headers,
          agent: auth.agent,
          signal,
        },
        resolve,
      );
      req.on('error', reject);
      if (body !== undefined) req.write(body);
      req.end();
    });
  }

  function wrapNetworkError(op: string, err: unknown, signal: AbortSignal): KubeletError {
    if (err instanceof KubeletError) return err;
    if (signal.aborted) {
      const reason: unknown = signal.reason;
      const timedOut = reason instanceof Error && reason.name === 'TimeoutError';
      return new KubeletError(timedOut ? 'DeadlineExceeded' : 'Canceled', op, describeError(reason ?? err), {
        cause: err,
      });
    }
    return new KubeletError('Unavailable', op, describeError(err), { cause: err });
  }

  return {
    server: server.origin,
    async request<T>(req: ApiRequest): Promise<T> {
      const op = `${req.method} ${req.path}`;
      const signal = combineSignals([req.signal, closed.signal], req.timeoutMs ?? timeoutMs);
      let started: number | undefined;
      let status: number | undefined;
      const fullPath = buildPath(req.path, req.query);
      try {
        await limiter.acquire(signal);
        const body = req.body === undefined ? undefined : JSON.stringify(req.body);
        const contentType =
          req.contentType ?? (req.method === 'PATCH' ? 'application/strategic-merge-patch+json' : undefined);
        // An exec plugin may take long: the request's own deadline and cancellation still hold.
        const auth = await untilAborted(creds.forRequest(), signal);
        started = monotonicNow();
        const res = await send(auth, req.method, fullPath, body, contentType, signal);
        status = res.statusCode ?? 0;
        if (status === 401) creds.unauthorized(auth, started);
        const text = await readBody(res);
        if (status < 200 || status >= 300) throw errorFromBody(op, res, text);
        return (text === '' ? undefined : JSON.parse(text)) as T;
      } catch (err) {
        throw wrapNetworkError(op, err, signal);
      } finally {
        if (opts.onRequestDone && started !== undefined) {
          opts.onRequestDone({
            verb: req.method,
            url: new URL(fullPath, server),
            status,
            durationSeconds: (monotonicNow() - started) / 1000,
          });
        }
      }
    },
    async watch(path, query, onEvent, wopts) {
      const op = `WATCH ${path}`;
      const idleMs = wopts.idleTimeoutMs;
      const local = new AbortController();
      const signal = combineSignals([wopts.signal, closed.signal, local.signal]);
      let idleTimer: NodeJS.Timeout | undefined;
      const armIdle = () => {
        if (idleMs === undefined) return;
        if (idleTimer) clearTimeout(idleTimer);
        idleTimer = setTimeout(() => local.abort(new QuietWatchError(op, idleMs)), idleMs);
      };
      try {
        await limiter.acquire(signal);
        // An exec plugin may take long: the request's own deadline and cancellation still hold.
        const auth = await untilAborted(creds.forRequest(), signal);
        armIdle();
        const startedAt = monotonicNow();
        const res = await send(
          auth,
          'GET',
          buildPath(path, { ...query, watch: 1 }),
          undefined,
          undefined,
          signal,
        );
        const status = res.statusCode ?? 0;
        if (status === 401) creds.unauthorized(auth, startedAt);
        if (status < 200 || status >= 300) throw errorFromBody(op, res, await readBody(res));
        // Decoded as a stream: a character split across two chunks stays one character.
        res.setEncoding('utf8');
        let buffered = '';
        for await (const chunk of res) {
          armIdle();
          buffered += chunk as string;
          if (buffered.length > maxLine && buffered.indexOf('\n') < 0) {
            throw new KubeletError('ResourceExhausted', op, `watch event larger than ${maxLine} bytes`);
          }
          let nl: number;
          while ((nl = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (line === '') continue;
            const ev = JSON.parse(line) as WatchEvent;
            if (ev.type === 'ERROR') {
              const s = (ev.object ?? {}) as { code?: number; reason?: string; message?: string };
              throw new ApiError(op, s.code ?? 500, s.reason ?? '', s.message ?? 'watch error');
            }
            onEvent(ev);
          }
        }
        if (signal.aborted) throw signal.reason;
      } catch (err) {
        const reason: unknown = local.signal.reason;
        if (local.signal.aborted && reason instanceof KubeletError) throw reason;
        throw wrapNetworkError(op, err, signal);
      } finally {
        if (idleTimer) clearTimeout(idleTimer);
      }
    },
    closeConnections() {
      // Destroys the sockets in use and the idle ones; the agents stay usable for new requests.
      creds.closeConnections();
    },
    reloadCredentials() {
      return creds.reload();
    },
    close() {
      closed.abort(new KubeletError('Canceled', 'API client', 'client closed'));
      creds.close();
    },
  };
}
