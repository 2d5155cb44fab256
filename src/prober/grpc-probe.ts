import path from 'node:path';
import type { MethodDefinition, PackageDefinition } from '@grpc/proto-loader';
import { PROBE_USER_AGENT } from '../config/defaults.ts';
import { abortReason } from '../util/abort.ts';
import { callMethod, createTcpH2Channel } from '../util/grpc-h2.ts';
import { protoPackage } from '../util/grpc-proto.ts';
import { GrpcStatus, grpcStatusName } from '../util/grpc-wire.ts';
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

function checkMethod(): MethodDefinition<object, object> {
  return HEALTH_PROTO.method('grpc.health.v1.Health', 'Check');
}

/** Go's time.Duration formatting for whole and fractional seconds (`1s`, `1.5s`). */
function goSeconds(ms: number): string {
  return `${ms / 1000}s`;
}

/** A health answer larger than this is refused (grpc's default receive limit, as upstream's probe has). */
const MAX_HEALTH_RESPONSE_BYTES = 4 * 1024 * 1024;

/**
 * A gRPC probe (upstream probe/grpc): waits up to the timeout for a plaintext connection, then calls
 * grpc.health.v1.Health/Check for `service` with what is left of the timeout. SERVING is success;
 * any other answer, an error or the timeout is a failure. Only the parent `signal` aborting throws.
 * One connection per probe, as upstream dials per probe: no reconnect state to keep.
 */
export async function grpcProbe(
  host: string,
  port: number,
  service: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<ProbeOutcome> {
  if (signal?.aborted) throw abortReason(signal);
  const addr = joinHostPort(host, port);
  const method = checkMethod();
  const started = performance.now();
  const channel = createTcpH2Channel(host, port, {
    maxReceiveBytes: MAX_HEALTH_RESPONSE_BYTES,
    userAgent: PROBE_USER_AGENT,
  });
  try {
    const ready = await channel.connect({ timeoutMs, signal });
    if (signal?.aborted) throw abortReason(signal);
    if (ready.code === GrpcStatus.DEADLINE_EXCEEDED) {
      return failure(
        `timeout: failed to connect service ${JSON.stringify(addr)} within ${goSeconds(timeoutMs)}: context deadline exceeded`,
      );
    }
    if (ready.code !== GrpcStatus.OK) {
      return failure(`error: failed to connect service at ${JSON.stringify(addr)}: ${ready.details}`);
    }
    const left = Math.max(0, timeoutMs - (performance.now() - started));
    const out = await callMethod(channel, method, method.requestSerialize({ service }), {
      timeoutMs: left,
      signal,
    });
    if (signal?.aborted) throw abortReason(signal);
    if (out.code === GrpcStatus.UNIMPLEMENTED) {
      return failure(
        `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${out.details}`,
      );
    }
    if (out.code === GrpcStatus.DEADLINE_EXCEEDED) {
      return failure(`timeout: health rpc did not complete within ${goSeconds(timeoutMs)}`);
    }
    if (out.code !== GrpcStatus.OK) {
      return failure(
        `error: health rpc probe failed: rpc error: code = ${grpcStatusName(out.code)} desc = ${out.details}`,
      );
    }
    const status = (out.response as CheckResponse | undefined)?.status ?? 'UNKNOWN';
    return status === 'SERVING'
      ? success('service healthy')
      : failure(`service unhealthy (responded with ${JSON.stringify(status)})`);
  } finally {
    channel.close();
  }
}
