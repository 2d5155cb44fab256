/**
 * One unary gRPC call on a plugin's unix socket, with a deadline (upstream pkg/volume/csi
 * csi_client.go newGrpcConn and pkg/kubelet/pluginmanager/operationexecutor dial: a connection per
 * call, closed after it; every call under a context timeout), on the same unary gRPC transport as
 * the CRI (src/util/grpc-h2.ts). Errors are `PluginCallError`s that keep the gRPC status and say
 * whether the operation is certainly over (csi_client.go isFinalError).
 */
import type { MethodDefinition } from '@grpc/proto-loader';
import { KubeletError, describeError } from '../../util/errors.ts';
import {
  callMethod,
  createUnixH2Channel,
  unixSocketPath,
  type UnaryOutcome,
  type H2Channel,
} from '../../util/grpc-h2.ts';
import { errorCodeForGrpc } from '../../util/grpc-proto.ts';
import { GrpcStatus, grpcStatusName } from '../../util/grpc-wire.ts';
import { formatGoDuration } from '../../config/duration.ts';

/** A failed call to a plugin (a CSI driver or a registration socket). */
export class PluginCallError extends KubeletError {
  /** The gRPC status code (util/grpc-wire.ts `GrpcStatus`). */
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
    const mayBeInProgress: readonly number[] = [
      GrpcStatus.CANCELLED,
      GrpcStatus.DEADLINE_EXCEEDED,
      GrpcStatus.UNAVAILABLE,
      GrpcStatus.RESOURCE_EXHAUSTED,
      GrpcStatus.ABORTED,
    ];
    return !mayBeInProgress.includes(this.grpcCode);
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

/** grpc's default receive limit (upstream's CSI client sets none of its own). */
const PLUGIN_MAX_RECEIVE_BYTES = 4 * 1024 * 1024;

function channelTo(socket: string): H2Channel {
  return createUnixH2Channel(unixSocketPath(socket), { maxReceiveBytes: PLUGIN_MAX_RECEIVE_BYTES });
}

/**
 * Connects to `socket` within `connectTimeoutMs` (upstream dial: grpc.DialContext WithBlock under a
 * timeout); rejects with a PluginCallError (DEADLINE_EXCEEDED / UNAVAILABLE) when it cannot.
 */
export async function dialUnix(
  socket: string,
  op: string,
  connectTimeoutMs: number,
): Promise<PluginConnection> {
  const channel = channelTo(socket);
  const ready = await channel.connect({ timeoutMs: connectTimeoutMs });
  if (ready.code !== GrpcStatus.OK) {
    channel.close();
    throw new PluginCallError(op, socket, ready.code, ready.details);
  }
  return {
    call: (callOp, method, request, opts) => callOn(channel, socket, callOp, method, request, opts),
    close: () => channel.close(),
  };
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
  const channel = channelTo(socket);
  try {
    const started = performance.now();
    // grpc's wait-for-ready: a driver restarting is waited for, within the call's deadline.
    const ready = await channel.connect(opts);
    if (ready.code !== GrpcStatus.OK) throw callError(op, socket, ready, opts);
    const left = Math.max(1, opts.timeoutMs - (performance.now() - started));
    // The deadline left after the wait; errors name the call's whole timeout, as upstream's do.
    return await callOn<Res>(channel, socket, op, method, request, opts, left);
  } finally {
    channel.close();
  }
}

/** A failed call's PluginCallError, in upstream's words for a call past its deadline. */
function callError(op: string, socket: string, out: UnaryOutcome, opts: UnaryCallOptions): PluginCallError {
  let details = out.details;
  if (out.code === GrpcStatus.DEADLINE_EXCEEDED) {
    details = `context deadline exceeded: no answer within the ${formatGoDuration(opts.timeoutMs)} timeout (${details})`;
  } else if (out.code === GrpcStatus.CANCELLED && opts.signal?.aborted) {
    details = `canceled: ${describeError(opts.signal.reason)}`;
  }
  return new PluginCallError(op, socket, out.code, details);
}

async function callOn<Res>(
  channel: H2Channel,
  socket: string,
  op: string,
  method: MethodDefinition<object, object>,
  request: object,
  opts: UnaryCallOptions,
  timeoutMs = opts.timeoutMs,
): Promise<Res> {
  const signal = opts.signal;
  if (signal?.aborted) {
    throw new PluginCallError(
      op,
      socket,
      GrpcStatus.CANCELLED,
      `canceled before start: ${describeError(signal.reason)}`,
    );
  }
  const out = await callMethod(channel, method, method.requestSerialize(request), {
    timeoutMs,
    ...(signal ? { signal } : {}),
  });
  if (out.code !== GrpcStatus.OK) throw callError(op, socket, out, opts);
  return (out.response ?? {}) as Res;
}
