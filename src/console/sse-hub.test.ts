import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../../test/kit/poll.ts';
import { sleep } from '../util/abort.ts';
import { nullLogger } from '../util/logger.ts';
import { createServer, request } from '../util/node-http.ts';
import { createSseHub, formatSse, type SseSink } from './sse-hub.ts';

/** A response that records what it was sent; `stalled` makes everything stay unsent. */
function fakeSink(opts: { stalled?: boolean } = {}) {
  let onClose: (() => void) | undefined;
  const sink = {
    status: 0,
    headers: {} as Record<string, string>,
    chunks: [] as string[],
    unsent: 0,
    ended: false,
    destroyed: false,
    writeHead(status: number, headers: Record<string, string>) {
      sink.status = status;
      sink.headers = headers;
    },
    write(chunk: string) {
      sink.chunks.push(chunk);
      if (opts.stalled) sink.unsent += Buffer.byteLength(chunk);
      return !opts.stalled;
    },
    end() {
      sink.ended = true;
      onClose?.();
    },
    destroy() {
      sink.destroyed = true;
      onClose?.();
    },
    get writableLength() {
      return sink.unsent;
    },
    once(_event: 'close', listener: () => void) {
      onClose = listener;
    },
    /** The peer went away. */
    hangUp() {
      onClose?.();
    },
    text: () => sink.chunks.join(''),
  };
  return sink satisfies SseSink;
}

const hubOptions = { maxClients: 2, maxBufferedBytes: 4096, heartbeatMs: 60_000, logger: nullLogger };

void describe('SSE hub', () => {
  void it('opens a stream with event-stream headers, a retry hint and the snapshot first', () => {
    const hub = createSseHub(hubOptions);
    const res = fakeSink();
    assert.deepEqual(hub.open(undefined, res, [{ event: 'snapshot', data: { pods: [] } }]), { ok: true });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(res.headers['cache-control'], 'no-cache, no-transform');
    assert.equal(res.text(), 'retry: 2000\n\nevent: snapshot\ndata: {"pods":[]}\n\n');
    hub.close();
  });

  void it('sends each broadcast to every client as one event with one data line', () => {
    const hub = createSseHub(hubOptions);
    const a = fakeSink();
    const b = fakeSink();
    hub.open(undefined, a, []);
    hub.open(undefined, b, []);
    hub.broadcast({ event: 'pod', data: { name: 'multi\nline' } });
    const wire = formatSse({ event: 'pod', data: { name: 'multi\nline' } });
    assert.equal(wire, 'event: pod\ndata: {"name":"multi\\nline"}\n\n');
    assert.ok(a.text().endsWith(wire));
    assert.ok(b.text().endsWith(wire));
    hub.close();
  });

  void it('refuses a stream beyond maxClients with 503 and writes nothing to it', () => {
    const hub = createSseHub(hubOptions);
    hub.open(undefined, fakeSink(), []);
    hub.open(undefined, fakeSink(), []);
    const third = fakeSink();
    const r = hub.open(undefined, third, []);
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.status, 503);
    assert.match(!r.ok ? r.reason : '', /too many console streams open \(2\)/);
    assert.equal(third.status, 0);
    assert.deepEqual(third.chunks, []);
    assert.equal(hub.clients, 2);
    hub.close();
  });

  void it('holds each user to maxClientsPerUser with 429, leaving the other slots to others (one user took all)', () => {
    const hub = createSseHub({ ...hubOptions, maxClients: 4, maxClientsPerUser: 2 });
    const alice = [fakeSink(), fakeSink()];
    for (const s of alice) assert.deepEqual(hub.open(undefined, s, [], 'alice'), { ok: true });
    const third = fakeSink();
    assert.deepEqual(hub.open(undefined, third, [], 'alice'), {
      ok: false,
      status: 429,
      reason: 'too many console streams open for user "alice" (2 per user); close one and retry',
    });
    assert.equal(third.status, 0, 'nothing written to a refused stream');
    assert.deepEqual(hub.open(undefined, fakeSink(), [], 'bob'), { ok: true });
    // Unknown requesters ('') count as one user.
    assert.equal(hub.open(undefined, fakeSink(), []).ok, true);
    assert.equal(hub.clients, 4);
    // All four slots taken: 503 for everyone, whatever their share.
    const full = hub.open(undefined, fakeSink(), [], 'carol');
    assert.equal(!full.ok && full.status, 503);
    alice[0]?.hangUp();
    assert.equal(hub.open(undefined, fakeSink(), [], 'alice').ok, true, 'a slot freed counts for its user');
    hub.close();
  });

  void it('drops a client that does not read once its unsent bytes pass the bound; the others keep receiving', () => {
    const hub = createSseHub(hubOptions);
    const slow = fakeSink({ stalled: true });
    const fast = fakeSink();
    hub.open(undefined, slow, []);
    hub.open(undefined, fast, []);
    const big = 'x'.repeat(1000);
    for (let i = 0; i < 10; i++) hub.broadcast({ event: 'pod', data: { i, big } });
    assert.ok(slow.destroyed, 'the slow client was cut off');
    assert.ok(
      slow.unsent <= hubOptions.maxBufferedBytes + 1100,
      `buffered at most the bound + one event, got ${slow.unsent}`,
    );
    const slowWrites = slow.chunks.length;
    hub.broadcast({ event: 'pod', data: { after: true } });
    assert.equal(slow.chunks.length, slowWrites, 'nothing more is written to a dropped client');
    assert.equal(hub.clients, 1);
    assert.equal(hub.dropped, 1);
    assert.equal(fast.chunks.filter((c) => c.startsWith('event: pod')).length, 11);
    hub.close();
  });

  void it('frees the slot of a client that hangs up, and tells when the last one leaves', () => {
    let active = 0;
    let idle = 0;
    const hub = createSseHub({ ...hubOptions, onActive: () => active++, onIdle: () => idle++ });
    const a = fakeSink();
    const b = fakeSink();
    hub.open(undefined, a, []);
    hub.open(undefined, b, []);
    assert.equal(active, 1);
    a.hangUp();
    assert.equal(hub.clients, 1);
    assert.equal(idle, 0);
    b.hangUp();
    assert.equal(hub.clients, 0);
    assert.equal(idle, 1);
    assert.equal(hub.open(undefined, fakeSink(), []).ok, true, 'slots are free again');
    assert.equal(active, 2);
    hub.close();
  });

  void it('sends a heartbeat comment while streams are open', async () => {
    const hub = createSseHub({ ...hubOptions, heartbeatMs: 20 });
    const res = fakeSink();
    hub.open(undefined, res, []);
    // Two heartbeats come, however slowly a loaded machine runs the timers (bounded at 5 s).
    const beats = () => res.chunks.filter((c) => c === ': heartbeat\n\n').length;
    await until('two heartbeats', () => beats() >= 2, { intervalMs: 10, describe: () => res.chunks });
    assert.ok(beats() >= 2, JSON.stringify(res.chunks));
    hub.close();
    const n = res.chunks.length;
    await sleep(50);
    assert.equal(res.chunks.length, n, 'no heartbeat after close');
  });

  void it('close() ends every stream and refuses new ones', () => {
    let idle = 0;
    const hub = createSseHub({ ...hubOptions, onIdle: () => idle++ });
    const a = fakeSink();
    const b = fakeSink();
    hub.open(undefined, a, []);
    hub.open(undefined, b, []);
    hub.close();
    assert.ok(a.ended && b.ended);
    assert.equal(hub.clients, 0);
    assert.equal(idle, 1);
    const late = hub.open(undefined, fakeSink(), []);
    assert.deepEqual(late, { ok: false, status: 503, reason: 'the kubelet is shutting down' });
  });
});

void describe('SSE hub over real sockets', () => {
  void it('drops a connected client that stops reading, after its unsent bytes pass the bound, and keeps a reading one', async () => {
    const hub = createSseHub({
      maxClients: 4,
      maxBufferedBytes: 256 * 1024,
      heartbeatMs: 60_000,
      logger: nullLogger,
    });
    const server = createServer((req, res) => {
      hub.open(req, res, []);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const connect = () =>
      new Promise<IncomingMessage>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/' }, resolve);
        req.on('error', reject);
        req.end();
      });
    try {
      const stalled = await connect();
      stalled.pause(); // reads nothing more: the kernel buffers fill, then the response's own
      const reading = await connect();
      let received = 0;
      reading.on('data', (c: Buffer) => (received += c.length));
      const chunk = 'y'.repeat(64 * 1024);
      let sent = 0;
      for (let i = 0; i < 4000 && hub.dropped === 0; i++) {
        hub.broadcast({ event: 'pod', data: chunk });
        sent += chunk.length;
        await new Promise((r) => setImmediate(r));
      }
      assert.equal(hub.dropped, 1, `dropped after ${sent} bytes broadcast`);
      assert.equal(hub.clients, 1);
      // The peer's unread data is gone with the connection; the kernel buffers bound what it had.
      assert.ok(sent < 64 * 1024 * 1024, `dropped after ${sent} bytes, not buffered without end`);
      stalled.destroy();
      hub.broadcast({ event: 'pod', data: 'after' });
      await sleep(50);
      assert.ok(received > sent / 2, `the reading client kept receiving (${received} of ${sent})`);
    } finally {
      hub.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
