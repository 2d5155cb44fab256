import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, describe, it } from 'node:test';
import { nullLogger } from '../util/logger.ts';
import { request } from '../util/node-http.ts';
import { createLocalServer, type ServerHandlers } from './server.ts';

async function serve(handlers: ServerHandlers, host = '127.0.0.1') {
  const server = createLocalServer({ host, port: 0 }, handlers, nullLogger);
  const port = await server.listen();
  return { server, port };
}

/** A request with exactly the Host header given (fetch cannot set one). */
function get(
  port: number,
  path: string,
  opts: { method?: string; host?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? 'GET',
        ...(opts.host !== undefined ? { headers: { host: opts.host } } : {}),
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** An HTTP/1.0 request without a Host header (what some probes send); the status line back. */
function getWithoutHost(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(`GET ${path} HTTP/1.0\r\n\r\n`));
    let buf = '';
    sock.on('data', (d: Buffer) => (buf += d.toString('latin1')));
    sock.on('end', () => resolve(buf.split('\r\n')[0] ?? ''));
    sock.on('error', reject);
  });
}

describe('healthz listener', () => {
  let healthy = true;
  const handlers: ServerHandlers = {
    healthz: () => (healthy ? { ok: true, message: 'ok' } : { ok: false, message: 'PLEG is not healthy' }),
  };
  const started = serve(handlers);
  after(async () => (await started).server.close());

  it('answers /healthz with 200 ok while healthy and 500 with the reason when not', async () => {
    const { port } = await started;
    const ok = await get(port, '/healthz');
    assert.deepEqual([ok.status, ok.body], [200, 'ok']);
    healthy = false;
    const bad = await get(port, '/healthz');
    assert.equal(bad.status, 500);
    assert.match(bad.body, /PLEG is not healthy/);
    healthy = true;
  });

  it('serves /healthz only, as upstream: the pods are not there (they were, unauthenticated)', async () => {
    const { port } = await started;
    for (const path of ['/pods', '/pods/', '/runningpods/', '/configz', '/exec/x']) {
      const res = await get(port, path);
      assert.deepEqual([res.status, res.body], [404, '404 page not found\n'], path);
    }
  });

  it('refuses a Host that is not a loopback name (DNS rebinding answered 200)', async () => {
    const { port } = await started;
    for (const host of [`rebind.example:${port}`, 'rebind.example', '10.0.0.1', '127.0.0.1.evil.com']) {
      const res = await get(port, '/healthz', { host });
      assert.equal(res.status, 403, host);
      assert.equal(
        res.body,
        `Forbidden: the healthz listener answers only to a loopback Host, not ${JSON.stringify(host)}\n`,
      );
    }
    const pods = await get(port, '/pods', { host: `rebind.example:${port}` });
    assert.equal(pods.status, 403);
  });

  it('answers loopback Host names, and a request without Host', async () => {
    const { port } = await started;
    for (const host of [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      'LOCALHOST',
      '127.1.2.3',
    ]) {
      assert.equal((await get(port, '/healthz', { host })).status, 200, host);
    }
    assert.equal(await getWithoutHost(port, '/healthz'), 'HTTP/1.1 200 OK');
  });

  it('marks every answer nosniff, errors included', async () => {
    const { port } = await started;
    for (const [method, path] of [
      ['GET', '/healthz'],
      ['GET', '/nope'],
      ['POST', '/healthz'],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { method });
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${method} ${path}`);
    }
  });

  it('refuses writes and malformed targets', async () => {
    const { port } = await started;
    const post = await get(port, '/healthz', { method: 'POST' });
    assert.deepEqual([post.status, post.body], [405, 'method POST is not allowed\n']);
    assert.equal(await getWithoutHost(port, 'http://['), 'HTTP/1.1 400 Bad Request');
  });
});

describe('healthz listener on a non-loopback address', () => {
  it('takes any Host there (it cannot know the names the machine goes by)', async () => {
    const { server, port } = await serve({ healthz: () => ({ ok: true, message: 'ok' }) }, '0.0.0.0');
    try {
      assert.equal((await get(port, '/healthz', { host: 'node-1.example:10248' })).status, 200);
      assert.equal((await get(port, '/pods', { host: 'node-1.example:10248' })).status, 404);
    } finally {
      await server.close();
    }
  });
});
