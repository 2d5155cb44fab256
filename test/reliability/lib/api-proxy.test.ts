/**
 * The fault proxy against a small HTTPS "API server" of its own (no bed needed): requests are
 * forwarded with the client certificate, named and counted, and every mode does what it says.
 *
 *   node --test test/reliability/lib/api-proxy.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nullLogger } from '../../../src/util/logger.ts';
import { ensureCa, ensureCert } from '../../harness/cluster/certs.ts';
import { classifyRequest, startApiProxy, type ApiProxy } from './api-proxy.ts';

interface Pem {
  cert: string;
  key: string;
}

interface Reply {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

describe('classifyRequest', () => {
  const cases: [string, string, string][] = [
    ['GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn&resourceVersion=0', 'LIST pods'],
    ['GET', '/api/v1/pods?watch=1&resourceVersion=5', 'WATCH pods'],
    ['GET', '/api/v1/watch/namespaces/default/pods', 'WATCH pods'],
    ['GET', '/api/v1/namespaces/default/secrets?watch=true&fieldSelector=metadata.name%3Dx', 'WATCH secrets'],
    ['PATCH', '/api/v1/namespaces/default/pods/web/status', 'PATCH pods/status'],
    ['PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1', 'UPDATE leases'],
    ['POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', 'CREATE leases'],
    ['GET', '/api/v1/nodes/n1?resourceVersion=0', 'GET nodes'],
    ['PATCH', '/api/v1/nodes/n1/status', 'PATCH nodes/status'],
    ['POST', '/api/v1/namespaces/default/serviceaccounts/default/token', 'CREATE serviceaccounts/token'],
    ['DELETE', '/api/v1/namespaces/default/pods/web', 'DELETE pods'],
    ['GET', '/api/v1/namespaces/default', 'GET namespaces'],
    ['GET', '/healthz', 'OTHER nonresource'],
  ];
  it('tells reflectors apart by namespace and selectors, and keeps the resourceVersion asked for', () => {
    const k = classifyRequest(
      'GET',
      '/api/v1/namespaces/ns1/secrets?fieldSelector=metadata.name%3Dtok&resourceVersion=42&watch=1',
    );
    assert.deepEqual(k, {
      verb: 'WATCH',
      resource: 'secrets',
      selector: 'ns=ns1,fieldSelector=metadata.name=tok',
      resourceVersion: '42',
    });
  });
  for (const [method, url, want] of cases) {
    it(`names ${method} ${url} as ${want}`, () => {
      const k = classifyRequest(method, url);
      assert.equal(`${k.verb} ${k.resource}`, want);
    });
  }
});

describe('fault proxy', () => {
  let dir: string;
  let ca: string;
  let serving: Pem;
  let client: Pem;
  let upstream: Server;
  let upstreamUrl: string;
  let proxy: ApiProxy;
  const seenClients: string[] = [];

  function call(
    path: string,
    opts: { method?: string; timeoutMs?: number; base?: string } = {},
  ): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = request(
        `${opts.base ?? proxy.url}${path}`,
        { method: opts.method ?? 'GET', ca, agent: false, timeout: opts.timeoutMs ?? 5_000 },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end();
    });
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'api-proxy-test-'));
    const caPair = await ensureCa(dir, 'ca', 'proxy-test-ca', nullLogger);
    const srv = await ensureCert(
      caPair,
      dir,
      { name: 'server', commonName: 'server', usage: 'server', ipAddresses: ['127.0.0.1'] },
      nullLogger,
    );
    const cli = await ensureCert(
      caPair,
      dir,
      { name: 'node', commonName: 'system:node:n1', organizations: ['system:nodes'], usage: 'client' },
      nullLogger,
    );
    ca = await readFile(caPair.cert, 'utf8');
    serving = { cert: await readFile(srv.cert, 'utf8'), key: await readFile(srv.key, 'utf8') };
    client = { cert: await readFile(cli.cert, 'utf8'), key: await readFile(cli.key, 'utf8') };
    upstream = createServer({ ...serving, ca, requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const cn: string | string[] | undefined = (req.socket as TLSSocket).getPeerCertificate().subject.CN;
      seenClients.push(Array.isArray(cn) ? cn.join(',') : (cn ?? ''));
      const url = new URL(req.url ?? '/', 'https://x');
      if (url.searchParams.get('watch') === '1') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        let n = 0;
        const tick = setInterval(() => {
          res.write(
            JSON.stringify({ type: 'ADDED', object: { metadata: { resourceVersion: String(++n) } } }) + '\n',
          );
        }, 50);
        res.on('close', () => clearInterval(tick));
        return;
      }
      const body = JSON.stringify({ kind: 'PodList', items: [{ metadata: { name: 'a'.repeat(200) } }] });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const addr = upstream.address();
    upstreamUrl = `https://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    proxy = await startApiProxy({ upstream: upstreamUrl, ca, serving, client });
  });

  after(async () => {
    await proxy?.close();
    upstream?.closeAllConnections();
    await new Promise((r) => upstream?.close(r));
    await rm(dir, { recursive: true, force: true });
  });

  it('listens on loopback only', () => {
    assert.match(proxy.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it('forwards with the client certificate and counts requests by verb and resource', async () => {
    const t0 = Date.now();
    const r = await call('/api/v1/pods?fieldSelector=x');
    assert.equal(r.status, 200);
    assert.equal((JSON.parse(r.body) as { kind: string }).kind, 'PodList');
    assert.equal(seenClients.at(-1), 'system:node:n1');
    await call('/api/v1/namespaces/default/pods/web/status', { method: 'PATCH' });
    assert.deepEqual(proxy.counts(t0), { 'LIST pods': 1, 'PATCH pods/status': 1 });
    assert.equal(proxy.requests(t0)[0]?.selector, 'fieldSelector=x');
  });

  it('refuses connections in refuse mode and serves again on the same port afterwards', async () => {
    const port = proxy.port;
    await proxy.setMode({ kind: 'refuse' });
    await assert.rejects(call('/api/v1/pods'), (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED');
    await proxy.setMode({ kind: 'pass' });
    assert.equal(proxy.port, port);
    assert.equal((await call('/api/v1/pods')).status, 200);
  });

  it('answers 429 with Retry-After and a Status body', async () => {
    await proxy.setMode({ kind: 'status', code: 429, retryAfterSeconds: 3 });
    const r = await call('/api/v1/pods');
    await proxy.setMode({ kind: 'pass' });
    assert.equal(r.status, 429);
    assert.equal(r.headers['retry-after'], '3');
    const s = JSON.parse(r.body) as { kind: string; code: number; reason: string };
    assert.deepEqual([s.kind, s.code, s.reason], ['Status', 429, 'TooManyRequests']);
    const last = proxy.requests().at(-1);
    assert.deepEqual([last?.status, last?.faulted], [429, true]);
  });

  it('answers only watches when a status mode is limited to them', async () => {
    await proxy.setMode({ kind: 'status', code: 500, watchesOnly: true });
    const list = await call('/api/v1/pods');
    const watch = await call('/api/v1/pods?watch=1');
    await proxy.setMode({ kind: 'pass' });
    assert.deepEqual([list.status, watch.status], [200, 500]);
  });

  it('ends a watch with a 410 Expired ERROR event in gone-watches mode', async () => {
    await proxy.setMode({ kind: 'gone-watches' });
    const r = await call('/api/v1/pods?watch=1&resourceVersion=3');
    await proxy.setMode({ kind: 'pass' });
    assert.equal(r.status, 200);
    const ev = JSON.parse(r.body.trim()) as { type: string; object: { code: number; reason: string } };
    assert.deepEqual([ev.type, ev.object.code, ev.object.reason], ['ERROR', 410, 'Expired']);
  });

  it('cuts plain bodies in half (with a matching Content-Length) in truncate mode', async () => {
    const whole = await call('/api/v1/pods');
    await proxy.setMode({ kind: 'truncate' });
    const cut = await call('/api/v1/pods');
    await proxy.setMode({ kind: 'pass' });
    assert.equal(cut.body.length, whole.body.length >> 1);
    assert.equal(cut.headers['content-length'], String(cut.body.length));
    assert.throws(() => JSON.parse(cut.body) as unknown, SyntaxError);
  });

  it('resets a watch after afterMs in drop-watches mode', async () => {
    await proxy.setMode({ kind: 'drop-watches', afterMs: 300 });
    const t0 = Date.now();
    await assert.rejects(call('/api/v1/pods?watch=1'), /aborted|ECONNRESET|socket hang up/);
    const took = Date.now() - t0;
    await proxy.setMode({ kind: 'pass' });
    assert.ok(took >= 250 && took < 2_000, `cut after ${took} ms`);
  });

  it('resets watches in flight when switching away from pass', async () => {
    const watching = call('/api/v1/pods?watch=1');
    await new Promise((r) => setTimeout(r, 200));
    await proxy.setMode({ kind: 'status', code: 500 });
    await assert.rejects(watching, /aborted|ECONNRESET|socket hang up/);
    await proxy.setMode({ kind: 'pass' });
  });

  it('delays every response by the given time', async () => {
    await proxy.setMode({ kind: 'delay', ms: 400 });
    const t0 = Date.now();
    const r = await call('/api/v1/pods');
    const took = Date.now() - t0;
    await proxy.setMode({ kind: 'pass' });
    assert.equal(r.status, 200);
    assert.ok(took >= 400, `took ${took} ms`);
  });

  it('closes every connection and stops listening on close', async () => {
    const p = await startApiProxy({ upstream: upstreamUrl, ca, serving, client });
    assert.equal((await call('/api/v1/pods', { base: p.url })).status, 200);
    const url = p.url;
    await p.close();
    await assert.rejects(
      new Promise((resolve, reject) => {
        const req = request(`${url}/api/v1/pods`, { ca, agent: false }, resolve);
        req.on('error', reject);
        req.end();
      }),
      (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED',
    );
    assert.equal(p.openConnections(), 0);
  });
});
