import { KubeletError } from '../../util/errors.ts';
import { errorCodeForGrpc } from '../../util/grpc-proto.ts';
import { GrpcStatus, grpcStatusName } from '../../util/grpc-wire.ts';

export { errorCodeForGrpc };

/**
 * A failed CRI call. `code` is derived from the gRPC status code alone; `grpcCode` keeps the
 * original number; the message keeps the runtime's own details text.
 */
export class CriError extends KubeletError {
  /** The gRPC status code (util/grpc-wire.ts `GrpcStatus`), e.g. 5 for NOT_FOUND. */
  readonly grpcCode: number;

  constructor(op: string, grpcCode: number, details: string, options?: { cause?: unknown }) {
    super(errorCodeForGrpc(grpcCode), op, details || grpcStatusName(grpcCode), options);
    this.name = 'CriError';
    this.grpcCode = grpcCode;
  }
}

export function isCriError(err: unknown): err is CriError {
  return err instanceof CriError;
}

/**
 * True when the runtime says the object does not exist.
 *
 * `CriError.code` is derived from the status code only, but containerd wraps some of its
 * internal errors without keeping the errdefs class, so a missing container or sandbox
 * sometimes arrives as UNKNOWN with a message ending in "not found". Callers that need to
 * treat "already gone" as success (stop/remove/status of a vanished object) use this check.
 */
export function isCriNotFound(err: unknown): boolean {
  if (!(err instanceof CriError)) return false;
  const code = err.grpcCode;
  if (code === GrpcStatus.NOT_FOUND) return true;
  return code === GrpcStatus.UNKNOWN && /not found/i.test(err.message);
}
