/**
 * gRPC's wire format over HTTP/2, as the kubelet's own transport (grpc-h2.ts) writes and reads it:
 * the status codes, the length-prefixed message frames, `grpc-timeout`, `grpc-message`, and grpc's
 * mappings of HTTP statuses and RST_STREAM codes to statuses. Pure functions, no I/O.
 */
import http2 from 'node:http2';

/** gRPC status codes (grpc's `codes` package). */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
/** A gRPC status code; a server may send numbers outside the table, which read as themselves. */
export type GrpcStatus = number;

const STATUS_NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(GrpcStatus).map(([name, code]) => [code, name]),
);

/** The gRPC status code's name (`NOT_FOUND`), for messages. */
export function grpcStatusName(code: number): string {
  return STATUS_NAMES.get(code) ?? `gRPC status ${code}`;
}

/** The status of an answer without grpc-status (grpc's HTTP-to-gRPC status mapping). */
export function grpcCodeForHttpStatus(status: number): GrpcStatus {
  switch (status) {
    case 400:
      return GrpcStatus.INTERNAL;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcStatus.UNAVAILABLE;
    default:
      return GrpcStatus.UNKNOWN;
  }
}

/** The status of a stream reset without a gRPC status (as grpc-go and grpc-js map RST_STREAM codes). */
export function grpcCodeForRstCode(code: number): GrpcStatus {
  switch (code) {
    case http2.constants.NGHTTP2_REFUSED_STREAM:
      return GrpcStatus.UNAVAILABLE;
    case http2.constants.NGHTTP2_CANCEL:
      return GrpcStatus.CANCELLED;
    case http2.constants.NGHTTP2_ENHANCE_YOUR_CALM:
      return GrpcStatus.RESOURCE_EXHAUSTED;
    case http2.constants.NGHTTP2_INADEQUATE_SECURITY:
      return GrpcStatus.PERMISSION_DENIED;
    default:
      return GrpcStatus.INTERNAL;
  }
}

/** The `grpc-timeout` header: at most 8 digits, in the finest unit that fits. */
export function grpcTimeoutHeader(ms: number): string {
  const t = Math.max(0, Math.ceil(ms));
  if (t < 1e8) return `${t}m`;
  if (t / 1000 < 1e8) return `${Math.ceil(t / 1000)}S`;
  return `${Math.ceil(t / 60_000)}M`;
}

/** grpc-message is percent-encoded; a malformed one is kept as sent. */
export function decodeGrpcMessage(value: string | string[] | undefined): string {
  if (typeof value !== 'string') return '';
  try {
    return decodeURIComponent(value);
  } catch {
    return value; // not percent-encoded after all: the raw text says more than nothing
  }
}

/** A request message in its gRPC frame: uncompressed flag, 4-byte big-endian length, the bytes. */
export function grpcFrame(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}

/**
 * Reads the messages of a response stream out of its data chunks as they come (a message may span
 * chunks, a chunk may hold several). `push` returns the whole messages completed so far, or why the
 * stream is not one the client can read: a compressed message (none was asked for), or one larger
 * than `maxMessageBytes`. Holds at most one partial message.
 */
export class GrpcFrameReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly maxMessageBytes: number;

  constructor(maxMessageBytes: number) {
    this.maxMessageBytes = maxMessageBytes;
  }

  /** Bytes received and not yet part of a whole message. */
  get buffered(): number {
    return this.pendingBytes;
  }

  push(chunk: Buffer): Buffer[] | { error: GrpcStatus; details: string } {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const out: Buffer[] = [];
    while (this.pendingBytes >= 5) {
      const head = this.peek(5);
      if (head[0] !== 0) {
        return { error: GrpcStatus.INTERNAL, details: 'the response is compressed, which was not asked for' };
      }
      const length = head.readUInt32BE(1);
      if (length > this.maxMessageBytes) {
        return {
          error: GrpcStatus.RESOURCE_EXHAUSTED,
          details: `Received message larger than max (${length} vs. ${this.maxMessageBytes})`,
        };
      }
      if (this.pendingBytes < 5 + length) break;
      out.push(this.take(5 + length).subarray(5));
    }
    return out;
  }

  /** The first `n` buffered bytes, without consuming them. */
  private peek(n: number): Buffer {
    const first = this.pending[0];
    if (first && first.length >= n) return first;
    const joined = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [joined];
    return joined;
  }

  /** Consumes and returns the first `n` buffered bytes. */
  private take(n: number): Buffer {
    const all = this.peek(n);
    const rest = all.subarray(n);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes -= n;
    return all.subarray(0, n);
  }
}
