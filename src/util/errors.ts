/**
 * One error family for the whole kubelet. Every error that crosses a module boundary is a
 * `KubeletError` with a `code` (mapped from gRPC status, HTTP status or local validation), the
 * operation that failed, and the original `cause` preserved.
 */
export type ErrorCode =
  | 'NotFound'
  | 'AlreadyExists'
  | 'InvalidArgument'
  | 'DeadlineExceeded'
  | 'Unavailable'
  | 'Canceled'
  | 'FailedPrecondition'
  | 'PermissionDenied'
  | 'Unauthenticated'
  | 'ResourceExhausted'
  | 'Unimplemented'
  | 'Internal'
  | 'Unknown';

export class KubeletError extends Error {
  readonly code: ErrorCode;
  /** What was being done, e.g. `CRI RunPodSandbox` or `read manifest /etc/kubernetes/manifests/a.yaml`. */
  readonly op: string;

  constructor(code: ErrorCode, op: string, message: string, options?: { cause?: unknown }) {
    super(`${op}: ${message}`, options);
    this.name = 'KubeletError';
    this.code = code;
    this.op = op;
  }
}

export function isKubeletError(err: unknown): err is KubeletError {
  return err instanceof KubeletError;
}

export function hasCode(err: unknown, code: ErrorCode): boolean {
  return err instanceof KubeletError && err.code === code;
}

export function isNotFound(err: unknown): boolean {
  return hasCode(err, 'NotFound');
}

export function isCanceled(err: unknown): boolean {
  if (hasCode(err, 'Canceled')) return true;
  return err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');
}

/** A short, single-line description of any thrown value, for logs and status messages. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** The `code` of a Node system error (`ENOENT`, `EAGAIN`, …), if `err` carries one. */
export function errnoCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  return typeof err.code === 'string' ? err.code : undefined;
}
