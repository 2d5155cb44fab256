/**
 * The candidate CRI transport bench/cri-codec.ts measures against src/runtime/cri/grpc-invoker.ts
 * (not adopted: see bench/results/2026-11-24-cri-codec.md). It implements the same Invoker, with the
 * same deadlines, cancellation and error codes, so src/runtime/cri/client.test.ts passes on it too.
 */
import net from 'node:net';
import type { DescMethodUnary, DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, type Transport } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { CRI_MAX_MESSAGE_BYTES } from '../../../src/config/defaults.ts';
import { describeError, KubeletError } from '../../../src/util/errors.ts';
import type { Logger } from '../../../src/util/logger.ts';
import { CriError } from '../../../src/runtime/cri/errors.ts';
import { ImageService, RuntimeService } from './gen/api_pb.ts';
import {
  grpcTarget,
  type DefaultDeadline,
  type Invoker,
  type ServiceName,
} from '../../../src/runtime/cri/invoker.ts';
import { toMessageOf, toPlainOf } from './proto-convert.ts';
import type { CallOptions } from '../../../src/runtime/cri/types.ts';

type Obj = Record<string, unknown>;

/** The socket path of a `grpcTarget` (`unix:///abs` and `unix:/abs` → `/abs`, `unix:rel` → `rel`). */
function socketPath(endpoint: string): string {
  const target = grpcTarget(endpoint);
  return target.startsWith('unix://') ? target.slice('unix://'.length) : target.slice('unix:'.length);
}

interface Method {
  desc: DescMethodUnary;
  toMessage: (v: Obj) => Obj;
  toPlain: (m: Obj) => Obj;
}

const services: Record<ServiceName, DescService> = { RuntimeService, ImageService };
const methods = new Map<string, Method>();

function methodOf(service: ServiceName, name: string): Method {
  const key = `${service}/${name}`;
  const cached = methods.get(key);
  if (cached) return cached;
  const desc = services[service].methods.find((x) => x.name === name);
  if (!desc || desc.methodKind !== 'unary') {
    throw new KubeletError('Internal', `CRI ${name}`, `method ${service}.${name} is missing from api.proto`);
  }
  // Checked above: `methodKind` does not narrow DescMethod's type.
  const unary = desc as DescMethodUnary;
  const m: Method = { desc: unary, toMessage: toMessageOf(unary.input), toPlain: toPlainOf(unary.output) };
  methods.set(key, m);
  return m;
}

// gRPC status codes (Connect's Code uses the same numbers).
const CANCELLED = 1;
const DEADLINE_EXCEEDED = 4;
const UNAVAILABLE = 14;

/** Node's errors for a socket nobody listens on (or that vanished): the runtime is unavailable. */
const CONNECT_ERRNOS = new Set(['ENOENT', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTSOCK']);

function errnoIn(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECT_ERRNOS.has(code)) return code;
  }
  return undefined;
}

/**
 * The gRPC status a failed call reports: a runtime's own status as it sent it; a connection that
 * could not be made or broke is UNAVAILABLE (as grpc-js reports it), not Connect's Unknown/Internal.
 */
function statusOf(err: unknown): { code: number; details: string } {
  if (err instanceof ConnectError) {
    if (
      (err.code === Code.Unknown || err.code === Code.Internal || err.code === Code.Aborted) &&
      errnoIn(err)
    ) {
      return { code: UNAVAILABLE, details: `connection error: ${err.rawMessage}` };
    }
    return { code: err.code, details: err.rawMessage };
  }
  if (errnoIn(err)) return { code: UNAVAILABLE, details: `connection error: ${describeError(err)}` };
  return { code: 2, details: describeError(err) };
}

/**
 * The Connect transport: gRPC over node:http2 (@connectrpc/connect-node), one HTTP/2 session on
 * the runtime's unix socket for both services, messages encoded by code generated ahead of time
 * from `api.proto` (@bufbuild/protobuf, gen/api_pb.ts) and converted to and from types.ts.
 */
export function createConnectInvoker(endpoint: string, logger: Logger): Invoker {
  const path = socketPath(endpoint);
  // As upstream, `localhost` in :authority (a unix socket has no host name).
  const sessions = new Http2SessionManager('http://localhost', undefined, {
    createConnection: () => net.connect(path),
  });
  const transport: Transport = createGrpcTransport({
    baseUrl: 'http://localhost',
    sessionManager: sessions,
    readMaxBytes: CRI_MAX_MESSAGE_BYTES,
    writeMaxBytes: CRI_MAX_MESSAGE_BYTES,
    acceptCompression: [],
  });
  let closed = false;

  return {
    close() {
      if (closed) return;
      closed = true;
      sessions.abort();
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
      let res;
      try {
        res = await transport.unary(
          method.desc,
          signal,
          timeoutMs,
          undefined,
          method.toMessage(request as Obj),
        );
      } catch (err) {
        let { code, details } = statusOf(err);
        if (code === DEADLINE_EXCEEDED && timeoutMs !== undefined) {
          details = `${details} (deadline ${timeoutMs} ms)`;
        } else if (code === CANCELLED && signal?.aborted) {
          details = `canceled: ${describeError(signal.reason)}`;
        } else if (closed) {
          code = UNAVAILABLE;
          details = 'CRI client is closed';
        }
        const criErr = new CriError(op, code, details, { cause: err });
        // Not error level: the caller decides what a failure means (NotFound from a status
        // call is often expected). Kept for debugging.
        logger.debug('CRI call failed', { op, grpcCode: code, error: criErr.message });
        throw criErr;
      }
      if (logger.isDebugEnabled()) {
        logger.trace('CRI call', { op, durationMs: Math.round(performance.now() - started) });
      }
      return method.toPlain(res.message) as Res;
    },
  };
}
