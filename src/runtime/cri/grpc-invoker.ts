import path from 'node:path';
import {
  Client,
  credentials,
  Metadata,
  status as GrpcStatus,
  type ClientUnaryCall,
  type ServiceError,
} from '@grpc/grpc-js';
import type { MethodDefinition, Options, PackageDefinition } from '@grpc/proto-loader';
import {
  CRI_BASE_BACKOFF_DELAY_MS,
  CRI_MAX_BACKOFF_DELAY_MS,
  CRI_MAX_MESSAGE_BYTES,
} from '../../config/defaults.ts';
import { describeError } from '../../util/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { dropNulls, protoPackage } from '../../util/grpc-proto.ts';
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

function methodOf(service: ServiceName, name: string): Method {
  return CRI_PROTO.method(`runtime.v1.${service}`, name);
}

/**
 * The @grpc/grpc-js transport: one channel for both services, messages encoded by protobufjs from
 * `api.proto` parsed at runtime (@grpc/proto-loader).
 */
export function createGrpcJsInvoker(endpoint: string, logger: Logger): Invoker {
  const client = new Client(grpcTarget(endpoint), credentials.createInsecure(), {
    'grpc.max_send_message_length': CRI_MAX_MESSAGE_BYTES,
    'grpc.max_receive_message_length': CRI_MAX_MESSAGE_BYTES,
    'grpc.initial_reconnect_backoff_ms': CRI_BASE_BACKOFF_DELAY_MS,
    'grpc.max_reconnect_backoff_ms': CRI_MAX_BACKOFF_DELAY_MS,
    // As upstream; a unix socket has no host name to put in :authority.
    'grpc.default_authority': 'localhost',
  });
  let closed = false;
  const isClosed = () => closed;
  return {
    close() {
      if (closed) return;
      closed = true;
      client.close();
    },
    call<Res>(
      service: ServiceName,
      name: string,
      request: object,
      opts: CallOptions | undefined,
      defaultDeadlineMs: DefaultDeadline,
    ): Promise<Res> {
      const op = `CRI ${name}`;
      const signal = opts?.signal;
      if (isClosed()) {
        return Promise.reject(new CriError(op, GrpcStatus.UNAVAILABLE, 'CRI client is closed'));
      }
      if (signal?.aborted) {
        return Promise.reject(
          new CriError(op, GrpcStatus.CANCELLED, `canceled before start: ${describeError(signal.reason)}`, {
            cause: signal.reason,
          }),
        );
      }
      const method = methodOf(service, name);
      const timeoutMs = opts?.timeoutMs ?? defaultDeadlineMs;
      const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
      const started = performance.now();

      return new Promise<Res>((resolve, reject) => {
        let call: ClientUnaryCall | undefined;
        const onAbort = (): void => call?.cancel();
        signal?.addEventListener('abort', onAbort, { once: true });
        const done = (err: ServiceError | null, response?: object): void => {
          signal?.removeEventListener('abort', onAbort);
          if (err) {
            let details = err.details;
            const code = callErrorCode(err, deadline, Date.now());
            if (code === GrpcStatus.DEADLINE_EXCEEDED && timeoutMs !== undefined) {
              details = `${details} (deadline ${timeoutMs} ms)`;
            } else if (code === GrpcStatus.CANCELLED && signal?.aborted) {
              details = `canceled: ${describeError(signal.reason)}`;
            }
            const criErr = new CriError(op, code, details, { cause: err });
            // Not error level: the caller decides what a failure means (NotFound from a status
            // call is often expected). Kept for debugging.
            logger.debug('CRI call failed', { op, grpcCode: err.code, error: criErr.message });
            reject(criErr);
            return;
          }
          if (logger.isDebugEnabled()) {
            logger.trace('CRI call', { op, durationMs: Math.round(performance.now() - started) });
          }
          resolve(dropNulls(response ?? {}) as Res);
        };
        try {
          call = client.makeUnaryRequest<object, object>(
            method.path,
            method.requestSerialize,
            method.responseDeserialize,
            request,
            new Metadata(),
            { deadline },
            done,
          );
        } catch (err) {
          // grpc-js throws synchronously only for a closed channel or invalid call options.
          signal?.removeEventListener('abort', onAbort);
          reject(new CriError(op, GrpcStatus.UNAVAILABLE, describeError(err), { cause: err }));
        }
      });
    },
  };
}
