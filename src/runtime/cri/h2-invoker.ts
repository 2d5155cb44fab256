/**
 * The CRI transport (upstream pkg/kubelet/cri/remote's gRPC connection to the runtime's socket):
 * unary gRPC calls on node:http2 (src/util/grpc-h2.ts), messages encoded by protobufjs from
 * `api.proto` parsed at run time (@grpc/proto-loader). Both services share one HTTP/2 session.
 */
import path from 'node:path';
import type { MethodDefinition, Options, PackageDefinition } from '@grpc/proto-loader';
import { CRI_MAX_MESSAGE_BYTES } from '../../config/defaults.ts';
import { describeError } from '../../util/errors.ts';
import { callMethod, createUnixH2Channel, unixSocketPath } from '../../util/grpc-h2.ts';
import type { Logger } from '../../util/logger.ts';
import { protoPackage } from '../../util/grpc-proto.ts';
import { GrpcStatus } from '../../util/grpc-wire.ts';
import { CriError } from './errors.ts';
import { grpcTarget, type DefaultDeadline, type Invoker, type ServiceName } from './invoker.ts';
import type { CallOptions } from './types.ts';

/** How the runtime's protos (CRI, containerd's events) are decoded: camelCase fields, numbers, enum names. */
export const RUNTIME_PROTO_OPTIONS: Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

const CRI_PROTO = protoPackage([path.join(import.meta.dirname, 'api.proto')], RUNTIME_PROTO_OPTIONS);

/** The parsed `api.proto`, shared by every client (and by in-process fake runtimes in tests). */
export function criPackageDefinition(): PackageDefinition {
  return CRI_PROTO.definition();
}

type Method = MethodDefinition<object, object>;

/**
 * The status a failed call is reported with. The runtime receives the call's deadline (grpc-timeout)
 * and may run out of it first: containerd then answers UNKNOWN ending "context deadline exceeded"
 * (e.g. "failed to create exec …: context deadline exceeded: unknown"), which can reach the client
 * before its own deadline timer fires. Past the deadline, that answer is the deadline's:
 * DEADLINE_EXCEEDED, as the caller (a probe's timeout) expects.
 */
export function callErrorCode(
  err: { code: GrpcStatus; details: string },
  deadline: number,
  now: number,
): GrpcStatus {
  const runtimeRanOut = err.code === GrpcStatus.UNKNOWN && /context deadline exceeded/.test(err.details);
  return runtimeRanOut && now >= deadline ? GrpcStatus.DEADLINE_EXCEEDED : err.code;
}

/** A call about to start: its name for errors, method, deadline and the caller's signal. */
export interface PreparedCall {
  op: string;
  method: Method;
  timeoutMs: number | undefined;
  /** Wall-clock ms (Date.now()); Infinity without a timeout. */
  deadline: number;
  signal: AbortSignal | undefined;
}

/**
 * Resolves a call's method and deadline; throws the CriError it is refused with before it starts
 * (the client closed, the caller's signal already aborted).
 */
export function prepareCall(
  service: ServiceName,
  name: string,
  opts: CallOptions | undefined,
  defaultDeadlineMs: DefaultDeadline,
  closed: boolean,
): PreparedCall {
  const op = `CRI ${name}`;
  const signal = opts?.signal;
  if (closed) throw new CriError(op, GrpcStatus.UNAVAILABLE, 'CRI client is closed');
  if (signal?.aborted) {
    throw new CriError(op, GrpcStatus.CANCELLED, `canceled before start: ${describeError(signal.reason)}`, {
      cause: signal.reason,
    });
  }
  const timeoutMs = opts?.timeoutMs ?? defaultDeadlineMs;
  return {
    op,
    method: CRI_PROTO.method(`runtime.v1.${service}`, name),
    timeoutMs,
    deadline: timeoutMs === undefined ? Infinity : Date.now() + timeoutMs,
    signal,
  };
}

/** A failed call's CriError (the deadline or the caller's cancellation named), logged at debug level. */
export function failedCall(
  op: string,
  err: { code: GrpcStatus; details: string },
  call: Pick<PreparedCall, 'timeoutMs' | 'deadline' | 'signal'>,
  logger: Logger,
  cause?: unknown,
): CriError {
  const code = callErrorCode(err, call.deadline, Date.now());
  let details = err.details;
  if (code === GrpcStatus.DEADLINE_EXCEEDED && call.timeoutMs !== undefined) {
    details = `${details} (deadline ${call.timeoutMs} ms)`;
  } else if (code === GrpcStatus.CANCELLED && call.signal?.aborted) {
    details = `canceled: ${describeError(call.signal.reason)}`;
  }
  const criErr = new CriError(op, code, details, cause === undefined ? undefined : { cause });
  // Not error level: the caller decides what a failure means (NotFound from a status call is often
  // expected). Kept for debugging.
  logger.debug('CRI call failed', { op, grpcCode: err.code, error: criErr.message });
  return criErr;
}

export function createH2Invoker(endpoint: string, logger: Logger): Invoker {
  const channel = createUnixH2Channel(unixSocketPath(grpcTarget(endpoint)), {
    maxReceiveBytes: CRI_MAX_MESSAGE_BYTES,
    // Each call on the session reports the failure as its own UNAVAILABLE; this says why.
    onSessionError: (err) => logger.debug('CRI connection failed', { error: describeError(err) }),
  });
  let closed = false;
  return {
    close() {
      if (closed) return;
      closed = true;
      channel.close();
    },

    async call<Res>(
      service: ServiceName,
      name: string,
      request: object,
      opts: CallOptions | undefined,
      defaultDeadlineMs: DefaultDeadline,
    ): Promise<Res> {
      const call = prepareCall(service, name, opts, defaultDeadlineMs, closed);
      const { op, method, timeoutMs, signal } = call;
      const started = performance.now();
      const body = method.requestSerialize(request);
      if (body.length > CRI_MAX_MESSAGE_BYTES) {
        throw new CriError(
          op,
          GrpcStatus.RESOURCE_EXHAUSTED,
          `Sent message larger than max (${body.length} vs. ${CRI_MAX_MESSAGE_BYTES})`,
        );
      }
      const out = await callMethod(channel, method, body, { timeoutMs, signal });
      if (out.code !== GrpcStatus.OK) throw failedCall(op, out, call, logger);
      if (logger.isDebugEnabled()) {
        logger.trace('CRI call', { op, durationMs: Math.round(performance.now() - started) });
      }
      return (out.response ?? {}) as Res;
    },
  };
}
