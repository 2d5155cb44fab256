import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createApiObjectSource, type ApiObjectSourceOptions } from './object-source.ts';
import { FakeApi, apiError, apiPod, type FakeWatch } from './testing.ts';
import type { KubeletPod } from './types.ts';
import type { ObjectChange } from '../volume/index.ts';
import { flush, recordingLogger } from '../util/testing.ts';

const CMS = '/api/v1/namespaces/default/configmaps';
const SECRETS = '/api/v1/namespaces/default/secrets';
const HOUR = 3_600_000;

function setup(watch: ApiObjectSourceOptions['watch'] = {}) {
  const api = new FakeApi();
  const logger = recordingLogger();
  const source = createApiObjectSource({
    api,
    strategy: 'Watch',
    logger,
    // By default no retry within a test: one that expects none would otherwise race it.
    watch: { reflector: { backoffInitialMs: HOUR, backoffMaxMs: HOUR }, ...watch },
  });
  const changes: ObjectChange[] = [];
  source.onObjectChange?.((c) => changes.push(c));
  return { api, source, logger, changes };
}

function podUsing(uid: string, configMaps: string[], secrets: string[] = []): KubeletPod {
  const pod = apiPod(`p-${uid}`, uid);
  pod.spec.volumes = [
    ...configMaps.map((c) => ({ name: `c-${c}`, configMap: { name: c } })),
    ...secrets.map((s) => ({ name: `s-${s}`, secret: { secretName: s } })),
  ];
  return pod;
}

const cm = (name: string, v: string, rv: string, immutable?: boolean) => ({
  metadata: { name, namespace: 'default', resourceVersion: rv },
  data: { v },
  ...(immutable !== undefined ? { immutable } : {}),
});
const list = (rv: string, items: unknown[]) => ({ metadata: { resourceVersion: rv }, items });

describe('Watch strategy (upstream watch-based managers)', () => {
  it('starts one list/watch per referenced object, by name, whatever the number of pods referencing it', async () => {
    const { api, source } = setup();
    api.respond('GET', CMS, list('7', [cm('c1', 'a', '5')]));
    source.registerPod(podUsing('u1', ['c1']));
    source.registerPod(podUsing('u2', ['c1']));
    const w = await api.nextWatch();
    assert.equal(w.path, CMS);
    assert.equal(w.query.fieldSelector, 'metadata.name=c1');
    assert.equal(w.query.resourceVersion, '7');
    assert.deepEqual(api.requestsFor('GET', CMS)[0]?.query, {
      fieldSelector: 'metadata.name=c1',
      resourceVersion: '0',
    });
    await flush();
    assert.equal(api.watches.length, 1, 'one watch for two pods');
    assert.deepEqual(source.counts(), { pods: 2, secrets: 0, configMaps: 1 });
    await source.stop();
  });

  it('stops the watch when the last pod referencing the object unregisters', async () => {
    const { api, source } = setup();
    api.respond('GET', CMS, list('7', [cm('c1', 'a', '5')]));
    source.registerPod(podUsing('u1', ['c1']));
    source.registerPod(podUsing('u2', ['c1']));
    const w = await api.nextWatch();
    source.unregisterPod('u1');
    await flush();
    assert.equal(w.state, 'open', 'u2 still references it');
    source.unregisterPod('u2');
    await flush();
    assert.equal(w.state, 'aborted');
    assert.equal(source.counts().configMaps, 0);
  });

  it('answers from the watched copy and reports each change after the first list', async () => {
    const { api, source, changes } = setup();
    api.respond('GET', CMS, list('7', [cm('c1', 'a', '5')]));
    source.registerPod(podUsing('u1', ['c1']));
    const w = await api.nextWatch();
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, 'a');
    assert.equal(changes.length, 0, 'the first list is not a change');
    w.push('MODIFIED', cm('c1', 'b', '8'));
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, 'b');
    w.push('DELETED', cm('c1', 'b', '9'));
    assert.equal(await source.getConfigMap('default', 'c1'), undefined, 'deleted reads as NotFound');
    w.push('ADDED', cm('c1', 'c', '10'));
    w.bookmark('11');
    assert.deepEqual(
      changes.map((c) => `${c.kind} ${c.namespace}/${c.name}`),
      ['configMap default/c1', 'configMap default/c1', 'configMap default/c1'],
    );
    assert.equal(api.requestsFor('GET', /configmaps\/c1$/).length, 0, 'reads never GET the object');
    await source.stop();
  });

  it('makes a read wait for the first list, then answer NotFound for an object that does not exist', async () => {
    const { api, source } = setup();
    let answer!: (v: unknown) => void;
    api.respond('GET', SECRETS, () => new Promise((r) => (answer = r)));
    source.registerPod(podUsing('u1', [], ['s1']));
    const read = source.getSecret('default', 's1');
    await flush();
    answer(list('3', []));
    assert.equal(await read, undefined);
    await source.stop();
  });

  it('fails a read whose object was never listed in time, naming the last error', async () => {
    const { api, source } = setup({ firstListWaitMs: 50 });
    api.respond(
      'GET',
      CMS,
      apiError(403, 'Forbidden', "no relationship found between node 'n' and this object"),
    );
    source.registerPod(podUsing('u1', ['c1']));
    await assert.rejects(source.getConfigMap('default', 'c1'), (err: Error) => {
      assert.match(err.message, /failed to sync configMap cache/);
      assert.match(err.message, /no relationship found/);
      return true;
    });
    await source.stop();
  });

  it('resumes a broken watch from the last resourceVersion after a bounded back-off, without a relist', async () => {
    const { api, source } = setup({ reflector: { backoffInitialMs: 1, backoffMaxMs: 5 } });
    api.respond('GET', CMS, list('7', [cm('c1', 'a', '5')]));
    source.registerPod(podUsing('u1', ['c1']));
    const first = await api.nextWatch();
    first.push('MODIFIED', cm('c1', 'b', '8'));
    first.fail(apiError(500, 'InternalError', 'stream reset'));
    const second: FakeWatch = await api.nextWatch();
    assert.equal(second.query.resourceVersion, '8');
    assert.equal(api.requestsFor('GET', CMS).length, 1, 'no second list');
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, 'b');
    await source.stop();
  });

  it('relists after 410 Gone and reports the change the relist reveals', async () => {
    const { api, source, changes } = setup();
    api.respondOnce('GET', CMS, list('7', [cm('c1', 'a', '5')]));
    api.respondOnce('GET', CMS, list('30', [cm('c1', 'z', '29')]));
    source.registerPod(podUsing('u1', ['c1']));
    const first = await api.nextWatch();
    first.fail(apiError(410, 'Gone', 'too old'));
    await api.nextWatch();
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, 'z');
    assert.equal(changes.length, 1);
    await source.stop();
  });

  it('stops watching an immutable object and keeps serving its copy', async () => {
    const { api, source } = setup();
    api.respond('GET', CMS, list('7', [cm('c1', 'a', '5', true)]));
    source.registerPod(podUsing('u1', ['c1']));
    const w = await api.nextWatch();
    await flush();
    assert.equal(w.state, 'aborted');
    assert.equal((await source.getConfigMap('default', 'c1'))?.data?.v, 'a');
    source.unregisterPod('u1');
    assert.equal(source.counts().configMaps, 0);
    await source.stop();
  });

  it('keeps a watch across a pod update that still names the object, and moves the others', async () => {
    const { api, source } = setup();
    api.respond('GET', CMS, (req: { query?: { fieldSelector?: string } }) => {
      const name = String(req.query?.fieldSelector).replace('metadata.name=', '');
      return list('7', [cm(name, name, '5')]);
    });
    source.registerPod(podUsing('u1', ['c1', 'c2']));
    const w1 = await api.nextWatch();
    const w2 = await api.nextWatch();
    source.registerPod(podUsing('u1', ['c1', 'c3']));
    const w3 = await api.nextWatch();
    await flush();
    const byName = (w: FakeWatch) => String(w.query.fieldSelector);
    assert.deepEqual([w1, w2, w3].map((w) => `${byName(w)} ${w.state}`).sort(), [
      'metadata.name=c1 open',
      'metadata.name=c2 aborted',
      'metadata.name=c3 open',
    ]);
    await source.stop();
    assert.equal(w3.state, 'aborted');
  });
});
