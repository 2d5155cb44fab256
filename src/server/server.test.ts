import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { createLocalServer, type ServerHandlers } from './server.ts';
import { nullLogger } from '../util/logger.ts';
import type { Pod } from '../api/types.ts';

const pod: Pod = {
  metadata: { name: 'web-node1', namespace: 'default', uid: 'u1' },
  spec: { containers: [{ name: 'c', image: 'busybox:1.29' }] },
};

async function serve(handlers: ServerHandlers) {
  const server = createLocalServer({ host: '127.0.0.1', port: 0 }, handlers, nullLogger);
  const port = await server.listen();
  return { server, base: `http://127.0.0.1:${port}` };
}

describe('local kubelet HTTP server', () => {
  let healthy = true;
  const handlers: ServerHandlers = {
    healthz: () => (healthy ? { ok: true, message: 'ok' } : { ok: false, message: 'PLEG is not healthy' }),
    pods: () => [{ pod, status: { phase: 'Running' } }],
  };
  const started = serve(handlers);
  after(async () => (await started).server.close());

  it('answers /healthz with 200 ok while healthy and 500 with the reason when not', async () => {
    const { base } = await started;
    const ok = await fetch(`${base}/healthz`);
    assert.equal(ok.status, 200);
    assert.equal(await ok.text(), 'ok');
    healthy = false;
    const bad = await fetch(`${base}/healthz`);
    assert.equal(bad.status, 500);
    assert.match(await bad.text(), /PLEG is not healthy/);
    healthy = true;
  });

  it('serves /pods as a v1 PodList carrying the computed statuses', async () => {
    const { base } = await started;
    const res = await fetch(`${base}/pods`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const list = (await res.json()) as { kind: string; apiVersion: string; items: Pod[] };
    assert.equal(list.kind, 'PodList');
    assert.equal(list.apiVersion, 'v1');
    assert.equal(list.items.length, 1);
    assert.equal(list.items[0]?.kind, 'Pod');
    assert.equal(list.items[0]?.metadata.name, 'web-node1');
    assert.equal(list.items[0]?.status?.phase, 'Running');
  });

  it('refuses writes and unknown paths', async () => {
    const { base } = await started;
    assert.equal((await fetch(`${base}/pods`, { method: 'POST' })).status, 405);
    assert.equal((await fetch(`${base}/exec/x`)).status, 404);
  });

  it('marks every answer nosniff, errors included', async () => {
    const { base } = await started;
    for (const [method, path] of [
      ['GET', '/healthz'],
      ['GET', '/nope'],
      ['POST', '/healthz'],
    ]) {
      const res = await fetch(`${base}${path}`, { method });
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${method} ${path}`);
    }
  });
});
