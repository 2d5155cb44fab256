import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createApiObjectSource,
  objectTTLSeconds,
  type ApiObjectSourceOptions,
  type ChangeDetectionStrategy,
} from './object-source.ts';
import { FakeApi, apiError, apiPod, deferred } from './testing.ts';
import type { KubeletPod } from './types.ts';
import { recordingLogger } from '../util/testing.ts';

const SECRET = '/api/v1/namespaces/default/secrets/s1';
const CM = '/api/v1/namespaces/default/configmaps/c1';

function setup(strategy: ChangeDetectionStrategy, over: Partial<ApiObjectSourceOptions> = {}) {
  const api = new FakeApi();
  let nowMs = 1_000_000;
  const logger = recordingLogger();
  const source = createApiObjectSource({ api, strategy, logger, monotonic: () => nowMs, ...over });
  return {
    api,
    source,
    logger,
    advance: (ms: number) => {
      nowMs += ms;
    },
  };
}

/** A pod in `default` whose volumes name secret s1 and configMap c1. */
function podUsing(uid: string, secrets = ['s1'], configMaps = ['c1']): KubeletPod {
  const pod = apiPod(`p-${uid}`, uid);
  pod.spec.volumes = [
    ...secrets.map((s) => ({ name: `s-${s}`, secret: { secretName: s } })),
    ...configMaps.map((c) => ({ name: `c-${c}`, configMap: { name: c } })),
  ];
  return pod;
}

const cm = (v: string, rv = '10') => ({ metadata: { name: 'c1', resourceVersion: rv }, data: { v } });

describe('Get strategy (upstream simple managers)', () => {
  it('reads every time from the object’s API path, with a timeout and the caller’s signal', async () => {
    const { api, source } = setup('Get');
    let version = 1;
    api.respond('GET', CM, () => cm(String(version)));
    source.registerPod(podUsing('u1'));
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, '1');
    version = 2;
    const ac = new AbortController();
    assert.equal((await source.getConfigMap('default', 'c1', ac.signal))?.data?.v, '2');
    assert.equal(api.requests.length, 2);
    assert.equal(api.requests[1]?.signal, ac.signal);
    assert.equal(api.requests[1]?.timeoutMs, 10_000);
    assert.deepEqual(source.counts(), { pods: 1, secrets: 0, configMaps: 0 }, 'nothing is tracked');
  });

  it('answers undefined for NotFound and rejects any other error', async () => {
    const { api, source } = setup('Get');
    api.respondOnce('GET', SECRET, apiError(404, 'NotFound'));
    api.respondOnce('GET', SECRET, apiError(403, 'Forbidden', 'no relationship found'));
    assert.equal(await source.getSecret('default', 's1'), undefined);
    await assert.rejects(source.getSecret('default', 's1'), { code: 'PermissionDenied' });
  });
});

describe('Cache strategy (upstream objectStore, TTL from the node)', () => {
  it('serves a registered object from the cache for the TTL (1 min by default), then refreshes from the API server’s cache', async () => {
    const { api, source, advance } = setup('Cache');
    let version = 1;
    api.respond('GET', CM, () => cm(String(version), String(10 + version)));
    source.registerPod(podUsing('u1'));
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, '1');
    version = 2;
    advance(59_999);
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, '1', 'fresh within the TTL');
    advance(1);
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, '2', 'read again once it passed');
    assert.deepEqual(
      api.requests.map((r) => r.query),
      [undefined, { resourceVersion: '0' }],
      'the first read goes to etcd, a refresh to the watch cache',
    );
  });

  it('takes the TTL from the node’s node.alpha.kubernetes.io/ttl annotation when it has one', async () => {
    let ttl: number | undefined = 0;
    const { api, source, advance } = setup('Cache', { nodeTtlSeconds: () => ttl });
    api.respond('GET', CM, cm('x'));
    source.registerPod(podUsing('u1'));
    await source.getConfigMap('default', 'c1');
    await source.getConfigMap('default', 'c1');
    assert.equal(api.requests.length, 2, 'TTL 0: every read asks');
    ttl = 30;
    advance(29_000);
    await source.getConfigMap('default', 'c1');
    assert.equal(api.requests.length, 2, 'TTL 30 s: the last read is still fresh');
    advance(1_000);
    await source.getConfigMap('default', 'c1');
    assert.equal(api.requests.length, 3);
  });

  it('reads again after a pod registers the object again (a pod update invalidates it)', async () => {
    const { api, source } = setup('Cache');
    api.respond('GET', CM, cm('x'));
    const pod = podUsing('u1');
    source.registerPod(pod);
    await source.getConfigMap('default', 'c1');
    await source.getConfigMap('default', 'c1');
    assert.equal(api.requests.length, 1);
    source.registerPod({ ...pod, metadata: { ...pod.metadata, resourceVersion: '2' } });
    await source.getConfigMap('default', 'c1');
    assert.equal(api.requests.length, 2);
    assert.equal(api.requests[1]?.query, undefined, 'after an invalidation the read is a consistent one');
  });

  it('does not cache NotFound: the next read asks again', async () => {
    const { api, source } = setup('Cache');
    api.respondOnce('GET', SECRET, apiError(404, 'NotFound'));
    api.respond('GET', SECRET, { metadata: { name: 's1', resourceVersion: '5' }, data: {} });
    source.registerPod(podUsing('u1'));
    assert.equal(await source.getSecret('default', 's1'), undefined);
    assert.deepEqual((await source.getSecret('default', 's1'))?.metadata.name, 's1');
    assert.equal(api.requests.length, 2);
  });

  it('serves the last answer when a refresh fails (logged), and fails when there is none', async () => {
    const { api, source, logger, advance } = setup('Cache');
    source.registerPod(podUsing('u1'));
    api.respondOnce('GET', CM, apiError(503, 'ServiceUnavailable', 'down'));
    await assert.rejects(source.getConfigMap('default', 'c1'), { code: 'Unavailable' });
    api.respondOnce('GET', CM, cm('old'));
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, 'old');
    advance(60_000);
    api.respondOnce('GET', CM, apiError(503, 'ServiceUnavailable', 'down'));
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, 'old');
    assert.ok(logger.lines.some((l) => l.level === 'warn' && /serving the last answer/.test(l.msg)));
  });

  it('ignores an answer older than the cached copy', async () => {
    const { api, source, advance } = setup('Cache');
    source.registerPod(podUsing('u1'));
    api.respondOnce('GET', CM, cm('new', '20'));
    api.respondOnce('GET', CM, cm('stale', '19'));
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, 'new');
    advance(60_000);
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, 'new');
  });

  it('shares one request among concurrent reads, and a caller’s abort leaves the others waiting', async () => {
    const { api, source } = setup('Cache');
    source.registerPod(podUsing('u1'));
    const answer = deferred<unknown>();
    api.respond('GET', CM, () => answer.promise);
    const ac = new AbortController();
    const first = source.getConfigMap('default', 'c1', ac.signal);
    const second = source.getConfigMap('default', 'c1');
    ac.abort();
    await assert.rejects(first);
    answer.resolve(cm('x'));
    assert.equal((await second)?.data?.v, 'x');
    assert.equal(api.requests.length, 1);
  });

  it('reads an object no registered pod references with a plain GET every time', async () => {
    const { api, source } = setup('Cache');
    api.respond('GET', CM, cm('x'));
    await source.getConfigMap('default', 'c1');
    await source.getConfigMap('default', 'c1');
    assert.equal(api.requests.length, 2);
  });
});

describe('registering pods with the managers (upstream RegisterPod / UnregisterPod)', () => {
  it('counts references per object: the last pod to go drops it', () => {
    const { source } = setup('Cache');
    source.registerPod(podUsing('u1', ['s1'], ['c1']));
    source.registerPod(podUsing('u2', ['s1', 's2'], []));
    assert.deepEqual(source.counts(), { pods: 2, secrets: 2, configMaps: 1 });
    source.unregisterPod('u1');
    assert.deepEqual(source.counts(), { pods: 1, secrets: 2, configMaps: 0 });
    source.unregisterPod('u1'); // idempotent
    source.unregisterPod('u2');
    assert.deepEqual(source.counts(), { pods: 0, secrets: 0, configMaps: 0 });
  });

  it('moves a re-registered pod’s references to what it names now', () => {
    const { source } = setup('Cache');
    source.registerPod(podUsing('u1', ['s1'], ['c1']));
    source.registerPod(podUsing('u1', ['s2'], ['c1']));
    source.registerPod(podUsing('u1', ['s2'], ['c1']));
    assert.deepEqual(source.counts(), { pods: 1, secrets: 1, configMaps: 1 });
    source.unregisterPod('u1');
    assert.deepEqual(source.counts(), { pods: 0, secrets: 0, configMaps: 0 });
  });
});

describe('the node TTL annotation (upstream GetObjectTTLFromNodeFunc)', () => {
  it('reads whole seconds as strconv.Atoi does and ignores anything else', () => {
    const ttl = (v: string) => objectTTLSeconds({ 'node.alpha.kubernetes.io/ttl': v });
    assert.equal(ttl('0'), 0);
    assert.equal(ttl('15'), 15);
    assert.equal(ttl('+7'), 7);
    assert.equal(ttl('-1'), -1);
    assert.equal(ttl('1.5'), undefined);
    assert.equal(ttl('30s'), undefined);
    assert.equal(ttl(''), undefined);
    assert.equal(objectTTLSeconds(undefined), undefined);
    assert.equal(objectTTLSeconds({}), undefined);
  });
});

describe('Cache strategy while the wall clock steps', () => {
  it('refreshes an object one TTL after it was read across a 1 h backward wall step (default clock)', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.UTC(2026, 10, 24, 12) });
    let mono = 1_000;
    t.mock.method(performance, 'now', () => mono);
    const api = new FakeApi();
    let version = 1;
    api.respond('GET', CM, () => cm(String(version), String(10 + version)));
    const source = createApiObjectSource({ api, strategy: 'Cache', logger: recordingLogger() });
    source.registerPod(podUsing('u1'));
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, '1');
    version = 2;
    t.mock.timers.setTime(Date.now() - 3_600_000);
    mono += 60_000;
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, '2', 'read again after 1 min');
  });
});

describe('PersistentVolumeClaims and PersistentVolumes (upstream populator: a plain GET each time)', () => {
  const PVC = '/api/v1/namespaces/default/persistentvolumeclaims/data';
  const PV = '/api/v1/persistentvolumes/pv-1';
  for (const strategy of ['Get', 'Cache', 'Watch'] as const) {
    it(`reads a claim and its volume from the API with the request timeout (${strategy})`, async () => {
      const { api, source } = setup(strategy);
      api.respond('GET', PVC, () => ({ metadata: { name: 'data', uid: 'c1' }, status: { phase: 'Bound' } }));
      api.respond('GET', PV, () => ({ metadata: { name: 'pv-1' }, spec: { local: { path: '/mnt/x' } } }));
      const ac = new AbortController();
      assert.equal(
        (await source.getPersistentVolumeClaim('default', 'data', ac.signal))?.status?.phase,
        'Bound',
      );
      assert.equal((await source.getPersistentVolume('pv-1'))?.spec?.local?.path, '/mnt/x');
      await source.getPersistentVolumeClaim('default', 'data');
      assert.equal(api.requests.length, 3, 'never cached');
      assert.equal(api.requests[0]?.signal, ac.signal);
      assert.equal(api.requests[0]?.timeoutMs, 10_000);
      assert.equal(api.requests[1]?.timeoutMs, 10_000);
      await source.stop();
    });
  }

  it('answers undefined for NotFound and rejects any other error', async () => {
    const { api, source } = setup('Get');
    api.respondOnce('GET', PVC, apiError(404, 'NotFound'));
    api.respondOnce('GET', PVC, apiError(403, 'Forbidden', 'no relationship found'));
    api.respondOnce('GET', PV, apiError(404, 'NotFound'));
    api.respondOnce('GET', PV, apiError(500, 'InternalError'));
    assert.equal(await source.getPersistentVolumeClaim('default', 'data'), undefined);
    await assert.rejects(source.getPersistentVolumeClaim('default', 'data'), { code: 'PermissionDenied' });
    assert.equal(await source.getPersistentVolume('pv-1'), undefined);
    await assert.rejects(source.getPersistentVolume('pv-1'));
  });
});
