import path from 'node:path';
import { Client, credentials, Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { MethodDefinition, PackageDefinition } from '@grpc/proto-loader';
import { PROBE_USER_AGENT } from '../config/defaults.ts';
import { abortReason } from '../util/abort.ts';
import { protoPackage } from '../util/grpc-proto.ts';
import { failure, success, type ProbeOutcome } from './outcome.ts';
import { joinHostPort } from './port.ts';

const HEALTH_PROTO = protoPackage([path.join(import.meta.dirname, 'health.proto')], {
  keepCase: true,
  enums: String,
  defaults: true,
});

/** The parsed `health.proto` (grpc.health.v1); tests serve the same definition. */
export function healthPackageDefinition(): PackageDefinition {
  return HEALTH_PROTO.definition();
}

interface CheckResponse {
  status?: string;
}

function checkMethod(): MethodDefinition<object, CheckResponse> {
  return HEALTH_PROTO.method('grpc.health.v1.Health', 'Check');
}

/** Go's time.Duration formatting for whole and fractional seconds (`1s`, `1.5s`). */
function goSeconds(ms: number): string {
  return `${ms / 1000}s`;
}

/**
 * A gRPC probe (upstream probe/grpc): waits up to the timeout for a plaintext connection, then calls
 * grpc.health.v1.Health/Check for `service` with what is left of the timeout. SERVING is success;
 * any other answer, an error or the timeout is a failure. Only the parent `signal` aborting throws.
 */
export function grpcProbe(
  host: string,
  port: number,
  service: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<ProbeOutcome> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  const addr = joinHostPort(host, port);
  const method = checkMethod();
  const deadline = Date.now() + timeoutMs;
  const client = new Client(addr, credentials.createInsecure(), {
    'grpc.primary_user_agent': PROBE_USER_AGENT,
    // One connection per probe, as upstream dials per probe: no retries or reconnect state to keep.
    'grpc.enable_retries': 0,
  });
  return new Promise<ProbeOutcome>((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      client.close();
      fn();
    };
    const onAbort = () => finish(() => reject(abortReason(signal)));
    signal?.addEventListener('abort', onAbort, { once: true });
    client.waitForReady(deadline, (connectErr) => {
      if (settled) return;
      if (connectErr) {
        finish(() =>
          resolve(
            failure(
              Date.now() >= deadline
                ? `timeout: failed to connect service ${JSON.stringify(addr)} within ${goSeconds(timeoutMs)}: context deadline exceeded`
                : `error: failed to connect service at ${JSON.stringify(addr)}: ${connectErr.message}`,
            ),
          ),
        );
        return;
      }
      client.makeUnaryRequest<object, CheckResponse>(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        { service },
        new Metadata(),
        { deadline },
        (err: ServiceError | null, res?: CheckResponse) => {
          if (err) {
            let output: string;
            if (err.code === GrpcStatus.UNIMPLEMENTED) {
              output = `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${err.details}`;
            } else if (err.code === GrpcStatus.DEADLINE_EXCEEDED) {
              output = `timeout: health rpc did not complete within ${goSeconds(timeoutMs)}`;
            } else {
              output = `error: health rpc probe failed: rpc error: code = ${GrpcStatus[err.code]} desc = ${err.details}`;
            }
            finish(() => resolve(failure(output)));
            return;
          }
          const status = res?.status ?? 'UNKNOWN';
          finish(() =>
            resolve(
              status === 'SERVING'
                ? success('service healthy')
                : failure(`service unhealthy (responded with ${JSON.stringify(status)})`),
            ),
          );
        },
      );
    });
  });
}
