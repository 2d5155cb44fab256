/**
 * A third CRI transport bench/cri-codec.ts measures (not adopted; see
 * bench/results/2026-11-24-cri-codec.md): gRPC unary calls written directly on node:http2, with the
 * same protobufjs codec as today's client (proto-loader's serialize/deserialize of api.proto). It
 * implements the Invoker with the same deadlines, cancellation and error codes as
 * src/runtime/cri/grpc-invoker.ts (src/runtime/cri/client.test.ts passes on it), and nothing else
 * gRPC has: no retries, no reconnect back-off (each call after a failure dials again), no
 * compression, no keepalive, unary calls only.
 */
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import { loadSync, type MethodDefinition, type PackageDefinition } from '@grpc/proto-loader';
import { CRI_MAX_MESSAGE_BYTES } from '../../../src/config/defaults.ts';
import { describeError, KubeletError } from '../../../src/util/errors.ts';
import type { Logger } from '../../../src/util/logger.ts';
import { CriError } from '../../../src/runtime/cri/errors.ts';
import {
  grpcTarget,
  type DefaultDeadline,
  type Invoker,
  type ServiceName,
} from '../../../src/runtime/cri/invoker.ts';
import type { CallOptions } from '../../../src/runtime/cri/types.ts';

// gRPC status codes.
const CANCELLED = 1;
const UNKNOWN = 2;
const DEADLINE_EXCEEDED = 4;
const RESOURCE_EXHAUSTED = 8;
const PERMISSION_DENIED = 7;
const UNIMPLEMENTED = 12;
const INTERNAL = 13;
const UNAVAILABLE = 14;
const UNAUTHENTICATED = 16;

type Method = MethodDefinition<object, object>;

// Loaded here rather than through grpc-invoker.ts, which would load @grpc/grpc-js too.
const PROTO_PATH = path.join(import.meta.dirname, '../../../src/runtime/cri/api.proto');
let packageDefinition: PackageDefinition | undefined;

function criPackageDefinition(): PackageDefinition {
  packageDefinition ??= loadSync(PROTO_PATH, {
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return packageDefinition;
}

function methodOf(service: ServiceName, name: string): Method {
  const svc = criPackageDefinition()[`runtime.v1.${service}`];
  const method = svc && !('format' in svc) ? svc[name] : undefined;
  if (!method) {
    throw new KubeletError('Internal', `CRI ${name}`, `method ${service}.${name} is missing from api.proto`);
  }
  return method;
}

/** As grpc-invoker.ts: proto-loader's `defaults: true` gives absent messages as null; types.ts omits them. */
function dropNulls(value: unknown): unknown {
  if (Array.isArray(value)) {
    for (const item of value) dropNulls(item);
    return value;
  }
  if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    const obj = value as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      if (obj[key] === null) delete obj[key];
      else dropNulls(obj[key]);
    }
  }
  return value;
}

/** The status of a response without grpc-status (grpc's HTTP-to-gRPC status mapping). */
function httpStatusCode(status: number): number {
  switch (status) {
    case 400:
      return INTERNAL;
    case 401:
      return UNAUTHENTICATED;
    case 403:
      return PERMISSION_DENIED;
    case 404:
      return UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return UNAVAILABLE;
    default:
      return UNKNOWN;
  }
}

/** A stream reset without a gRPC status (as grpc-js maps RST_STREAM codes). */
function rstCode(code: number): number {
  switch (code) {
    case http2.constants.NGHTTP2_REFUSED_STREAM:
      return UNAVAILABLE;
    case http2.constants.NGHTTP2_CANCEL:
      return CANCELLED;
    case http2.constants.NGHTTP2_ENHANCE_YOUR_CALM:
      return RESOURCE_EXHAUSTED;
    case http2.constants.NGHTTP2_INADEQUATE_SECURITY:
      return PERMISSION_DENIED;
    default:
      return INTERNAL;
  }
}

/** grpc-timeout: at most 8 digits, in the finest unit that fits. */
function grpcTimeout(ms: number): string {
  const t = Math.max(0, Math.ceil(ms));
  if (t < 1e8) return `${t}m`;
  if (t / 1000 < 1e8) return `${Math.ceil(t / 1000)}S`;
  return `${Math.ceil(t / 60_000)}M`;
}

function frame(body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + body.length);
  out[0] = 0;
  out.writeUInt32BE(body.length, 1);
  body.copy(out, 5);
  return out;
}

interface Outcome {
  code: number;
  details: string;
  body?: Buffer;
}

export function createH2Invoker(endpoint: string, logger: Logger): Invoker {
  const target = grpcTarget(endpoint);
  const socket = target.startsWith('unix://') ? target.slice('unix://'.length) : target.slice('unix:'.length);
  let session: http2.ClientHttp2Session | undefined;
  let active = 0;
  let closed = false;

  /** The live session, dialled on first use and again after it fails or closes. */
  function sessionNow(): http2.ClientHttp2Session {
    if (session && !session.closed && !session.destroyed) return session;
    const s = http2.connect('http://localhost', { createConnection: () => net.connect(socket) });
    const forget = (): void => {
      if (session === s) session = undefined;
    };
    // A failed session fails its streams (each reports it); the next call dials again.
    s.on('error', forget);
    s.on('goaway', forget);
    s.on('close', forget);
    s.unref();
    session = s;
    return s;
  }

  function exchange(method: Method, body: Buffer, timeoutMs: number | undefined, signal?: AbortSignal) {
    return new Promise<Outcome>((resolve) => {
      let stream: http2.ClientHttp2Stream;
      const s = sessionNow();
      try {
        const headers: http2.OutgoingHttpHeaders = {
          ':method': 'POST',
          ':path': method.path,
          'content-type': 'application/grpc',
          te: 'trailers',
        };
        if (timeoutMs !== undefined) headers['grpc-timeout'] = grpcTimeout(timeoutMs);
        stream = s.request(headers);
      } catch (err) {
        resolve({ code: UNAVAILABLE, details: describeError(err) });
        return;
      }
      if (active++ === 0) s.ref();
      let outcome: Outcome | undefined;
      const settle = (o: Outcome): void => {
        outcome ??= o;
      };
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              settle({ code: DEADLINE_EXCEEDED, details: 'Deadline exceeded' });
              stream.close(http2.constants.NGHTTP2_CANCEL);
            }, timeoutMs);
      const onAbort = (): void => {
        settle({ code: CANCELLED, details: 'Cancelled on client' });
        stream.close(http2.constants.NGHTTP2_CANCEL);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const chunks: Buffer[] = [];
      let size = 0;
      const status = (h: http2.IncomingHttpHeaders): void => {
        const code = h['grpc-status'];
        if (code === undefined) return;
        const message = h['grpc-message'];
        const details = typeof message === 'string' ? decodeURIComponent(message) : '';
        settle({ code: Number(code), details, body: Buffer.concat(chunks, size) });
      };
      stream.on('response', (h) => {
        const http = Number(h[':status']);
        if (http !== 200)
          settle({ code: httpStatusCode(http), details: `Received HTTP status code ${http}` });
        else status(h); // trailers-only: the status comes in the headers
      });
      stream.on('data', (c: Buffer) => {
        size += c.length;
        if (size > CRI_MAX_MESSAGE_BYTES + 5) {
          settle({
            code: RESOURCE_EXHAUSTED,
            details: `Received message larger than max (${size} vs. ${CRI_MAX_MESSAGE_BYTES})`,
          });
          stream.close(http2.constants.NGHTTP2_CANCEL);
          return;
        }
        chunks.push(c);
      });
      stream.on('trailers', status);
      stream.on('error', (err) => settle({ code: UNAVAILABLE, details: describeError(err) }));
      stream.on('close', () => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (--active === 0 && !s.destroyed) s.unref();
        resolve(
          outcome ??
            (stream.rstCode !== undefined && stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR
              ? { code: rstCode(stream.rstCode), details: `Received RST_STREAM with code ${stream.rstCode}` }
              : { code: INTERNAL, details: 'Server closed the stream without a status' }),
        );
      });
      stream.end(frame(body));
    });
  }

  return {
    close() {
      if (closed) return;
      closed = true;
      session?.close();
      session = undefined;
    },

    async call<Res>(
      service: ServiceName,
      name: string,
      request: object,
      opts: CallOptions | undefined,
      defaultDeadlineMs: DefaultDeadline,
    ): Promise<Res> {
      const op = `CRI ${name}`;
      const signal = opts?.signal;
      if (closed) throw new CriError(op, UNAVAILABLE, 'CRI client is closed');
      if (signal?.aborted) {
        throw new CriError(op, CANCELLED, `canceled before start: ${describeError(signal.reason)}`, {
          cause: signal.reason,
        });
      }
      const method = methodOf(service, name);
      const timeoutMs = opts?.timeoutMs ?? defaultDeadlineMs;
      const started = performance.now();
      const body = method.requestSerialize(request);
      if (body.length > CRI_MAX_MESSAGE_BYTES) {
        throw new CriError(op, RESOURCE_EXHAUSTED, `Sent message larger than max (${body.length})`);
      }
      const out = await exchange(method, body, timeoutMs, signal);
      let { code, details } = out;
      let response: object | undefined;
      if (code === 0) {
        const b = out.body ?? Buffer.alloc(0);
        if (b.length < 5 || b[0] !== 0 || b.readUInt32BE(1) !== b.length - 5) {
          code = INTERNAL;
          details = b[0] === 1 ? 'compressed response not accepted' : 'response is not one gRPC message';
        } else {
          try {
            response = method.responseDeserialize(b.subarray(5));
          } catch (err) {
            code = INTERNAL;
            details = `failed to decode the response: ${describeError(err)}`;
          }
        }
      }
      if (code !== 0) {
        if (code === DEADLINE_EXCEEDED && timeoutMs !== undefined) {
          details = `${details} (deadline ${timeoutMs} ms)`;
        } else if (code === CANCELLED && signal?.aborted) {
          details = `canceled: ${describeError(signal.reason)}`;
        }
        const criErr = new CriError(op, code, details);
        logger.debug('CRI call failed', { op, grpcCode: code, error: criErr.message });
        throw criErr;
      }
      if (logger.isDebugEnabled()) {
        logger.trace('CRI call', { op, durationMs: Math.round(performance.now() - started) });
      }
      return dropNulls(response ?? {}) as Res;
    },
  };
}
