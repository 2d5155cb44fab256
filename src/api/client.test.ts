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
import type { ApiClient } from './client-types.ts';

/** An HTTPS server whose `/hang` never answers and whose watches send headers and then nothing. */
describe('API client connections', () => {
  let dir: string;
  let server: Server;
  let api: ApiClient;
  const arrived: string[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tsk-client-'));
    const cert = await loadServingCert({
      rootDir: dir,
      nodeName: 'localhost',
      ips: ['127.0.0.1'],
      logger: nullLogger,
    });
    server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
      arrived.push(req.url ?? '');
      if (req.url?.startsWith('/hang')) return; // a partition: no answer, ever
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
    api = await createApiClient({ kubeconfig, qps: 0, burst: 0, requestTimeoutMs: 60_000 });
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
});
