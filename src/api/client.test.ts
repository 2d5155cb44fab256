import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadServingCert } from '../server/serving-cert.ts';
import { KubeletError } from '../util/errors.ts';
import { nullLogger } from '../util/logger.ts';
import { createApiClient } from './client.ts';
import { ApiError, retryAfterMs, type ApiClient } from './client-types.ts';

/** An HTTPS server whose `/hang` never answers and whose watches send headers and then nothing. */
describe('API client connections', () => {
  let dir: string;
  let server: Server;
  let api: ApiClient;
  const arrived: string[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tsk-client-'));
    const cert = await loadServingCert({
      certDir: join(dir, 'pki'),
      nodeName: 'localhost',
      ips: ['127.0.0.1'],
      logger: nullLogger,
    });
    server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
      arrived.push(req.url ?? '');
      if (req.url?.startsWith('/hang')) return; // a partition: no answer, ever
      const retry = /^\/status\/(\d+)\?retryAfter=(.*)$/.exec(req.url ?? '');
      if (retry) {
        const headers: Record<string, string> = { 'Content-Type': 'application/json' };
        if (retry[2] !== '') headers['Retry-After'] = decodeURIComponent(retry[2]!);
        res.writeHead(Number(retry[1]), headers);
        res.end('{"kind":"Status","reason":"TooManyRequests","message":"slow down"}');
        return;
      }
      if (req.url?.startsWith('/utf8') && req.url.includes('watch=1')) {
        // One event whose two-byte characters are split across writes.
        const line = Buffer.from(`${JSON.stringify({ type: 'ADDED', object: { name: 'é—ü' } })}\n`);
        res.writeHead(200, { 'Content-Type': 'application/json' });
        const cut = line.indexOf(0xc3) + 1; // inside 'é'
        res.write(line.subarray(0, cut));
        setTimeout(() => res.end(line.subarray(cut)), 20);
        return;
      }
      if (req.url?.startsWith('/endless') && req.url.includes('watch=1')) {
        // A line that never ends: 64 KiB chunks until the client hangs up.
        res.writeHead(200, { 'Content-Type': 'application/json' });
        const chunk = Buffer.alloc(64 * 1024, 'a');
        const pump = (): void => {
          if (res.destroyed) return;
          if (res.write(chunk)) setImmediate(pump);
          else res.once('drain', pump);
        };
        pump();
        return;
      }
      if (req.url?.includes('watch=1')) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.flushHeaders();
        return; // a quiet watch
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"ok":true}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: c, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]`,
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: c, context: {cluster: c, user: u}}]',
        'current-context: c',
      ].join('\n'),
    );
    api = await createApiClient({
      kubeconfig,
      qps: 0,
      burst: 0,
      requestTimeoutMs: 60_000,
      maxWatchLineBytes: 1024 * 1024,
    });
  });

  after(async () => {
    api.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await rm(dir, { recursive: true, force: true });
  });

  it('closeConnections() fails a hanging request and a quiet watch at once, and the client keeps working', async () => {
    const ac = new AbortController();
    const hanging = api.request({ method: 'GET', path: '/hang' }).then(
      () => 'answered',
      (err: unknown) => err,
    );
    const watching = api
      .watch('/api/v1/pods', {}, () => {}, { signal: ac.signal })
      .then(
        () => 'ended',
        (err: unknown) => err,
      );
    const deadline = Date.now() + 5_000;
    while (!(arrived.includes('/hang') && arrived.some((u) => u.includes('watch=1')))) {
      assert.ok(Date.now() < deadline, `requests did not arrive: ${arrived.join(', ')}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const t0 = Date.now();
    api.closeConnections();
    const [req, watch] = await Promise.all([hanging, watching]);
    assert.ok(Date.now() - t0 < 2_000, 'both failed at once, not after a timeout');
    for (const err of [req, watch]) {
      assert.ok(err instanceof KubeletError, String(err));
      assert.equal(err.code, 'Unavailable');
    }
    assert.deepEqual(await api.request({ method: 'GET', path: '/ok' }), { ok: true });
    ac.abort();
  });

  it("keeps the server's Retry-After on a 429 or 5xx error, capped at 60 s, and ignores it elsewhere", async () => {
    const status = async (code: number, retryAfter: string): Promise<unknown> =>
      api.request({ method: 'GET', path: `/status/${code}`, query: { retryAfter } }).then(
        () => 'answered',
        (err: unknown) => err,
      );
    const cases: [number, string, number | undefined][] = [
      [429, '5', 5],
      [503, '2', 2],
      [429, '86400', 60],
      [429, '', undefined],
      [429, 'Wed, 21 Oct 2026 07:28:00 GMT', undefined],
      [404, '5', undefined],
    ];
    for (const [code, header, want] of cases) {
      const err = await status(code, header);
      assert.ok(err instanceof ApiError, String(err));
      assert.equal(err.status, code);
      assert.equal(err.retryAfterSeconds, want, `${code} Retry-After: ${header}`);
      assert.equal(retryAfterMs(err), (want ?? 0) * 1000);
    }
  });

  it('decodes a watch event whose multi-byte characters arrive split across chunks', async () => {
    const got: unknown[] = [];
    await api.watch('/utf8', {}, (e) => got.push(e.object), { signal: new AbortController().signal });
    assert.deepEqual(got, [{ name: 'é—ü' }]);
  });

  it('cuts off a watch that streams one line past the size bound instead of buffering it without end', async () => {
    const before = process.memoryUsage().rss;
    const err = await api
      .watch('/endless', {}, () => {}, { signal: new AbortController().signal })
      .then(
        () => 'ended',
        (e: unknown) => e,
      );
    assert.ok(err instanceof KubeletError, String(err));
    assert.equal(err.code, 'ResourceExhausted');
    assert.match(err.message, /watch event larger than 1048576 bytes/);
    assert.ok(process.memoryUsage().rss - before < 64 * 1024 * 1024, 'memory stayed bounded');
  });
});
