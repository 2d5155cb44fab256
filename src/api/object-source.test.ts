import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createApiObjectSource } from './object-source.ts';
import { FakeApi, apiError } from './testing.ts';

const SECRET = '/api/v1/namespaces/ns1/secrets/s1';
const CM = '/api/v1/namespaces/ns1/configmaps/c1';

function setup(ttlMs = 10_000) {
  const api = new FakeApi();
  let nowMs = 1_000_000;
  const source = createApiObjectSource(api, ttlMs, () => nowMs);
  return {
    api,
    source,
    advance: (ms: number) => {
      nowMs += ms;
    },
  };
}

describe('API object source (secrets and configmaps for volumes)', () => {
  it('reads a secret and a configmap from their API paths', async () => {
    const { api, source } = setup();
    api.respond('GET', SECRET, { metadata: { name: 's1', namespace: 'ns1' }, data: { k: 'dg==' } });
    api.respond('GET', CM, { metadata: { name: 'c1', namespace: 'ns1' }, data: { k: 'v' } });
    assert.deepEqual((await source.getSecret('ns1', 's1'))?.data, { k: 'dg==' });
    assert.deepEqual((await source.getConfigMap('ns1', 'c1'))?.data, { k: 'v' });
    assert.deepEqual(api.calls(), [`GET ${SECRET}`, `GET ${CM}`]);
  });

  it('serves repeated reads from the cache until the TTL passes, then reads again', async () => {
    const { api, source, advance } = setup(10_000);
    let version = 1;
    api.respond('GET', CM, () => ({ metadata: { name: 'c1' }, data: { v: String(version) } }));
    assert.equal((await source.getConfigMap('ns1', 'c1'))?.data?.v, '1');
    version = 2;
    advance(9_999);
    assert.equal((await source.getConfigMap('ns1', 'c1'))?.data?.v, '1', 'cache hit within the TTL');
    assert.equal(api.requests.length, 1);
    advance(1);
    assert.equal((await source.getConfigMap('ns1', 'c1'))?.data?.v, '2', 'miss once the TTL passed');
    assert.equal(api.requests.length, 2);
  });

  it('keys the cache by kind, namespace and name', async () => {
    const { api, source } = setup();
    api.respond('GET', /.*/, (req: { path: string }) => ({ metadata: { name: req.path } }));
    await source.getSecret('ns1', 'x');
    await source.getConfigMap('ns1', 'x');
    await source.getSecret('ns2', 'x');
    await source.getSecret('ns1', 'x');
    assert.deepEqual(api.calls(), [
      'GET /api/v1/namespaces/ns1/secrets/x',
      'GET /api/v1/namespaces/ns1/configmaps/x',
      'GET /api/v1/namespaces/ns2/secrets/x',
    ]);
  });

  it('returns undefined for NotFound and caches that answer too', async () => {
    const { api, source, advance } = setup(10_000);
    api.respond('GET', SECRET, apiError(404, 'NotFound', 'secrets "s1" not found'));
    assert.equal(await source.getSecret('ns1', 's1'), undefined);
    advance(5_000);
    assert.equal(await source.getSecret('ns1', 's1'), undefined);
    assert.equal(api.requests.length, 1, 'the NotFound answer was cached');
    api.respond('GET', SECRET, { metadata: { name: 's1' }, data: {} });
    advance(5_000);
    assert.deepEqual(await source.getSecret('ns1', 's1'), { metadata: { name: 's1' }, data: {} });
  });

  it('rejects on any other error and does not cache it (an outage is not a deletion)', async () => {
    const { api, source } = setup();
    api.respondOnce('GET', SECRET, apiError(503, 'ServiceUnavailable', 'down'));
    api.respondOnce('GET', SECRET, apiError(403, 'Forbidden', 'no relationship found'));
    api.respond('GET', SECRET, { metadata: { name: 's1' }, data: { a: 'Yg==' } });
    await assert.rejects(source.getSecret('ns1', 's1'), { status: 503 });
    await assert.rejects(source.getSecret('ns1', 's1'), { code: 'PermissionDenied' });
    assert.deepEqual((await source.getSecret('ns1', 's1'))?.data, { a: 'Yg==' });
    assert.equal(api.requests.length, 3);
  });

  it('passes the caller signal to the request', async () => {
    const { api, source } = setup();
    api.respond('GET', SECRET, () => new Promise(() => {}));
    const ac = new AbortController();
    const pending = source.getSecret('ns1', 's1', ac.signal);
    ac.abort();
    await assert.rejects(pending, { code: 'Canceled' });
    assert.equal(api.requests[0]?.signal, ac.signal);
  });
});
