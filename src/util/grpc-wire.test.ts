import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { describe, it } from 'node:test';
import {
  GrpcFrameReader,
  grpcCodeForHttpStatus,
  grpcCodeForRstCode,
  grpcFrame,
  GrpcStatus,
  grpcStatusName,
  grpcTimeoutHeader,
} from './grpc-wire.ts';

describe('gRPC wire details', () => {
  it('writes grpc-timeout in the finest unit that fits in 8 digits', () => {
    assert.equal(grpcTimeoutHeader(0), '0m');
    assert.equal(grpcTimeoutHeader(1.2), '2m');
    assert.equal(grpcTimeoutHeader(120_000), '120000m');
    assert.equal(grpcTimeoutHeader(1e8), '100000S');
    assert.equal(grpcTimeoutHeader(1e11 + 1), '1666667M');
  });

  it('maps HTTP statuses and RST_STREAM codes as grpc does', () => {
    assert.equal(grpcCodeForHttpStatus(404), GrpcStatus.UNIMPLEMENTED);
    assert.equal(grpcCodeForHttpStatus(401), GrpcStatus.UNAUTHENTICATED);
    assert.equal(grpcCodeForHttpStatus(500), GrpcStatus.UNKNOWN);
    assert.equal(grpcCodeForRstCode(http2.constants.NGHTTP2_REFUSED_STREAM), GrpcStatus.UNAVAILABLE);
    assert.equal(grpcCodeForRstCode(http2.constants.NGHTTP2_CANCEL), GrpcStatus.CANCELLED);
    assert.equal(grpcCodeForRstCode(http2.constants.NGHTTP2_PROTOCOL_ERROR), GrpcStatus.INTERNAL);
  });

  it('names status codes as grpc does, and a code outside the table by its number', () => {
    assert.equal(grpcStatusName(5), 'NOT_FOUND');
    assert.equal(grpcStatusName(0), 'OK');
    assert.equal(grpcStatusName(42), 'gRPC status 42');
  });
});

describe('GrpcFrameReader', () => {
  const frames = (...messages: string[]) => Buffer.concat(messages.map((m) => grpcFrame(Buffer.from(m))));
  const texts = (r: ReturnType<GrpcFrameReader['push']>) =>
    Array.isArray(r) ? r.map((b) => b.toString()) : r;

  it('reads whole messages out of chunks that split and join them', () => {
    const reader = new GrpcFrameReader(1024);
    const all = frames('alpha', '', 'gamma');
    const got: string[] = [];
    for (let i = 0; i < all.length; i += 3) {
      const r = texts(reader.push(all.subarray(i, i + 3)));
      assert.ok(Array.isArray(r));
      got.push(...r);
    }
    assert.deepEqual(got, ['alpha', '', 'gamma']);
    assert.equal(reader.buffered, 0);
  });

  it('keeps a partial message buffered until the rest comes', () => {
    const reader = new GrpcFrameReader(1024);
    const one = frames('partial');
    assert.deepEqual(texts(reader.push(one.subarray(0, 6))), []);
    assert.equal(reader.buffered, 6);
    assert.deepEqual(texts(reader.push(one.subarray(6))), ['partial']);
  });

  it('refuses a compressed message and one over the limit, before its bytes arrive', () => {
    assert.deepEqual(new GrpcFrameReader(1024).push(Buffer.from([1, 0, 0, 0, 1])), {
      error: GrpcStatus.INTERNAL,
      details: 'the response is compressed, which was not asked for',
    });
    const head = Buffer.from([0, 0, 0, 8, 0]); // announces 2048 bytes
    assert.deepEqual(new GrpcFrameReader(1024).push(head), {
      error: GrpcStatus.RESOURCE_EXHAUSTED,
      details: 'Received message larger than max (2048 vs. 1024)',
    });
  });
});
