/**
 * Unary gRPC calls over HTTP/2 on a unix socket, written on node:http2 (what upstream gets from
 * grpc-go's ClientConn for the CRI's unix socket). Only what a unary call needs: one session,
 * dialled on first use and again after it fails or closes; the gRPC framing; `grpc-timeout` so the
 * server sees the deadline; the deadline and an AbortSignal on the client side (RST_STREAM CANCEL);
 * the status from the trailers (or a trailers-only answer), grpc's mapping of HTTP statuses and
 * RST_STREAM codes; a receive size limit. No compression, no retries, no keepalive pings.
 *
 * No reconnect back-off, unlike grpc-go's (100 ms doubling to 3 s for the CRI): dialling a unix
 * socket costs microseconds, and the callers pace themselves (the relist period, the pod workers'
 * back-off); so a restarted server is reached by the very next call, not after the back-off.
 *
 * It replaced @grpc/grpc-js for the CRI: the same calls cost ~0.5–0.7× the CPU, because most of a
 * small call's client CPU was grpc-js's channel, filter and metadata machinery
 * (bench/results/2026-11-24-cri-codec.md).
 */
import http2 from 'node:http2';
import net from 'node:net';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { sleep } from './abort.ts';
import type { MethodDefinition } from '@grpc/proto-loader';
import { describeError } from './errors.ts';
import { dropNulls } from './grpc-proto.ts';

/** What a call came back with: a gRPC status code (0 = OK), its details, and the message on OK. */
export interface UnaryOutcome {
  code: GrpcStatus;
  details: string;
  /** The response message (without the gRPC frame header); only when `code` is 0. */
  message?: Buffer;
}

export interface UnaryOptions {
  /** The call's deadline from now; none when undefined. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface UnixH2Channel {
  /**
   * Waits until the socket answers (grpc's wait-for-ready: a server still starting is dialled
   * again, 50 ms doubling to 1 s apart) within `timeoutMs`: OK, else DEADLINE_EXCEEDED naming the
   * last dial error, or CANCELLED. Never rejects.
   */
  connect(opts: { timeoutMs: number; signal?: AbortSignal }): Promise<UnaryOutcome>;
  /** Sends one request message to `path` (`/package.Service/Method`). Never rejects. */
  unary(path: string, request: Buffer, opts: UnaryOptions): Promise<UnaryOutcome>;
  /** Closes the session once its calls are done; calls made afterwards answer UNAVAILABLE. */
  close(): void;
}

export interface UnixH2ChannelOptions {
  /** Responses larger than this answer RESOURCE_EXHAUSTED. */
  maxReceiveBytes: number;
  /** Called when the session fails (the calls on it report their own outcome). */
  onSessionError?: (err: Error) => void;
  /**
   * Streams a session carries before the next call dials a new one (its old calls finish on it).
   * Default: half of HTTP/2's client stream IDs (2^30), so a long-lived kubelet never runs out of
   * them (Node would fail the session when it did).
   */
  maxStreamsPerSession?: number;
}

/** connect(): the first pause between dials of a socket that does not answer, doubling up to the max. */
const CONNECT_RETRY_INITIAL_MS = 50;
const CONNECT_RETRY_MAX_MS = 1_000;

/** The status of an answer without grpc-status (grpc's HTTP-to-gRPC status mapping). */
export function grpcCodeForHttpStatus(status: number): GrpcStatus {
  switch (status) {
    case 400:
      return GrpcStatus.INTERNAL;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcStatus.UNAVAILABLE;
    default:
      return GrpcStatus.UNKNOWN;
  }
}

/** The status of a stream reset without a gRPC status (as grpc-go and grpc-js map RST_STREAM codes). */
export function grpcCodeForRstCode(code: number): GrpcStatus {
  switch (code) {
    case http2.constants.NGHTTP2_REFUSED_STREAM:
      return GrpcStatus.UNAVAILABLE;
    case http2.constants.NGHTTP2_CANCEL:
      return GrpcStatus.CANCELLED;
    case http2.constants.NGHTTP2_ENHANCE_YOUR_CALM:
      return GrpcStatus.RESOURCE_EXHAUSTED;
    case http2.constants.NGHTTP2_INADEQUATE_SECURITY:
      return GrpcStatus.PERMISSION_DENIED;
    default:
      return GrpcStatus.INTERNAL;
  }
}

/** The `grpc-timeout` header: at most 8 digits, in the finest unit that fits. */
export function grpcTimeoutHeader(ms: number): string {
  const t = Math.max(0, Math.ceil(ms));
  if (t < 1e8) return `${t}m`;
  if (t / 1000 < 1e8) return `${Math.ceil(t / 1000)}S`;
  return `${Math.ceil(t / 60_000)}M`;
}

/** A request message in its gRPC frame: uncompressed flag, 4-byte big-endian length, the bytes. */
export function grpcFrame(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}

/** The one message of a unary response body, or why the body is not one. */
export function grpcMessageOf(body: Buffer): Buffer | string {
  if (body.length < 5) return 'the response holds no gRPC message';
  if (body[0] !== 0) return 'the response is compressed, which was not asked for';
  if (body.readUInt32BE(1) !== body.length - 5) return 'the response is not exactly one gRPC message';
  return body.subarray(5);
}

/** The socket path of a `unix://…` or `unix:…` target; a bare path as it is. */
export function unixSocketPath(target: string): string {
  if (target.startsWith('unix://')) return target.slice('unix://'.length);
  return target.startsWith('unix:') ? target.slice('unix:'.length) : target;
}

/** A call of a proto-loader method: the status, and on OK the decoded response. */
export interface MethodOutcome {
  code: GrpcStatus;
  details: string;
  /** The decoded response, absent (null) messages dropped; only when `code` is 0. */
  response?: object;
}

/**
 * One unary call of `method` with an encoded request (`method.requestSerialize`): the answer
 * decoded with `method.responseDeserialize` (a response that does not decode is INTERNAL), and
 * proto-loader's nulls for absent messages dropped, as the kubelet's types omit them.
 */
export async function callMethod(
  channel: UnixH2Channel,
  method: MethodDefinition<object, object>,
  request: Buffer,
  opts: UnaryOptions,
): Promise<MethodOutcome> {
  const out = await channel.unary(method.path, request, opts);
  if (out.code !== GrpcStatus.OK) return { code: out.code, details: out.details };
  try {
    return {
      code: out.code,
      details: out.details,
      response: dropNulls(method.responseDeserialize(out.message ?? Buffer.alloc(0))) as object,
    };
  } catch (err) {
    return { code: GrpcStatus.INTERNAL, details: `failed to decode the response: ${describeError(err)}` };
  }
}

/** grpc-message is percent-encoded; a malformed one is kept as sent. */
function decodeGrpcMessage(value: string | string[] | undefined): string {
  if (typeof value !== 'string') return '';
  try {
    return decodeURIComponent(value);
  } catch {
    return value; // not percent-encoded after all: the raw text says more than nothing
  }
}

/** A stream that closed with no status: the connection dropped (the server went away), or it was reset. */
function unanswered(rstCode: number | undefined, sessionGone: boolean): UnaryOutcome {
  if (sessionGone) {
    return { code: GrpcStatus.UNAVAILABLE, details: 'the connection to the server closed before the answer' };
  }
  if (rstCode !== undefined && rstCode !== http2.constants.NGHTTP2_NO_ERROR) {
    return { code: grpcCodeForRstCode(rstCode), details: `Received RST_STREAM with code ${rstCode}` };
  }
  return { code: GrpcStatus.INTERNAL, details: 'the server closed the stream without a status' };
}

export function createUnixH2Channel(socketPath: string, opts: UnixH2ChannelOptions): UnixH2Channel {
  let session: http2.ClientHttp2Session | undefined;
  /** Calls in flight per session: a session with none does not keep the process alive. */
  const inFlight = new WeakMap<http2.ClientHttp2Session, number>();
  const maxStreams = opts.maxStreamsPerSession ?? 2 ** 30;
  /** Streams opened on the current session. */
  let streams = 0;
  let closed = false;

  /** The live session: dialled on first use and again after the last one failed or closed. */
  function currentSession(): http2.ClientHttp2Session {
    if (session && !session.closed && !session.destroyed) {
      if (streams < maxStreams) return session;
      session.close(); // retired: its calls in flight finish, new ones go to a new session
    }
    streams = 0;
    const s = http2.connect('http://localhost', {
      createConnection: () => net.connect(socketPath),
      settings: { enablePush: false },
    });
    const forget = (): void => {
      if (session === s) session = undefined;
    };
    s.on('error', (err: Error) => {
      forget();
      opts.onSessionError?.(err);
    });
    s.on('goaway', forget);
    s.on('close', forget);
    // Idle, the session does not keep the process alive; a call in flight refs it.
    s.unref();
    session = s;
    return s;
  }

  /** How a dial of `s` ends: connected, its error, or 'timeout' / 'aborted' first. */
  function dialOutcome(
    s: http2.ClientHttp2Session,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<'connected' | 'timeout' | 'aborted' | Error> {
    if (!s.connecting && !s.destroyed && !s.closed) return Promise.resolve('connected');
    return new Promise((resolve) => {
      const done = (r: 'connected' | 'timeout' | 'aborted' | Error): void => {
        clearTimeout(timer);
        s.off('connect', onConnect);
        s.off('error', onError);
        s.off('close', onClose);
        signal?.removeEventListener('abort', onAbort);
        resolve(r);
      };
      const onConnect = (): void => done('connected');
      const onError = (err: Error): void => done(err);
      const onClose = (): void => done(new Error('the connection closed'));
      const onAbort = (): void => done('aborted');
      const timer = setTimeout(() => done('timeout'), Math.max(0, timeoutMs));
      s.once('connect', onConnect);
      s.once('error', onError);
      s.once('close', onClose);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  async function connect(o: { timeoutMs: number; signal?: AbortSignal }): Promise<UnaryOutcome> {
    const deadline = performance.now() + o.timeoutMs;
    let pause = CONNECT_RETRY_INITIAL_MS;
    let lastError = 'no answer';
    const timedOut = (): UnaryOutcome => ({
      code: GrpcStatus.DEADLINE_EXCEEDED,
      details: `failed to connect within ${o.timeoutMs} ms: ${lastError}`,
    });
    const cancelled: UnaryOutcome = { code: GrpcStatus.CANCELLED, details: 'Cancelled on client' };
    for (;;) {
      if (closed) return { code: GrpcStatus.UNAVAILABLE, details: 'the channel is closed' };
      const r = await dialOutcome(currentSession(), deadline - performance.now(), o.signal);
      if (r === 'connected') return { code: GrpcStatus.OK, details: '' };
      if (r === 'aborted') return cancelled;
      if (r === 'timeout') return timedOut();
      lastError = describeError(r);
      const left = deadline - performance.now();
      if (left <= 0) return timedOut();
      try {
        await sleep(Math.min(pause, left), o.signal);
      } catch {
        return cancelled; // sleep rejects only when the signal aborts
      }
      pause = Math.min(pause * 2, CONNECT_RETRY_MAX_MS);
    }
  }

  function unary(path: string, request: Buffer, callOpts: UnaryOptions): Promise<UnaryOutcome> {
    if (closed) return Promise.resolve({ code: GrpcStatus.UNAVAILABLE, details: 'the channel is closed' });
    return new Promise<UnaryOutcome>((resolve) => {
      const headers: http2.OutgoingHttpHeaders = {
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
      };
      if (callOpts.timeoutMs !== undefined) headers['grpc-timeout'] = grpcTimeoutHeader(callOpts.timeoutMs);
      const s = currentSession();
      let stream: http2.ClientHttp2Stream;
      try {
        stream = s.request(headers);
        streams++;
      } catch (err) {
        // A session that is closing or destroyed refuses new streams.
        resolve({ code: GrpcStatus.UNAVAILABLE, details: describeError(err) });
        return;
      }
      const calls = inFlight.get(s) ?? 0;
      inFlight.set(s, calls + 1);
      if (calls === 0) s.ref();
      let outcome: UnaryOutcome | undefined;
      const settle = (o: UnaryOutcome): void => {
        outcome ??= o;
      };
      const cancel = (o: UnaryOutcome): void => {
        settle(o);
        if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
      };
      const timer =
        callOpts.timeoutMs === undefined
          ? undefined
          : setTimeout(
              () => cancel({ code: GrpcStatus.DEADLINE_EXCEEDED, details: 'Deadline exceeded' }),
              callOpts.timeoutMs,
            );
      const signal = callOpts.signal;
      const onAbort = (): void => cancel({ code: GrpcStatus.CANCELLED, details: 'Cancelled on client' });
      signal?.addEventListener('abort', onAbort, { once: true });

      const chunks: Buffer[] = [];
      let size = 0;
      const fromStatus = (h: http2.IncomingHttpHeaders): void => {
        const header = h['grpc-status'];
        if (header === undefined) return;
        const code = Number(header) as GrpcStatus;
        const details = decodeGrpcMessage(h['grpc-message']);
        if (code !== GrpcStatus.OK) {
          settle({ code, details });
          return;
        }
        const message = grpcMessageOf(Buffer.concat(chunks, size));
        settle(
          typeof message === 'string'
            ? { code: GrpcStatus.INTERNAL, details: message }
            : { code, details, message },
        );
      };
      stream.on('response', (h) => {
        const http = Number(h[':status']);
        if (http !== 200) {
          settle({ code: grpcCodeForHttpStatus(http), details: `Received HTTP status code ${http}` });
        } else {
          fromStatus(h); // a trailers-only answer carries the status in its headers
        }
      });
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > opts.maxReceiveBytes + 5) {
          cancel({
            code: GrpcStatus.RESOURCE_EXHAUSTED,
            details: `Received message larger than max (${size - 5} vs. ${opts.maxReceiveBytes})`,
          });
          return;
        }
        chunks.push(chunk);
      });
      stream.on('trailers', fromStatus);
      stream.on('error', (err) => settle({ code: GrpcStatus.UNAVAILABLE, details: describeError(err) }));
      stream.on('close', () => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const left = (inFlight.get(s) ?? 1) - 1;
        inFlight.set(s, left);
        if (left === 0 && !s.destroyed) s.unref();
        resolve(outcome ?? unanswered(stream.rstCode, s.destroyed));
      });
      stream.end(grpcFrame(request));
    });
  }

  return {
    connect,
    unary,
    close() {
      if (closed) return;
      closed = true;
      session?.close();
      session = undefined;
    },
  };
}
