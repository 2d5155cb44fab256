import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeApi, type FakeWatch } from './testing.ts';
import {
  createRuntimeClassInformer,
  noRuntimeClasses,
  RUNTIME_CLASSES_PATH,
} from './runtime-class-informer.ts';
import { recordingLogger } from '../util/testing.ts';

const HOUR = 3_600_000;

function rc(name: string, handler: string, rv = '1') {
  return {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name, uid: `uid-${name}`, resourceVersion: rv },
    handler,
    overhead: { podFixed: { cpu: '100m' } },
  };
}

function rcList(resourceVersion: string, items: ReturnType<typeof rc>[]) {
  return { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClassList', metadata: { resourceVersion }, items };
}

const push = (w: FakeWatch, type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: ReturnType<typeof rc>) =>
  w.push(type, obj);

function setup() {
  const api = new FakeApi();
  const informer = createRuntimeClassInformer({
    api,
    logger: recordingLogger(),
    minWatchTimeoutSeconds: 300,
    quietWatchMs: 120_000,
    backoffInitialMs: HOUR,
    backoffMaxMs: HOUR,
  });
  return { api, informer };
}

describe('runtime class informer', () => {
  it('lists node.k8s.io/v1 RuntimeClasses and resolves a name to its handler', async () => {
    const { api, informer } = setup();
    api.respondOnce('GET', RUNTIME_CLASSES_PATH, rcList('10', [rc('sandboxed', 'runc-test')]));
    informer.start();
    const w = await api.nextWatch();
    assert.equal(w.path, RUNTIME_CLASSES_PATH);
    assert.equal(informer.hasSynced(), true);
    assert.deepEqual(informer.lookupRuntimeHandler('sandboxed'), { ok: true, handler: 'runc-test' });
    await informer.stop();
  });

  it('resolves no name and the empty name to the default handler without asking the cache', () => {
    const { informer } = setup();
    assert.deepEqual(informer.lookupRuntimeHandler(undefined), { ok: true, handler: '' });
    assert.deepEqual(informer.lookupRuntimeHandler(''), { ok: true, handler: '' });
  });

  it("answers an unknown class with upstream's NotFound text, and says when nothing was listed yet", async () => {
    const { api, informer } = setup();
    assert.deepEqual(informer.lookupRuntimeHandler('kata'), {
      ok: false,
      message: 'failed to lookup RuntimeClass kata: RuntimeClasses have not been listed yet',
    });
    api.respondOnce('GET', RUNTIME_CLASSES_PATH, rcList('10', []));
    informer.start();
    await api.nextWatch();
    assert.deepEqual(informer.lookupRuntimeHandler('kata'), {
      ok: false,
      message: 'runtimeclasses.node.k8s.io "kata" not found',
    });
    await informer.stop();
  });

  it('follows watch events: a class created, changed and deleted after the list', async () => {
    const { api, informer } = setup();
    api.respondOnce('GET', RUNTIME_CLASSES_PATH, rcList('10', []));
    informer.start();
    const w = await api.nextWatch();
    push(w, 'ADDED', rc('late', 'runc-test', '11'));
    assert.deepEqual(informer.lookupRuntimeHandler('late'), { ok: true, handler: 'runc-test' });
    push(w, 'MODIFIED', rc('late', 'other', '12'));
    assert.deepEqual(informer.lookupRuntimeHandler('late'), { ok: true, handler: 'other' });
    push(w, 'DELETED', rc('late', 'other', '13'));
    assert.equal(informer.lookupRuntimeHandler('late').ok, false);
    await informer.stop();
  });

  it('standalone (no API client) resolves every name to the default handler, as upstream without a manager', () => {
    assert.deepEqual(noRuntimeClasses.lookupRuntimeHandler('kata'), { ok: true, handler: '' });
  });
});
