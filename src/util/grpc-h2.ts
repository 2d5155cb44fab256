/**
 * gRPC calls over HTTP/2, written on node:http2 (what upstream gets from grpc-go's ClientConn): on a
 * unix socket for the CRI, containerd's events and CSI drivers, over TCP for gRPC probes. Only what
 * the kubelet's calls need: one session, dialled on first use and again after it fails or closes;
 * unary calls and server streams; `grpc-timeout` so the server sees the deadline; the deadline and
 * an AbortSignal on the client side (RST_STREAM CANCEL); the status from the trailers (or a
 * trailers-only answer), grpc's mapping of HTTP statuses and RST_STREAM codes; a receive size
 * limit per message. No compression, no retries, no keepalive pings.
 *
 * No reconnect back-off, unlike grpc-go's (100 ms doubling to 3 s for the CRI): dialling a unix
 * socket costs microseconds, and the callers pace themselves (the relist period, the pod workers'
 * back-off, the events client's re-subscribe back-off); so a restarted server is reached by the
 * very next call, not after the back-off.
 *
 * It replaced @grpc/grpc-js in the kubelet process: the same CRI calls cost ~0.5–0.7× the CPU,
 * because most of a small call's client CPU was grpc-js's channel, filter and metadata machinery
 * (bench/results/2026-11-24-cri-codec.md), and the process no longer loads grpc-js at all.
 */
import http2 from 'node:http2';
import net from 'node:net';
import { sleep } from './abort.ts';
import type { MethodDefinition } from '@grpc/proto-loader';
import { describeError } from './errors.ts';
import { dropNulls } from './grpc-proto.ts';
import {
  decodeGrpcMessage,
  GrpcFrameReader,
  grpcCodeForHttpStatus,
  grpcCodeForRstCode,
  grpcFrame,
  GrpcStatus,
  grpcTimeoutHeader,
} from './grpc-wire.ts';

/** What a call came back with: a gRPC status code (0 = OK), its details, and the message on OK. */
export interface UnaryOutcome {
  code: GrpcStatus;
  details: string;
  /** The response message (without the gRPC frame header); only for a unary call that is OK. */
  message?: Buffer;
}

export interface CallOptions {
  /** The call's deadline from now; none when undefined. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Request metadata (lower-case names), e.g. containerd's `containerd-namespace`. */
  metadata?: Readonly<Record<string, string>>;
}

export interface H2Channel {
  /**
   * Waits until the server answers (grpc's wait-for-ready: a server still starting is dialled
   * again, 50 ms doubling to 1 s apart) within `timeoutMs`: OK, else DEADLINE_EXCEEDED naming the
   * last dial error, or CANCELLED. Never rejects.
   */
  connect(opts: { timeoutMs: number; signal?: AbortSignal }): Promise<UnaryOutcome>;
  /** Sends one request message to `path` (`/package.Service/Method`). Never rejects. */
  unary(path: string, request: Buffer, opts: CallOptions): Promise<UnaryOutcome>;
  /**
   * A server-streaming call: `onMessage` gets each response message as it arrives; resolves with
   * the call's status when the stream ends (OK when the server ended it), fails, times out or the
   * signal aborts. Never rejects.
   */
  serverStream(
    path: string,
    request: Buffer,
    opts: CallOptions & { onMessage: (message: Buffer) => void },
  ): Promise<UnaryOutcome>;
  /** Closes the session once its calls are done; calls made afterwards answer UNAVAILABLE. */
  close(): void;
}

export interface H2ChannelOptions {
  /** Response messages larger than this answer RESOURCE_EXHAUSTED. */
  maxReceiveBytes: number;
  /** Called when the session fails (the calls on it report their own outcome). */
  onSessionError?: (err: Error) => void;
  /**
   * Streams a session carries before the next call dials a new one (its old calls finish on it).
   * Default: half of HTTP/2's client stream IDs (2^30), so a long-lived kubelet never runs out of
   * them (Node would fail the session when it did).
   */
  maxStreamsPerSession?: number;
  /** The `user-agent` of every request; none when undefined. */
  userAgent?: string;
}

/** connect(): the first pause between dials of a socket that does not answer, doubling up to the max. */
const CONNECT_RETRY_INITIAL_MS = 50;
const CONNECT_RETRY_MAX_MS = 1_000;

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
  channel: H2Channel,
  method: MethodDefinition<object, object>,
  request: Buffer,
  opts: CallOptions,
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

/** A channel to the gRPC server on the unix socket at `socketPath`. Creating it dials nothing. */
export function createUnixH2Channel(socketPath: string, opts: H2ChannelOptions): H2Channel {
  return createH2Channel(() => net.connect(socketPath), 'localhost', opts);
}

/** A plaintext (h2c) channel to the gRPC server at `host:port`. Creating it dials nothing. */
export function createTcpH2Channel(host: string, port: number, opts: H2ChannelOptions): H2Channel {
  const authority = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return createH2Channel(() => net.connect({ host, port }), authority, opts);
}

/** What one call does with its response messages; `finish` turns the OK status into the outcome. */
interface CallShape {
  onMessage(message: Buffer): void;
  finish(ok: UnaryOutcome): UnaryOutcome;
}

/** A unary call's shape: exactly one response message. */
function unaryShape(): CallShape {
  const messages: Buffer[] = [];
  return {
    onMessage: (m) => void messages.push(m),
    finish(ok) {
      const [message] = messages;
      if (message && messages.length === 1) return { ...ok, message };
      return {
        code: GrpcStatus.INTERNAL,
        details:
          messages.length === 0
            ? 'the response holds no gRPC message'
            : 'the response is not exactly one gRPC message',
      };
    },
  };
}

function createH2Channel(dial: () => net.Socket, authority: string, opts: H2ChannelOptions): H2Channel {
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
    const s = http2.connect(`http://${authority}`, {
      createConnection: dial,
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
      if (o.signal?.aborted) return cancelled;
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

  /** One call on the current session, from its request to its status. Never rejects. */
  function call(
    path: string,
    request: Buffer,
    callOpts: CallOptions,
    shape: CallShape,
  ): Promise<UnaryOutcome> {
    if (closed) return Promise.resolve({ code: GrpcStatus.UNAVAILABLE, details: 'the channel is closed' });
    if (callOpts.signal?.aborted) {
      return Promise.resolve({ code: GrpcStatus.CANCELLED, details: 'Cancelled on client' });
    }
    return new Promise<UnaryOutcome>((resolve) => {
      const headers: http2.OutgoingHttpHeaders = {
        ...callOpts.metadata,
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
      };
      if (opts.userAgent !== undefined) headers['user-agent'] = opts.userAgent;
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

      const reader = new GrpcFrameReader(opts.maxReceiveBytes);
      const fromStatus = (h: http2.IncomingHttpHeaders): void => {
        const header = h['grpc-status'];
        if (header === undefined) return;
        const code = Number(header);
        const details = decodeGrpcMessage(h['grpc-message']);
        if (code !== GrpcStatus.OK) {
          settle({ code, details });
        } else if (reader.buffered > 0) {
          settle({ code: GrpcStatus.INTERNAL, details: 'the response ends inside a gRPC message' });
        } else {
          settle(shape.finish({ code, details }));
        }
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
        if (outcome) return; // settled (cancelled, or a bad message): the rest is not read
        const read = reader.push(chunk);
        if ('error' in read) {
          cancel({ code: read.error, details: read.details });
          return;
        }
        for (const m of read) shape.onMessage(m);
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
    unary: (path, request, callOpts) => call(path, request, callOpts, unaryShape()),
    serverStream: (path, request, callOpts) =>
      call(path, request, callOpts, { onMessage: callOpts.onMessage, finish: (ok) => ok }),
    close() {
      if (closed) return;
      closed = true;
      session?.close();
      session = undefined;
    },
  };
}
