import { status as GrpcStatus } from '@grpc/grpc-js';
import { KubeletError, type ErrorCode } from '../../util/errors.ts';

/**
 * A failed CRI call. `code` is derived from the gRPC status code alone; `grpcCode` keeps the
 * original number; the message keeps the runtime's own details text.
 */
export class CriError extends KubeletError {
  /** The gRPC status code (`@grpc/grpc-js` `status`), e.g. 5 for NOT_FOUND. */
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

/** Maps a gRPC status code to the kubelet's error code. Unknown numbers map to `Unknown`. */
export function errorCodeForGrpc(code: number): ErrorCode {
  switch (code as GrpcStatus) {
    case GrpcStatus.CANCELLED:
      return 'Canceled';
    case GrpcStatus.INVALID_ARGUMENT:
    case GrpcStatus.OUT_OF_RANGE:
      return 'InvalidArgument';
    case GrpcStatus.DEADLINE_EXCEEDED:
      return 'DeadlineExceeded';
    case GrpcStatus.NOT_FOUND:
      return 'NotFound';
    case GrpcStatus.ALREADY_EXISTS:
      return 'AlreadyExists';
    case GrpcStatus.PERMISSION_DENIED:
      return 'PermissionDenied';
    case GrpcStatus.RESOURCE_EXHAUSTED:
      return 'ResourceExhausted';
    case GrpcStatus.FAILED_PRECONDITION:
      return 'FailedPrecondition';
    // ABORTED means a concurrency conflict: the operation may succeed when retried, which is
    // what callers do with Unavailable.
    case GrpcStatus.ABORTED:
    case GrpcStatus.UNAVAILABLE:
      return 'Unavailable';
    case GrpcStatus.UNIMPLEMENTED:
      return 'Unimplemented';
    case GrpcStatus.INTERNAL:
    case GrpcStatus.DATA_LOSS:
      return 'Internal';
    case GrpcStatus.UNAUTHENTICATED:
      return 'Unauthenticated';
    default:
      return 'Unknown';
  }
}

function grpcStatusName(code: number): string {
  const name = (GrpcStatus as Record<number, string | undefined>)[code];
  return name ?? `gRPC status ${code}`;
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
  const code = err.grpcCode as GrpcStatus;
  if (code === GrpcStatus.NOT_FOUND) return true;
  return code === GrpcStatus.UNKNOWN && /not found/i.test(err.message);
}
