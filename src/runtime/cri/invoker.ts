/**
 * What the CRI services (services.ts) need from a transport: one unary call by service and method
 * name, with the caller's CallOptions and the method's default deadline. The transport owns the
 * wire (HTTP/2, protobuf) and turns every failure into a CriError carrying the gRPC status code.
 */
import { KubeletError } from '../../util/errors.ts';
import type { CallOptions } from './types.ts';

export type ServiceName = 'RuntimeService' | 'ImageService';

/** How long a call may take when the caller gives no `timeoutMs`; undefined means no deadline. */
export type DefaultDeadline = number | undefined;

export interface Invoker {
  call<Res>(
    service: ServiceName,
    name: string,
    request: object,
    opts: CallOptions | undefined,
    defaultDeadlineMs: DefaultDeadline,
  ): Promise<Res>;
  /** Closes the connection; later calls reject with `Unavailable`. Idempotent. */
  close(): void;
}

/** Accepts `unix:///abs`, `unix:/abs`, `unix:rel` and a bare path; rejects other schemes. */
export function grpcTarget(endpoint: string): string {
  if (endpoint.startsWith('unix:')) return endpoint;
  if (endpoint.startsWith('/')) return `unix://${endpoint}`;
  throw new KubeletError(
    'InvalidArgument',
    'CRI connect',
    `endpoint ${JSON.stringify(endpoint)} is not a unix socket (want unix:///path/to.sock)`,
  );
}
