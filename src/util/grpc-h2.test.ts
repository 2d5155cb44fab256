import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTcpH2Channel, createUnixH2Channel, unixSocketPath } from './grpc-h2.ts';
import { grpcFrame, GrpcStatus } from './grpc-wire.ts';

type Handler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, body: Buffer) => void;

/** A bare HTTP/2 server on a unix socket: each test says how it answers, byte by byte. */
async function startServer(socket: string, handler: () => Handler) {
  const server = http2.createServer();
  const seen: http2.IncomingHttpHeaders[] = [];
  server.on('stream', (stream, headers) => {
    seen.push(headers);
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => handler()(stream, headers, Buffer.concat(chunks)));
    stream.on('error', () => {}); // a client's RST_STREAM CANCEL shows here; the test asserts on the client
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  let sessionCount = 0;
  server.on('session', (s) => {
    sessionCount++;
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  return {
    seen,
    sessionsSeen: () => sessionCount,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Sessions the client keeps open would hold close() forever.
        for (const s of sessions) s.destroy();
      }),
    server,
  };
}
const sessions = new Set<http2.ServerHttp2Session>();

/** Answers OK with `message` in one gRPC frame and the status in the trailers. */
const answer =
  (message: Buffer, trailers: Record<string, string> = { 'grpc-status': '0' }): Handler =>
  (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    stream.end(grpcFrame(message));
  };

describe('gRPC calls on node:http2 (unary, server streams; unix socket and TCP)', () => {
  let dir: string;
  let socket: string;
  let handler: Handler;
  let server: Awaited<ReturnType<typeof startServer>>;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'grpc-h2-'));
    socket = path.join(dir, 'server.sock');
    server = await startServer(socket, () => handler);
  });
  after(async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('sends one framed message with the path, content type and deadline, and returns the answer', async () => {
    let received: Buffer | undefined;
    handler = (stream, _h, body) => {
      received = body;
      answer(Buffer.from('pong'))(stream, _h, body);
    };
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const out = await ch.unary('/test.Svc/Ping', Buffer.from('ping'), { timeoutMs: 1500 });
    ch.close();
    assert.equal(out.code, GrpcStatus.OK);
    assert.equal(out.message?.toString(), 'pong');
    assert.deepEqual(received, grpcFrame(Buffer.from('ping')));
    const h = server.seen.at(-1)!;
    assert.equal(h[':path'], '/test.Svc/Ping');
    assert.equal(h['content-type'], 'application/grpc');
    assert.equal(h['grpc-timeout'], '1500m');
    assert.equal(h.te, 'trailers');
  });

  it('returns the status and percent-decoded message of a trailers-only answer', async () => {
    handler = (stream) =>
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': '5',
          'grpc-message': 'no%20such%20pod',
        },
        { endStream: true },
      );
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const out = await ch.unary('/test.Svc/Get', Buffer.alloc(0), {});
    ch.close();
    assert.deepEqual(out, { code: GrpcStatus.NOT_FOUND, details: 'no such pod' });
  });

  it('keeps a grpc-message that is not percent-encoded as sent', async () => {
    handler = answer(Buffer.alloc(0), { 'grpc-status': '2', 'grpc-message': '100% broken' });
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const out = await ch.unary('/test.Svc/Get', Buffer.alloc(0), {});
    ch.close();
    assert.deepEqual(out, { code: GrpcStatus.UNKNOWN, details: '100% broken' });
  });

  it('a server that does not answer in time: DEADLINE_EXCEEDED, and the server sees the stream cancelled', async () => {
    let cancelled: Promise<number> | undefined;
    handler = (stream) => {
      cancelled = new Promise((resolve) => stream.on('close', () => resolve(stream.rstCode)));
    };
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const out = await ch.unary('/test.Svc/Hang', Buffer.alloc(0), { timeoutMs: 50 });
    ch.close();
    assert.equal(out.code, GrpcStatus.DEADLINE_EXCEEDED);
    assert.equal(await cancelled, http2.constants.NGHTTP2_CANCEL);
  });

  it('an aborted signal cancels the call in flight: CANCELLED', async () => {
    handler = () => {};
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const ac = new AbortController();
    const call = ch.unary('/test.Svc/Hang', Buffer.alloc(0), { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('pod deleted')), 20);
    const out = await call;
    ch.close();
    assert.equal(out.code, GrpcStatus.CANCELLED);
  });

  it('an answer over the receive limit: RESOURCE_EXHAUSTED', async () => {
    handler = answer(Buffer.alloc(4096, 1));
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const out = await ch.unary('/test.Svc/Big', Buffer.alloc(0), {});
    ch.close();
    assert.equal(out.code, GrpcStatus.RESOURCE_EXHAUSTED);
    assert.match(out.details, /larger than max/);
  });

  it('an OK answer that is not one uncompressed message: INTERNAL', async () => {
    handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(Buffer.concat([grpcFrame(Buffer.from('a')), grpcFrame(Buffer.from('b'))]));
    };
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const out = await ch.unary('/test.Svc/Two', Buffer.alloc(0), {});
    ch.close();
    assert.equal(out.code, GrpcStatus.INTERNAL);
    assert.match(out.details, /not exactly one gRPC message/);
  });

  it('a non-200 answer maps through grpc’s HTTP status table', async () => {
    handler = (stream) => stream.respond({ ':status': 503 }, { endStream: true });
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const out = await ch.unary('/test.Svc/Busy', Buffer.alloc(0), {});
    ch.close();
    assert.equal(out.code, GrpcStatus.UNAVAILABLE);
  });

  it('a connection that drops under a call: UNAVAILABLE (the runtime went away)', async () => {
    handler = (stream) => stream.session?.destroy();
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const out = await ch.unary('/test.Svc/Ping', Buffer.alloc(0), { timeoutMs: 1000 });
    ch.close();
    assert.equal(out.code, GrpcStatus.UNAVAILABLE, out.details);
  });

  it('a restarted server is reached by the next call, with no back-off in between', async () => {
    handler = answer(Buffer.from('first'));
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    assert.equal((await ch.unary('/test.Svc/Ping', Buffer.alloc(0), {})).code, GrpcStatus.OK);

    await server.stop();
    const down = await ch.unary('/test.Svc/Ping', Buffer.alloc(0), { timeoutMs: 1000 });
    assert.equal(down.code, GrpcStatus.UNAVAILABLE, down.details);

    server = await startServer(socket, () => handler);
    handler = answer(Buffer.from('again'));
    const up = await ch.unary('/test.Svc/Ping', Buffer.alloc(0), { timeoutMs: 1000 });
    ch.close();
    assert.equal(up.code, GrpcStatus.OK, up.details);
    assert.equal(up.message?.toString(), 'again');
  });

  it('connect waits for a socket that appears later (wait-for-ready), within its timeout', async () => {
    const late = path.join(dir, 'late.sock');
    const ch = createUnixH2Channel(late, { maxReceiveBytes: 1024 });
    const waiting = ch.connect({ timeoutMs: 3000 });
    await new Promise((r) => setTimeout(r, 150));
    const lateServer = http2.createServer();
    const lateSessions = new Set<http2.ServerHttp2Session>();
    lateServer.on('session', (x) => lateSessions.add(x));
    await new Promise<void>((resolve) => lateServer.listen(late, resolve));
    try {
      assert.deepEqual(await waiting, { code: GrpcStatus.OK, details: '' });
    } finally {
      ch.close();
      for (const x of lateSessions) x.destroy();
      await new Promise<void>((resolve) => lateServer.close(() => resolve()));
    }
  });

  it('connect to a socket nobody serves: DEADLINE_EXCEEDED naming the last dial error', async () => {
    const ch = createUnixH2Channel(path.join(dir, 'nobody.sock'), { maxReceiveBytes: 1024 });
    const out = await ch.connect({ timeoutMs: 200 });
    ch.close();
    assert.equal(out.code, GrpcStatus.DEADLINE_EXCEEDED);
    assert.match(out.details, /failed to connect within 200 ms: .*ENOENT/);
  });

  it('retires a session after its stream budget: the next call dials a new one, calls keep succeeding', async () => {
    handler = answer(Buffer.from('ok'));
    const before = server.sessionsSeen();
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024, maxStreamsPerSession: 2 });
    for (let i = 0; i < 5; i++) {
      assert.equal((await ch.unary('/test.Svc/Ping', Buffer.alloc(0), {})).code, GrpcStatus.OK);
    }
    ch.close();
    assert.equal(server.sessionsSeen() - before, 3);
  });

  it('a closed channel answers UNAVAILABLE without dialling', async () => {
    const ch = createUnixH2Channel(path.join(dir, 'nobody.sock'), { maxReceiveBytes: 1024 });
    ch.close();
    assert.deepEqual(await ch.unary('/test.Svc/Ping', Buffer.alloc(0), {}), {
      code: GrpcStatus.UNAVAILABLE,
      details: 'the channel is closed',
    });
  });

  it('delivers each message of a server stream as it comes, split and joined across chunks, then the status', async () => {
    handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      const all = Buffer.concat(['one', 'two', 'three'].map((m) => grpcFrame(Buffer.from(m))));
      // Two bytes at a time, then the rest in one write: messages span chunks and share them.
      stream.write(all.subarray(0, 2));
      stream.write(all.subarray(2, 7));
      stream.end(all.subarray(7));
    };
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const got: string[] = [];
    const out = await ch.serverStream('/test.Svc/Watch', Buffer.alloc(0), {
      onMessage: (m) => got.push(m.toString()),
    });
    ch.close();
    assert.deepEqual(out, { code: GrpcStatus.OK, details: '' });
    assert.deepEqual(got, ['one', 'two', 'three']);
  });

  it('an aborted server stream is cancelled at the server, and its messages so far were delivered', async () => {
    let cancelled: Promise<number> | undefined;
    handler = (stream) => {
      cancelled = new Promise((resolve) => stream.on('close', () => resolve(stream.rstCode)));
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.write(grpcFrame(Buffer.from('first')));
    };
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const ac = new AbortController();
    const got: string[] = [];
    const out = await ch.serverStream('/test.Svc/Watch', Buffer.alloc(0), {
      signal: ac.signal,
      onMessage: (m) => {
        got.push(m.toString());
        ac.abort();
      },
    });
    ch.close();
    assert.equal(out.code, GrpcStatus.CANCELLED);
    assert.deepEqual(got, ['first']);
    assert.equal(await cancelled, http2.constants.NGHTTP2_CANCEL);
  });

  it('a streamed message over the receive limit ends the stream: RESOURCE_EXHAUSTED', async () => {
    handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.write(grpcFrame(Buffer.from('small')));
      stream.write(grpcFrame(Buffer.alloc(2048)));
    };
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const got: string[] = [];
    const out = await ch.serverStream('/test.Svc/Watch', Buffer.alloc(0), {
      onMessage: (m) => got.push(m.toString()),
    });
    ch.close();
    assert.equal(out.code, GrpcStatus.RESOURCE_EXHAUSTED);
    assert.match(out.details, /larger than max \(2048 vs\. 1024\)/);
    assert.deepEqual(got, ['small']);
  });

  it('a stream whose server goes away: UNAVAILABLE', async () => {
    handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.write(grpcFrame(Buffer.from('x')), () => stream.session?.destroy());
    };
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const out = await ch.serverStream('/test.Svc/Watch', Buffer.alloc(0), { onMessage: () => {} });
    ch.close();
    assert.equal(out.code, GrpcStatus.UNAVAILABLE, out.details);
  });

  it('sends the call metadata and the channel user agent as headers', async () => {
    handler = answer(Buffer.from('ok'));
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024, userAgent: 'kube-probe/1.20' });
    const out = await ch.unary('/test.Svc/Ping', Buffer.alloc(0), {
      metadata: { 'containerd-namespace': 'k8s.io' },
    });
    ch.close();
    assert.equal(out.code, GrpcStatus.OK);
    const h = server.seen.at(-1)!;
    assert.equal(h['containerd-namespace'], 'k8s.io');
    assert.equal(h['user-agent'], 'kube-probe/1.20');
  });

  it('a call whose signal is already aborted: CANCELLED, nothing sent', async () => {
    const before = server.seen.length;
    const ch = createUnixH2Channel(socket, { maxReceiveBytes: 1024 });
    const out = await ch.unary('/test.Svc/Ping', Buffer.alloc(0), { signal: AbortSignal.abort() });
    ch.close();
    assert.equal(out.code, GrpcStatus.CANCELLED);
    assert.equal(server.seen.length, before);
  });

  it('speaks plaintext HTTP/2 over TCP with host:port as the authority', async () => {
    const tcp = http2.createServer();
    let authority: string | undefined;
    tcp.on('stream', (stream, headers) => {
      authority = headers[':authority'];
      stream.on('data', () => {});
      stream.on('end', () => answer(Buffer.from('tcp'))(stream, headers, Buffer.alloc(0)));
    });
    const tcpSessions = new Set<http2.ServerHttp2Session>();
    tcp.on('session', (x) => tcpSessions.add(x));
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    const port = (tcp.address() as { port: number }).port;
    try {
      const ch = createTcpH2Channel('127.0.0.1', port, { maxReceiveBytes: 1024 });
      const out = await ch.unary('/test.Svc/Ping', Buffer.alloc(0), { timeoutMs: 1000 });
      ch.close();
      assert.equal(out.code, GrpcStatus.OK, out.details);
      assert.equal(out.message?.toString(), 'tcp');
      assert.equal(authority, `127.0.0.1:${port}`);
    } finally {
      for (const x of tcpSessions) x.destroy();
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
    }
  });
});

describe('gRPC targets', () => {
  it('takes the socket path out of unix:// and unix: targets, and a bare path as it is', () => {
    assert.equal(unixSocketPath('unix:///run/containerd/containerd.sock'), '/run/containerd/containerd.sock');
    assert.equal(unixSocketPath('unix:/run/c.sock'), '/run/c.sock');
    assert.equal(unixSocketPath('unix:rel.sock'), 'rel.sock');
    assert.equal(
      unixSocketPath('/var/lib/kubelet/plugins/x/csi.sock'),
      '/var/lib/kubelet/plugins/x/csi.sock',
    );
  });
});
