import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeApi, apiError, quietWatchError, type FakeWatch } from './testing.ts';
import { createServiceInformer, type ServiceInformerOptions } from './service-informer.ts';
import { KubeletError } from '../util/errors.ts';
import { fakeTime, flush, recordingLogger } from '../util/testing.ts';

const SERVICES = '/api/v1/services';
const HOUR = 3_600_000;

interface WireService {
  apiVersion: 'v1';
  kind: 'Service';
  metadata: { name: string; namespace: string; resourceVersion?: string; uid: string };
  spec: { clusterIP?: string; type?: string; ports?: { name?: string; port: number; protocol?: string }[] };
}

function svc(
  namespace: string,
  name: string,
  clusterIP: string | undefined,
  over: { rv?: string; ports?: WireService['spec']['ports']; type?: string } = {},
): WireService {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace,
      uid: `uid-${namespace}-${name}`,
      ...(over.rv ? { resourceVersion: over.rv } : {}),
    },
    spec: {
      ...(clusterIP !== undefined ? { clusterIP } : {}),
      ...(over.type ? { type: over.type } : {}),
      ports: over.ports ?? [{ name: 'http', port: 80, protocol: 'TCP' }],
    },
  };
}

function serviceList(resourceVersion: string, items: WireService[]) {
  return { apiVersion: 'v1', kind: 'ServiceList', metadata: { resourceVersion }, items };
}

const push = (w: FakeWatch, type: 'ADDED' | 'MODIFIED' | 'DELETED', s: WireService) =>
  w.push(type, s as unknown as Record<string, unknown>);

/** By default the back-off is an hour: a test that expects none would time out on nextWatch(). */
function setup(over: Partial<ServiceInformerOptions> = {}) {
  const api = new FakeApi();
  const logger = recordingLogger();
  const informer = createServiceInformer({
    api,
    logger,
    minWatchTimeoutSeconds: 300,
    quietWatchMs: 120_000,
    backoffInitialMs: HOUR,
    backoffMaxMs: HOUR,
    ...over,
  });
  const lists = () => api.requestsFor('GET', SERVICES);
  const names = (ns: string) =>
    informer
      .list(ns)
      .map((s) => s.metadata.name)
      .sort();
  return { api, logger, informer, lists, names };
}

describe('service informer', () => {
  it('lists services of every namespace from the watch cache and has synced once the list is in', async () => {
    const { api, informer, lists, names } = setup();
    api.respondOnce(
      'GET',
      SERVICES,
      serviceList('100', [
        svc('default', 'kubernetes', '10.0.0.1', { ports: [{ name: 'https', port: 443, protocol: 'TCP' }] }),
        svc('shop', 'web', '10.0.0.20'),
        svc('shop', 'db', '10.0.0.21'),
      ]),
    );
    assert.equal(informer.hasSynced(), false, 'not synced before start');
    informer.start();
    const w = await api.nextWatch();
    assert.equal(informer.hasSynced(), true);
    assert.equal(lists().length, 1);
    assert.deepEqual(lists()[0]?.query, { resourceVersion: '0' }, 'every namespace, no field selector');
    assert.deepEqual(names('shop'), ['db', 'web']);
    assert.deepEqual(informer.list('default'), [
      {
        metadata: { name: 'kubernetes', namespace: 'default' },
        spec: { clusterIP: '10.0.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
      },
    ]);
    assert.deepEqual(informer.list('elsewhere'), []);
    assert.equal(informer.size(), 3);

    assert.equal(w.path, SERVICES);
    const { timeoutSeconds, ...rest } = w.query;
    assert.deepEqual(rest, { resourceVersion: '100', allowWatchBookmarks: true });
    assert.ok(typeof timeoutSeconds === 'number' && timeoutSeconds >= 300 && timeoutSeconds < 600);
    assert.equal(w.idleTimeoutMs, 120_000);
    await informer.stop();
  });

  it('keeps only services with a cluster IP (not headless, not ExternalName)', async () => {
    const { api, informer, names } = setup();
    api.respondOnce(
      'GET',
      SERVICES,
      serviceList('100', [
        svc('shop', 'web', '10.0.0.20'),
        svc('shop', 'headless', 'None'),
        svc('shop', 'external', undefined, { type: 'ExternalName' }),
        svc('shop', 'empty', ''),
      ]),
    );
    informer.start();
    await api.nextWatch();
    assert.deepEqual(names('shop'), ['web']);
    assert.equal(informer.size(), 1);
    await informer.stop();
  });

  it('applies watch events: added, modified, deleted; a service that loses its cluster IP leaves', async () => {
    const { api, informer, names } = setup();
    api.respondOnce('GET', SERVICES, serviceList('100', [svc('shop', 'web', '10.0.0.20')]));
    informer.start();
    const w = await api.nextWatch();

    push(w, 'ADDED', svc('shop', 'db', '10.0.0.21', { rv: '101' }));
    assert.deepEqual(names('shop'), ['db', 'web']);

    push(w, 'MODIFIED', svc('shop', 'web', '10.0.0.20', { rv: '102', ports: [{ name: 'alt', port: 8080 }] }));
    assert.deepEqual(informer.list('shop').find((s) => s.metadata.name === 'web')?.spec.ports, [
      { name: 'alt', port: 8080 },
    ]);

    push(w, 'MODIFIED', svc('shop', 'db', undefined, { rv: '103', type: 'ExternalName' }));
    assert.deepEqual(names('shop'), ['web']);

    push(w, 'ADDED', svc('shop', 'headless', 'None', { rv: '104' }));
    assert.deepEqual(names('shop'), ['web'], 'a headless service is never cached');

    push(w, 'DELETED', svc('shop', 'web', '10.0.0.20', { rv: '105' }));
    assert.deepEqual(names('shop'), []);
    assert.equal(informer.size(), 0);

    w.bookmark('150');
    w.end();
    const w2 = await api.nextWatch();
    assert.equal(w2.query.resourceVersion, '150', 'resumes from the bookmark, without a relist');
    assert.equal(api.requestsFor('GET', SERVICES).length, 1);
    await informer.stop();
  });

  it('relists on 410 Gone: the new list replaces the cache and the informer stays synced', async () => {
    const { api, informer, lists, names } = setup();
    api.respondOnce(
      'GET',
      SERVICES,
      serviceList('100', [svc('shop', 'web', '10.0.0.20'), svc('shop', 'db', '10.0.0.21')]),
    );
    informer.start();
    const w1 = await api.nextWatch();
    push(w1, 'MODIFIED', svc('shop', 'web', '10.0.0.20', { rv: '130' }));
    // While we were away, db was deleted and cache added; the events were compacted away.
    api.respondOnce(
      'GET',
      SERVICES,
      serviceList('500', [svc('shop', 'web', '10.0.0.20'), svc('shop', 'cache', '10.0.0.22')]),
    );
    w1.fail(apiError(410, 'Expired', 'too old resource version: 130 (400)'));
    const w2 = await api.nextWatch();
    assert.equal(informer.hasSynced(), true);
    assert.deepEqual(names('shop'), ['cache', 'web']);
    assert.deepEqual(
      lists().map((r) => r.query?.resourceVersion),
      ['0', '130'],
      'relists no older than what it has seen',
    );
    assert.equal(w2.query.resourceVersion, '500');
    await informer.stop();
  });

  it('reads consistently from etcd when the relist at the last resourceVersion is gone too', async () => {
    const { api, informer, lists, names } = setup();
    api.respondOnce('GET', SERVICES, serviceList('100', [svc('shop', 'web', '10.0.0.20')]));
    informer.start();
    const w1 = await api.nextWatch();
    api.respondOnce('GET', SERVICES, apiError(410, 'Expired', 'too old resource version: 100'));
    api.respondOnce('GET', SERVICES, serviceList('900', []));
    w1.fail(apiError(410, 'Expired', 'too old resource version: 100'));
    await api.nextWatch();
    assert.deepEqual(
      lists().map((r) => r.query?.resourceVersion),
      ['0', '100', undefined],
    );
    assert.deepEqual(names('shop'), []);
    await informer.stop();
  });

  it('is not synced while the first list fails; retries after back-off and then syncs', async (t) => {
    const advance = fakeTime(t);
    const { api, informer, lists, logger } = setup({ backoffInitialMs: 1000, backoffMaxMs: 4000 });
    api.respondOnce('GET', SERVICES, apiError(403, 'Forbidden', 'services is forbidden'));
    api.respondOnce('GET', SERVICES, apiError(503, 'ServiceUnavailable', 'starting'));
    api.respondOnce('GET', SERVICES, serviceList('300', [svc('default', 'kubernetes', '10.0.0.1')]));
    informer.start();
    await flush();
    assert.equal(lists().length, 1);
    assert.equal(informer.hasSynced(), false);
    assert.match(String(logger.lines.find((l) => l.level === 'warn')?.fields.err), /forbidden/);
    await advance(1000);
    assert.equal(lists().length, 2);
    assert.equal(informer.hasSynced(), false);
    await advance(1999);
    assert.equal(lists().length, 2, 'the second back-off doubles');
    await advance(1);
    assert.equal(lists().length, 3);
    assert.equal(informer.hasSynced(), true);
    assert.equal(informer.size(), 1);
    assert.equal((await api.nextWatch()).query.resourceVersion, '300');
    await informer.stop();
  });

  it('backs off after a watch error other than 410, then resumes the watch without relisting', async (t) => {
    const advance = fakeTime(t);
    const { api, informer, lists } = setup({ backoffInitialMs: 1000, backoffMaxMs: 4000 });
    api.respondOnce('GET', SERVICES, serviceList('100', []));
    informer.start();
    await flush();
    const w1 = await api.nextWatch();
    w1.fail(new KubeletError('Unavailable', 'WATCH /api/v1/services', 'connect ECONNREFUSED'));
    await flush();
    await advance(999);
    assert.equal(api.pendingWatches(), 0);
    await advance(1);
    assert.equal((await api.nextWatch()).query.resourceVersion, '100');
    assert.equal(lists().length, 1);
    await informer.stop();
  });

  it('backs off after a watch that ends at once with no events (upstream "very short watch")', async () => {
    const { api, informer } = setup(); // an hour of back-off
    api.respondOnce('GET', SERVICES, serviceList('100', []));
    informer.start();
    (await api.nextWatch()).end();
    await flush();
    const opened = api.watches.length;
    for (const w of api.watches.slice(1)) w.end(); // keep a hot loop from running away
    assert.equal(opened, 1, 'no new watch before the back-off');
    await informer.stop();
  });

  it('restarts a quiet watch at once from the last resourceVersion', async () => {
    const { api, informer, lists } = setup();
    api.respondOnce('GET', SERVICES, serviceList('100', []));
    informer.start();
    const w1 = await api.nextWatch();
    w1.bookmark('140');
    w1.fail(quietWatchError(120_000, '/api/v1/services'));
    const w2 = await api.nextWatch(); // with an hour of back-off this would time out
    assert.equal(w2.query.resourceVersion, '140');
    assert.equal(lists().length, 1);
    await informer.stop();
  });

  it('stop() aborts the watch, opens nothing new, and keeps the last contents', async () => {
    const { api, informer } = setup();
    api.respondOnce('GET', SERVICES, serviceList('100', [svc('shop', 'web', '10.0.0.20')]));
    informer.start();
    informer.start(); // idempotent
    const w = await api.nextWatch();
    await informer.stop();
    assert.equal(w.state, 'aborted');
    await flush();
    assert.deepEqual(api.calls(), [`GET ${SERVICES}`, `WATCH ${SERVICES}`]);
    assert.equal(informer.size(), 1);
  });

  it('stop() during back-off returns without waiting it out', async () => {
    const { api, informer } = setup(); // an hour of back-off
    api.respondOnce('GET', SERVICES, apiError(500, 'InternalError', 'boom'));
    informer.start();
    await flush();
    let stopped = false;
    void informer.stop().then(() => (stopped = true));
    await flush();
    assert.equal(stopped, true);
    assert.equal(api.requestsFor('GET', SERVICES).length, 1);
  });
});
