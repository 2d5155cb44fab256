/**
 * The gRPC protos the kubelet speaks (CRI's api.proto, containerd's events, grpc.health.v1 for
 * probes), parsed at run time by @grpc/proto-loader where upstream links generated Go code. Each
 * package is parsed once per process, on first use; in-process fakes in tests serve the same
 * definition.
 */
import path from 'node:path';
import { loadSync, type MethodDefinition, type Options, type PackageDefinition } from '@grpc/proto-loader';
import { KubeletError, type ErrorCode } from './errors.ts';
import { GrpcStatus } from './grpc-wire.ts';

export interface ProtoPackage {
  /** The parsed package definition. */
  definition(): PackageDefinition;
  /** `service`'s method `name` (service fully qualified); an Internal error if the protos lack it. */
  method(service: string, name: string): MethodDefinition<object, object>;
}

export function protoPackage(files: readonly string[], options: Options): ProtoPackage {
  let def: PackageDefinition | undefined;
  const definition = (): PackageDefinition => (def ??= loadSync([...files], options));
  return {
    definition,
    method(service, name) {
      const svc = definition()[service];
      // Message and enum definitions carry a `format`; services are plain maps of methods.
      const method = svc && !('format' in svc) ? svc[name] : undefined;
      if (!method) {
        const from = files.map((f) => path.basename(f)).join(', ');
        throw new KubeletError('Internal', `gRPC ${service}/${name}`, `the method is missing from ${from}`);
      }
      return method;
    },
  };
}

/** Maps a gRPC status code to the kubelet's error code. Unknown numbers map to `Unknown`. */
export function errorCodeForGrpc(code: number): ErrorCode {
  switch (code) {
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

/**
 * `defaults: true` decodes an absent message field as null. Our types model absent fields as
 * missing (`?:`), so a response's nulls are dropped, once, where it is decoded.
 */
export function dropNulls(value: unknown): unknown {
  if (Array.isArray(value)) {
    for (const item of value) dropNulls(item);
    return value;
  }
  if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    const obj = value as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      if (obj[key] === null) delete obj[key];
      else dropNulls(obj[key]);
    }
  }
  return value;
}
