/**
 * One unary gRPC call on a plugin's unix socket, with a deadline (upstream pkg/volume/csi
 * csi_client.go newGrpcConn and pkg/kubelet/pluginmanager/operationexecutor dial: a connection per
 * call, closed after it; every call under a context timeout). Errors are `PluginCallError`s that
 * keep the gRPC status and say whether the operation is certainly over (csi_client.go isFinalError).
 */
import { Client, credentials, Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';
import { KubeletError, describeError } from '../../util/errors.ts';
import { dropNulls, errorCodeForGrpc, grpcStatusName } from '../../util/grpc-proto.ts';
import { formatGoDuration } from '../../config/duration.ts';

/** A failed call to a plugin (a CSI driver or a registration socket). */
export class PluginCallError extends KubeletError {
  /** The gRPC status code (`@grpc/grpc-js` `status`). */
  readonly grpcCode: number;
  /** The socket called. */
  readonly socket: string;

  constructor(op: string, socket: string, grpcCode: number, details: string, options?: { cause?: unknown }) {
    super(
      errorCodeForGrpc(grpcCode),
      op,
      `${details || grpcStatusName(grpcCode)} (socket ${socket})`,
      options,
    );
    this.name = 'PluginCallError';
    this.grpcCode = grpcCode;
    this.socket = socket;
  }

  /**
   * Upstream isFinalError: the operation did not start or certainly failed. Canceled, timed out,
   * unavailable, resource exhausted and aborted calls may still be in progress at the driver.
   */
  get final(): boolean {
    return ![
      GrpcStatus.CANCELLED,
      GrpcStatus.DEADLINE_EXCEEDED,
      GrpcStatus.UNAVAILABLE,
      GrpcStatus.RESOURCE_EXHAUSTED,
      GrpcStatus.ABORTED,
    ].includes(this.grpcCode);
  }
}

export function isPluginCallError(err: unknown): err is PluginCallError {
  return err instanceof PluginCallError;
}

export interface UnaryCallOptions {
  /** The call's deadline from now (required: no call to a plugin waits forever). */
  timeoutMs: number;
  signal?: AbortSignal;
}

/** A connection to one plugin socket; `close` it when done. */
export interface PluginConnection {
  call<Res>(
    op: string,
    method: MethodDefinition<object, object>,
    request: object,
    opts: UnaryCallOptions,
  ): Promise<Res>;
  close(): void;
}

function target(socket: string): string {
  return socket.startsWith('unix:') ? socket : `unix://${socket}`;
}

function newClient(socket: string): Client {
  return new Client(target(socket), credentials.createInsecure(), {
    'grpc.default_authority': 'localhost',
    'grpc.enable_retries': 0,
  });
}

/**
 * Connects to `socket` within `connectTimeoutMs` (upstream dial: grpc.DialContext WithBlock under a
 * timeout); rejects with a PluginCallError (DEADLINE_EXCEEDED / UNAVAILABLE) when it cannot.
 */
export function dialUnix(socket: string, op: string, connectTimeoutMs: number): Promise<PluginConnection> {
  const client = newClient(socket);
  return new Promise<PluginConnection>((resolve, reject) => {
    client.waitForReady(Date.now() + connectTimeoutMs, (err) => {
      if (err) {
        client.close();
        reject(
          new PluginCallError(
            op,
            socket,
            GrpcStatus.DEADLINE_EXCEEDED,
            `failed to dial within ${connectTimeoutMs} ms: ${err.message}`,
            {
              cause: err,
            },
          ),
        );
        return;
      }
      resolve({
        call: (callOp, method, request, opts) => callOn(client, socket, callOp, method, request, opts),
        close: () => client.close(),
      });
    });
  });
}

/**
 * Calls `method` on the unix socket `socket` with `request`; resolves the decoded response. A fresh
 * connection is made for the call (waiting for the socket within the deadline) and closed after it,
 * so a restarted driver is reached on its new socket.
 */
export async function unaryCall<Res>(
  socket: string,
  op: string,
  method: MethodDefinition<object, object>,
  request: object,
  opts: UnaryCallOptions,
): Promise<Res> {
  const client = newClient(socket);
  try {
    return await callOn<Res>(client, socket, op, method, request, opts, true);
  } finally {
    client.close();
  }
}

function callOn<Res>(
  client: Client,
  socket: string,
  op: string,
  method: MethodDefinition<object, object>,
  request: object,
  opts: UnaryCallOptions,
  waitForReady = false,
): Promise<Res> {
  const signal = opts.signal;
  if (signal?.aborted)
    return Promise.reject(
      new PluginCallError(
        op,
        socket,
        GrpcStatus.CANCELLED,
        `canceled before start: ${describeError(signal.reason)}`,
      ),
    );
  const deadline = Date.now() + opts.timeoutMs;
  return new Promise<Res>((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const call = (() => {
      try {
        return client.makeUnaryRequest<object, object>(
          method.path,
          method.requestSerialize,
          method.responseDeserialize,
          request,
          new Metadata({ waitForReady }),
          { deadline },
          (err: ServiceError | null, response?: object) => {
            if (err) {
              let details = err.details;
              // Upstream's words for a call past its context's deadline, with the timeout named
              // (grpc-js's own details, e.g. whether a connection was ever made, kept after it).
              if (err.code === GrpcStatus.DEADLINE_EXCEEDED)
                details = `context deadline exceeded: no answer within the ${formatGoDuration(opts.timeoutMs)} timeout (${details})`;
              else if (err.code === GrpcStatus.CANCELLED && signal?.aborted)
                details = `canceled: ${describeError(signal.reason)}`;
              finish(() => reject(new PluginCallError(op, socket, err.code, details, { cause: err })));
              return;
            }
            finish(() => resolve(dropNulls(response ?? {}) as Res));
          },
        );
      } catch (err) {
        // grpc-js throws synchronously only for a closed channel or invalid call options.
        finish(() =>
          reject(new PluginCallError(op, socket, GrpcStatus.UNAVAILABLE, describeError(err), { cause: err })),
        );
        return undefined;
      }
    })();
    const onAbort = (): void => call?.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
