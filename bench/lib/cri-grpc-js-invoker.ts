/**
 * The kubelet's CRI transport until 2026-11-29 (@grpc/grpc-js), kept as bench/cri-codec.ts's
 * comparison stack: src/runtime/cri/h2-invoker.ts replaced it (same Invoker contract, same codec).
 */
import {
  Client,
  credentials,
  Metadata,
  status as GrpcStatus,
  type ClientUnaryCall,
  type ServiceError,
} from '@grpc/grpc-js';
import { CRI_MAX_MESSAGE_BYTES } from '../../src/config/defaults.ts';
import { describeError } from '../../src/util/errors.ts';
import type { Logger } from '../../src/util/logger.ts';
import { dropNulls } from '../../src/util/grpc-proto.ts';
import { failedCall, prepareCall } from '../../src/runtime/cri/h2-invoker.ts';
import { CriError } from '../../src/runtime/cri/errors.ts';
import {
  grpcTarget,
  type DefaultDeadline,
  type Invoker,
  type ServiceName,
} from '../../src/runtime/cri/invoker.ts';
import type { CallOptions } from '../../src/runtime/cri/types.ts';

/** Upstream's CRI connection back-off (cri-client remote_runtime.go baseBackoffDelay, maxBackoffDelay). */
const CRI_BASE_BACKOFF_DELAY_MS = 100;
const CRI_MAX_BACKOFF_DELAY_MS = 3_000;

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
  return {
    close() {
      if (closed) return;
      closed = true;
      client.close();
    },
    async call<Res>(
      service: ServiceName,
      name: string,
      request: object,
      opts: CallOptions | undefined,
      defaultDeadlineMs: DefaultDeadline,
    ): Promise<Res> {
      // Throws (rejects) when the call is refused before it starts.
      const prepared = prepareCall(service, name, opts, defaultDeadlineMs, closed);
      const { op, method, deadline, signal } = prepared;
      const started = performance.now();

      return new Promise<Res>((resolve, reject) => {
        let call: ClientUnaryCall | undefined;
        const onAbort = (): void => call?.cancel();
        signal?.addEventListener('abort', onAbort, { once: true });
        const done = (err: ServiceError | null, response?: object): void => {
          signal?.removeEventListener('abort', onAbort);
          if (err) {
            reject(failedCall(op, err, prepared, logger, err));
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
