import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CANNED_WHY } from '../why/testing.ts';
import { requestAttributes } from './auth/authorizer.ts';
import type { KubeletApiHost } from './host.ts';
import type { KubeletServer } from './kubelet-server.ts';
import { matchRoute } from './routes.ts';
import { fakeHost, get, startTestServer, testPod } from './testing.ts';

describe('the why route', () => {
  it('matches /debug/pods/{namespace}/{name}/why and nothing near it', () => {
    assert.deepEqual(matchRoute('/debug/pods/default/web/why'), {
      kind: 'debugPodWhy',
      namespace: 'default',
      pod: 'web',
    });
    assert.deepEqual(matchRoute('/debug/pods/default/web/why/'), {
      kind: 'debugPodWhy',
      namespace: 'default',
      pod: 'web',
    });
    assert.deepEqual(matchRoute('/debug/pods/default/why'), { kind: 'not-found' });
    assert.deepEqual(matchRoute('/debug/pods/default/web/whyx'), { kind: 'not-found' });
    assert.deepEqual(matchRoute('/debug/pods/default/web/why/more'), { kind: 'not-found' });
    assert.deepEqual(matchRoute('/debug/pods/%2e%2e/web/why'), { kind: 'not-found' });
    assert.deepEqual(matchRoute('/debug/pprof/heap'), { kind: 'pprof' });
  });

  it('is authorized as the proxy subresource of the node, as /pods is', () => {
    const attrs = requestAttributes({ name: 'u', groups: [] }, 'GET', '/debug/pods/default/web/why', 'n1');
    assert.equal(attrs.subresource, 'proxy');
    assert.equal(attrs.verb, 'get');
  });
});

describe('GET /debug/pods/{namespace}/{name}/why on the kubelet API', () => {
  let dir: string;
  let server: KubeletServer;
  let port: number;
  const asked: string[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tsk-why-'));
    const host: KubeletApiHost = fakeHost([{ pod: testPod('default', 'web', 'u1'), status: undefined }], {
      podWhy: (ns, name, signal) => {
        asked.push(`${ns}/${name}`);
        assert.ok(signal instanceof AbortSignal);
        return Promise.resolve(ns === 'default' && name === 'web' ? CANNED_WHY : undefined);
      },
    });
    // Debugging handlers on (the default): why is one of them (debugging-routes.test.ts: off, 405).
    ({ server, port } = await startTestServer(host, dir));
  });
  after(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("answers the host's PodWhy as JSON", async () => {
    const res = await get(port, '/debug/pods/default/web/why');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(res.body), CANNED_WHY);
    assert.equal(asked.at(-1), 'default/web');
  });

  it('answers 404 with a JSON Status for a pod the kubelet does not have', async () => {
    const res = await get(port, '/debug/pods/default/nope/why');
    assert.equal(res.status, 404);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(res.body), {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'pod "default/nope" not found',
      reason: 'NotFound',
      code: 404,
    });
  });

  it('refuses other methods with 405', async () => {
    const res = await get(port, '/debug/pods/default/web/why', { method: 'POST' });
    assert.equal(res.status, 405);
  });
});
