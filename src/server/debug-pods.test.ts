import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeletServer } from './kubelet-server.ts';
import { matchRoute, READ_ONLY_ROUTES, DEBUGGING_ROUTES } from './routes.ts';
import { requestAttributes } from './auth/authorizer.ts';
import { fakeHost, get, startOpenServer, testPod } from './testing.ts';
import { CANNED_TIMELINE } from '../timeline/testing.ts';

describe('the pod timeline route', () => {
  it('matches /debug/pods/{namespace}/{name}/timeline and nothing shorter or longer', () => {
    assert.deepEqual(matchRoute('/debug/pods/default/web/timeline'), {
      kind: 'debugPodTimeline',
      namespace: 'default',
      name: 'web',
    });
    assert.deepEqual(matchRoute('/debug/pods/default/web/timeline/'), {
      kind: 'debugPodTimeline',
      namespace: 'default',
      name: 'web',
    });
    for (const p of [
      '/debug/pods/default/web',
      '/debug/pods/default/web/timeline/x',
      '/debug/pods//web/timeline',
      '/debug/pods/default/%2e%2e/timeline',
      '/debug/pod/default/web/timeline',
    ]) {
      assert.deepEqual(matchRoute(p), { kind: 'not-found' }, p);
    }
    assert.deepEqual(matchRoute('/debug/pprof/heap'), { kind: 'pprof' });
  });

  it('is authorized as the proxy subresource, and is a debugging handler, off the read-only port', () => {
    const user = { name: 'u', groups: [] };
    assert.equal(requestAttributes(user, 'GET', '/debug/pods/ns/p/timeline', 'n').subresource, 'proxy');
    // A failed hook's `failed` step carries the hook's output: pod output, as containerLogs.
    assert.equal(DEBUGGING_ROUTES.has('debugPodTimeline'), true);
    assert.equal(READ_ONLY_ROUTES.has('debugPodTimeline'), false);
  });
});

describe('GET /debug/pods/{namespace}/{name}/timeline', () => {
  let dir: string;
  let server: KubeletServer;
  let port: number;
  const asked: string[] = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tsk-timeline-'));
    const host = fakeHost([{ pod: testPod('default', 'web', 'u1'), status: undefined }], {
      podTimeline: (ns, name) => {
        asked.push(`${ns}/${name}`);
        return ns === 'default' && name === 'web' ? CANNED_TIMELINE : undefined;
      },
    });
    ({ server, port } = await startOpenServer(host, dir));
  });
  after(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the host timeline as JSON', async () => {
    const res = await get(port, '/debug/pods/default/web/timeline');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(res.body), CANNED_TIMELINE);
  });

  it('answers an unknown pod with 404 and a NotFound Status', async () => {
    const res = await get(port, '/debug/pods/default/nope/timeline');
    assert.equal(res.status, 404);
    assert.equal(res.headers['content-type'], 'application/json');
    const body = JSON.parse(res.body) as Record<string, unknown>;
    assert.equal(body.kind, 'Status');
    assert.equal(body.reason, 'NotFound');
    assert.equal(body.code, 404);
    assert.match(String(body.message), /nope/);
    assert.ok(asked.includes('default/nope'));
  });

  it('refuses other methods with 405', async () => {
    const res = await get(port, '/debug/pods/default/web/timeline', { method: 'POST' });
    assert.equal(res.status, 405);
  });
});
