import { describeError, isKubeletError, KubeletError, type ErrorCode } from '../util/errors.ts';

/** The kubelet error code for a Node.js file system error. */
function codeForErrno(code: string | undefined): ErrorCode {
  switch (code) {
    case 'ENOENT':
    case 'ENOTDIR':
      return 'NotFound';
    case 'EEXIST':
      return 'AlreadyExists';
    case 'EACCES':
    case 'EPERM':
      return 'PermissionDenied';
    case 'ENOSPC':
    case 'EMFILE':
    case 'ENFILE':
    case 'EDQUOT':
      return 'ResourceExhausted';
    case 'ABORT_ERR':
      return 'Canceled';
    default:
      return 'Internal';
  }
}

/** Wraps a file system (or stream) error as a KubeletError with what was being done; KubeletErrors pass. */
export function fsError(err: unknown, op: string, what: string): KubeletError {
  if (isKubeletError(err)) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return new KubeletError(codeForErrno(code), op, `${what}: ${describeError(err)}`, { cause: err });
}
