import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod, PodList } from '../api/types.ts';
import { FakeApi, apiError, apiPod, quietWatchError } from '../api/testing.ts';
import { ANNOTATION_CONFIG_MIRROR } from '../config/defaults.ts';
import { KubeletError } from '../util/errors.ts';
import { fakeTime, flush, recordingLogger } from '../util/testing.ts';
import { createApiSource, type ApiSourceOptions } from './api-source.ts';
import { isMirrorPod } from '../api/pod-source.ts';
import { snapshotRecorder } from './testing.ts';

const PODS = '/api/v1/pods';
const HOUR = 3_600_000;

function podList(resourceVersion: string, items: Pod[]): PodList {
  return { apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion }, items };
}

function mirrorPod(name: string, uid: string, rv?: string): Pod {
  return apiPod(name, uid, {
    namespace: 'kube-system',
    annotations: { [ANNOTATION_CONFIG_MIRROR]: 'hash' },
    ...(rv ? { resourceVersion: rv } : {}),
  });
}

const names = (pods: Pod[]) => pods.map((p) => p.metadata.name).sort();

/**
 * By default the back-off is an hour: a test that expects no back-off would time out on
 * `nextWatch()` if one happened. Back-off tests mock setTimeout and Math.random instead.
 */
function setup(over: Partial<ApiSourceOptions> = {}) {
  const api = new FakeApi();
  const rec = snapshotRecorder();
  const mirrors: Pod[][] = [];
  const logger = recordingLogger();
  const source = createApiSource({
    api,
    nodeName: 'node-a',
    logger,
    onMirrorPods: (pods) => mirrors.push(pods),
    minWatchTimeoutSeconds: 300,
    quietWatchMs: 120_000,
    backoffInitialMs: HOUR,
    backoffMaxMs: HOUR,
    ...over,
  });
  const lists = () => api.requestsFor('GET', PODS);
  return { api, rec, mirrors, logger, source, lists };
}

describe('API server pod source', () => {
  it('lists the pods bound to this node, sends them, then watches from the list resourceVersion', async () => {
    const { api, rec, source, lists } = setup();
    api.respondOnce('GET', PODS, podList('100', [apiPod('a', 'uid-a'), apiPod('b', 'uid-b')]));
    source.start(rec.send);
    assert.deepEqual(names(await rec.next()), ['a', 'b']);

    assert.equal(lists().length, 1);
    assert.deepEqual(lists()[0]?.query, { fieldSelector: 'spec.nodeName=node-a', resourceVersion: '0' });
    const w = await api.nextWatch();
    assert.equal(w.path, PODS);
    const { timeoutSeconds, ...rest } = w.query;
    assert.deepEqual(rest, {
      fieldSelector: 'spec.nodeName=node-a',
      resourceVersion: '100',
      allowWatchBookmarks: true,
    });
    assert.ok(
      typeof timeoutSeconds === 'number' && timeoutSeconds >= 300 && timeoutSeconds < 600,
      `timeoutSeconds ${String(timeoutSeconds)} in [min, 2×min)`,
    );
    assert.equal(w.idleTimeoutMs, 120_000, 'a quiet watch is detected by the client');
    await source.stop();
  });

  it('sends an empty snapshot when no pod is bound to the node (the source is ready)', async () => {
    const { api, rec, source } = setup();
    api.respondOnce('GET', PODS, podList('7', []));
    source.start(rec.send);
    assert.deepEqual(await rec.next(), []);
    await source.stop();
  });

  it('coalesces a burst of watch events into one snapshot', async () => {
    const { api, rec, source } = setup();
    api.respondOnce('GET', PODS, podList('100', [apiPod('a', 'uid-a'), apiPod('b', 'uid-b')]));
    source.start(rec.send);
    await rec.next();
    const w = await api.nextWatch();
    const changed = apiPod('a', 'uid-a', { resourceVersion: '101' });
    changed.metadata.labels = { v: '2' };
    w.pushPod('MODIFIED', changed);
    w.pushPod('ADDED', apiPod('c', 'uid-c', { resourceVersion: '102' }));
    w.pushPod('ADDED', apiPod('d', 'uid-d', { resourceVersion: '103' }));
    const snap = await rec.next();
    await flush();
    assert.equal(rec.seen.length, 2, 'one snapshot for the list, one for the burst');
    assert.deepEqual(names(snap), ['a', 'b', 'c', 'd']);
    assert.deepEqual(snap.find((p) => p.metadata.name === 'a')?.metadata.labels, { v: '2' });
    await source.stop();
  });

  it('removes a pod on DELETED; a BOOKMARK only moves the resourceVersion', async () => {
    const { api, rec, source, lists } = setup();
    api.respondOnce('GET', PODS, podList('100', [apiPod('a', 'uid-a'), apiPod('b', 'uid-b')]));
    source.start(rec.send);
    await rec.next();
    const w1 = await api.nextWatch();
    w1.pushPod('DELETED', apiPod('a', 'uid-a', { resourceVersion: '110' }));
    assert.deepEqual(names(await rec.next()), ['b']);
    w1.bookmark('150');
    await flush();
    assert.equal(rec.seen.length, 2, 'a bookmark sends no snapshot');
    w1.end();
    const w2 = await api.nextWatch();
    assert.equal(w2.query.resourceVersion, '150');
    assert.equal(lists().length, 1);
    await source.stop();
  });

  it('resumes the watch from the last resourceVersion when the server ends the stream, without relisting', async () => {
    const { api, rec, source, lists } = setup();
    api.respondOnce('GET', PODS, podList('100', [apiPod('a', 'uid-a')]));
    source.start(rec.send);
    await rec.next();
    const w1 = await api.nextWatch();
    w1.pushPod('MODIFIED', apiPod('a', 'uid-a', { resourceVersion: '120' }));
    await rec.next();
    w1.end(); // timeoutSeconds elapsed
    const w2 = await api.nextWatch();
    assert.equal(w2.query.resourceVersion, '120');
    w2.pushPod('ADDED', apiPod('b', 'uid-b', { resourceVersion: '121' }));
    assert.deepEqual(names(await rec.next()), ['a', 'b'], 'the store survives a resumed watch');
    assert.equal(lists().length, 1);
    assert.deepEqual(api.calls(), [`GET ${PODS}`, `WATCH ${PODS}`, `WATCH ${PODS}`]);
    await source.stop();
  });

  it('backs off after a watch that ends at once with no events (upstream "very short watch")', async () => {
    // A server or proxy that closes every watch immediately must not get a watch request per
    // event-loop turn; upstream's reflector treats <1 s with no events as an error and backs off.
    const { api, rec, source } = setup();
    api.respondOnce('GET', PODS, podList('100', []));
    source.start(rec.send);
    await rec.next();
    const w1 = await api.nextWatch();
    w1.end();
    await flush();
    const opened = api.watches.length;
    for (const w of api.watches.slice(1)) w.end(); // keep a hot loop from running away
    assert.equal(opened, 1, 'no new watch before the back-off');
    await source.stop();
  });

  it('relists on 410 Gone and watches from the new list', async () => {
    const { api, rec, source, lists } = setup();
    api.respondOnce('GET', PODS, podList('100', [apiPod('a', 'uid-a'), apiPod('b', 'uid-b')]));
    source.start(rec.send);
    await rec.next();
    const w1 = await api.nextWatch();
    // While we were away, b was deleted and c bound here; the events are compacted away.
    api.respondOnce('GET', PODS, podList('500', [apiPod('a', 'uid-a'), apiPod('c', 'uid-c')]));
    w1.fail(apiError(410, 'Expired', 'too old resource version: 100 (400)'));
    assert.deepEqual(names(await rec.next()), ['a', 'c'], 'the relist replaces the store');
    const w2 = await api.nextWatch();
    assert.equal(w2.query.resourceVersion, '500');
    assert.equal(lists().length, 2);
    await source.stop();
  });

  it('after 410 relists no older than what it has seen: at the last resourceVersion, then a consistent read', async () => {
    // Upstream reflector: on an expired watch it relists with RV=<last seen> ("at least as fresh");
    // only if that list is expired too does it use RV="" (a quorum read). RV=0 may be served
    // from an older cache and bring back pods already seen deleted.
    const { api, rec, source, lists } = setup();
    api.respondOnce('GET', PODS, podList('100', [apiPod('a', 'uid-a')]));
    source.start(rec.send);
    await rec.next();
    const w1 = await api.nextWatch();
    w1.pushPod('DELETED', apiPod('a', 'uid-a', { resourceVersion: '130' }));
    await rec.next();
    api.respondOnce('GET', PODS, apiError(410, 'Expired', 'too old resource version: 130'));
    api.respondOnce('GET', PODS, podList('900', []));
    w1.fail(apiError(410, 'Expired', 'too old resource version: 130'));
    await api.nextWatch();
    assert.deepEqual(
      lists().map((r) => r.query?.resourceVersion),
      ['0', '130', undefined],
    );
    await source.stop();
  });

  it('backs off before relisting when a watch expires again right after a relist (no 410 loop)', async (t) => {
    // A server (or proxy) that answers every watch with 410 Gone must not get a list and a watch per
    // round trip: upstream's reflector backs off between every list-and-watch.
    const advance = fakeTime(t);
    const { api, rec, source, lists } = setup({ backoffInitialMs: 1000, backoffMaxMs: 4000 });
    api.respond('GET', PODS, podList('100', [apiPod('a', 'uid-a')]));
    source.start(rec.send);
    await rec.next();
    (await api.nextWatch()).fail(apiError(410, 'Expired', 'too old resource version'));
    await flush();
    assert.equal(lists().length, 2, 'the first expiry relists at once');
    for (const delay of [1000, 2000, 4000, 4000]) {
      (await api.nextWatch()).fail(apiError(410, 'Expired', 'too old resource version'));
      await flush();
      const before = lists().length;
      await advance(delay - 1);
      assert.equal(lists().length, before, `no relist before ${delay} ms`);
      await advance(1);
      assert.equal(lists().length, before + 1, `relisted after ${delay} ms`);
    }
    // A watch that delivers something is healthy: its next expiry relists at once again.
    const w = await api.nextWatch();
    w.pushPod('MODIFIED', apiPod('a', 'uid-a', { resourceVersion: '150' }));
    w.fail(apiError(410, 'Expired', 'too old resource version'));
    await flush();
    assert.equal(lists().length, 7);
    await source.stop();
  });

  it('retries a watch refused a connection every second, without back-off or relist', async (t) => {
    // Upstream: a refused watch means the API server is down, not overloaded; try again in a second
    // so the watch resumes as soon as it is back (an exponential back-off could sleep 45 s past it).
    const advance = fakeTime(t);
    const { api, rec, source, lists } = setup(); // an hour of back-off for anything else
    api.respondOnce('GET', PODS, podList('100', []));
    source.start(rec.send);
    await rec.next();
    const refused = () =>
      new KubeletError('Unavailable', 'WATCH /api/v1/pods', 'connect ECONNREFUSED 127.0.0.1:6443', {
        cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' }),
      });
    for (let i = 0; i < 5; i++) {
      (await api.nextWatch()).fail(refused());
      await flush();
      await advance(999);
      assert.equal(api.pendingWatches(), 0);
      await advance(1);
      assert.equal(api.pendingWatches(), 1, `attempt ${i + 2} a second later`);
    }
    assert.equal((await api.nextWatch()).query.resourceVersion, '100');
    assert.equal(lists().length, 1);
    await source.stop();
  });

  it('restarts a quiet watch at once from the last resourceVersion, without relist or back-off', async () => {
    const { api, rec, source, lists } = setup();
    api.respondOnce('GET', PODS, podList('100', []));
    source.start(rec.send);
    await rec.next();
    const w1 = await api.nextWatch();
    w1.bookmark('140');
    w1.fail(quietWatchError(120_000));
    const w2 = await api.nextWatch(); // with an hour of back-off this would time out
    assert.equal(w2.query.resourceVersion, '140');
    assert.equal(lists().length, 1);
    await source.stop();
  });

  it('backs off after a timeout that only reads like a quiet watch: the error type decides, not its text', async () => {
    const { api, rec, source, lists } = setup(); // an hour of back-off
    api.respondOnce('GET', PODS, podList('100', []));
    source.start(rec.send);
    await rec.next();
    const w1 = await api.nextWatch();
    w1.fail(new KubeletError('DeadlineExceeded', 'WATCH /api/v1/pods', 'no watch event for 120000 ms'));
    await flush();
    assert.equal(api.watches.length, 1, 'no immediate restart');
    assert.equal(lists().length, 1);
    await source.stop();
  });

  it('backs off exponentially after other watch errors, up to the cap, and resumes without relisting', async (t) => {
    const advance = fakeTime(t);
    const { api, rec, source, lists, logger } = setup({ backoffInitialMs: 1000, backoffMaxMs: 4000 });
    api.respondOnce('GET', PODS, podList('100', [apiPod('a', 'uid-a')]));
    source.start(rec.send);
    await rec.next();
    let w = await api.nextWatch();
    const failures: unknown[] = [
      apiError(500, 'InternalError', 'etcd leader changed'),
      new KubeletError('Unavailable', 'WATCH /api/v1/pods', 'connect ECONNREFUSED'),
      apiError(429, 'TooManyRequests', 'slow down'),
      apiError(503, 'ServiceUnavailable', 'down'),
    ];
    const expectedDelays = [1000, 2000, 4000, 4000];
    for (const [i, err] of failures.entries()) {
      w.fail(err);
      await flush();
      const delay = expectedDelays[i] ?? 0;
      await advance(delay - 1);
      assert.equal(api.pendingWatches(), 0, `failure ${i + 1}: still backing off at ${delay - 1} ms`);
      await advance(1);
      assert.equal(api.pendingWatches(), 1, `failure ${i + 1}: watch reopened after ${delay} ms`);
      w = await api.nextWatch();
      assert.equal(w.query.resourceVersion, '100');
    }
    assert.equal(lists().length, 1, 'errors other than 410 never relist');
    assert.match(String(logger.lines.find((l) => l.level === 'warn')?.fields.err), /etcd leader changed/);

    // An event proves the connection works: the next failure starts from the initial delay again.
    w.pushPod('MODIFIED', apiPod('a', 'uid-a', { resourceVersion: '200' }));
    w.fail(apiError(500, 'InternalError', 'again'));
    await flush();
    await advance(1000);
    assert.equal(api.pendingWatches(), 1);
    assert.equal((await api.nextWatch()).query.resourceVersion, '200');
    await source.stop();
  });

  it('retries a failed initial list after back-off, then watches from it', async (t) => {
    const advance = fakeTime(t);
    const { api, rec, source, lists } = setup({ backoffInitialMs: 1000, backoffMaxMs: 4000 });
    api.respondOnce('GET', PODS, apiError(503, 'ServiceUnavailable', 'apiserver starting'));
    api.respondOnce('GET', PODS, podList('300', [apiPod('a', 'uid-a')]));
    source.start(rec.send);
    await flush();
    assert.equal(lists().length, 1);
    assert.equal(rec.seen.length, 0, 'nothing is sent before a list succeeds');
    await advance(999);
    assert.equal(lists().length, 1);
    await advance(1);
    assert.equal(lists().length, 2);
    assert.deepEqual(names(rec.seen.at(-1) ?? []), ['a']);
    assert.equal((await api.nextWatch()).query.resourceVersion, '300');
    await source.stop();
  });

  it('sends mirror pods to onMirrorPods, never in the snapshot of desired pods', async () => {
    const { api, rec, mirrors, source } = setup();
    assert.equal(isMirrorPod(mirrorPod('etcd-node-a', 'm1')), true);
    assert.equal(isMirrorPod(apiPod('a', 'uid-a')), false);
    api.respondOnce('GET', PODS, podList('100', [apiPod('a', 'uid-a'), mirrorPod('etcd-node-a', 'm1')]));
    source.start(rec.send);
    assert.deepEqual(names(await rec.next()), ['a']);
    assert.deepEqual(names(mirrors.at(-1) ?? []), ['etcd-node-a']);

    const w = await api.nextWatch();
    w.pushPod('ADDED', mirrorPod('proxy-node-a', 'm2', '101'));
    assert.deepEqual(names(await rec.next()), ['a']);
    assert.deepEqual(names(mirrors.at(-1) ?? []), ['etcd-node-a', 'proxy-node-a']);
    w.pushPod('DELETED', mirrorPod('etcd-node-a', 'm1', '102'));
    await rec.next();
    assert.deepEqual(names(mirrors.at(-1) ?? []), ['proxy-node-a']);
    await source.stop();
  });

  it('skips, with a warning, a pod the API server sent without a UID, name or namespace', async () => {
    const { api, rec, logger, source } = setup();
    const noUID: Pod = { ...apiPod('no-uid', 'x'), metadata: { name: 'no-uid', namespace: 'default' } };
    const noNamespace: Pod = { ...apiPod('no-ns', 'uid-x'), metadata: { name: 'no-ns', uid: 'uid-x' } };
    api.respondOnce('GET', PODS, podList('100', [apiPod('a', 'uid-a'), noUID, noNamespace]));
    source.start(rec.send);
    assert.deepEqual(names(await rec.next()), ['a']);
    const warned = logger.lines.filter((l) => l.msg === 'Ignoring pod from the API server without identity');
    assert.deepEqual(
      warned.map((l) => l.fields.missing),
      ['uid', 'namespace'],
    );

    const w = await api.nextWatch();
    w.pushPod('ADDED', { ...apiPod('b', 'uid-b'), metadata: { namespace: 'default', uid: 'uid-b' } });
    w.pushPod('ADDED', apiPod('c', 'uid-c', { resourceVersion: '101' }));
    assert.deepEqual(names(await rec.next()), ['a', 'c']);
    await source.stop();
  });

  it('skips, with a warning naming the field, a pod whose fields have the wrong JSON type, as upstream’s decoder refuses it', async () => {
    const { api, rec, logger, source } = setup();
    const badPorts = apiPod('bad-ports', 'uid-p') as unknown as {
      spec: { containers: Record<string, unknown>[] };
    };
    (badPorts.spec.containers[0] as Record<string, unknown>).ports = 'http';
    const badAffinity = {
      ...apiPod('bad-aff', 'uid-f'),
      spec: { ...apiPod('x', 'y').spec, affinity: { nodeAffinity: 5 } },
    };
    const deep = {
      ...apiPod('deep', 'uid-d'),
      spec: { ...apiPod('x', 'y').spec, x: JSON.parse(`${'['.repeat(500)}${']'.repeat(500)}`) as unknown },
    };
    api.respondOnce(
      'GET',
      PODS,
      podList('100', [apiPod('a', 'uid-a'), badPorts, badAffinity, deep] as Pod[]),
    );
    source.start(rec.send);
    assert.deepEqual(names(await rec.next()), ['a']);
    const warned = logger.lines.filter(
      (l) => l.msg === 'Ignoring pod from the API server that does not decode',
    );
    assert.deepEqual(
      warned.map((l) => [l.fields.pod, l.fields.error]),
      [
        ['default/bad-ports', 'spec.containers[0].ports: Invalid value: "http": must be a list'],
        ['default/bad-aff', 'spec.affinity.nodeAffinity: Invalid value: 5: must be an object'],
        ['default/deep', 'spec.x[0][0][0][0][0][0][0][0][0][0]…: nested more than 100 levels deep'],
      ],
    );

    // A malformed update keeps the last good version; a malformed deletion still deletes.
    const w = await api.nextWatch();
    w.push('MODIFIED', { ...apiPod('a', 'uid-a'), spec: 'broken' });
    w.pushPod('ADDED', apiPod('b', 'uid-b'));
    const snap = await rec.next();
    assert.deepEqual(names(snap), ['a', 'b']);
    assert.equal(snap.find((p) => p.metadata.name === 'a')?.spec.containers[0]?.name, 'c');
    w.push('DELETED', { metadata: { uid: 'uid-a' }, spec: 'broken' });
    assert.deepEqual(names(await rec.next()), ['b']);
    await source.stop();
  });

  it('treats a LIST whose items is not a list as a failed list (backs off), not a TypeError', async () => {
    const { api, rec, logger, source } = setup();
    api.respondOnce('GET', PODS, {
      apiVersion: 'v1',
      kind: 'PodList',
      metadata: { resourceVersion: '1' },
      items: 'x',
    });
    source.start(rec.send);
    await flush();
    assert.equal(rec.seen.length, 0);
    const failed = logger.lines.find((l) => l.msg === 'pods list/watch failed; retrying with back-off');
    assert.match(String(failed?.fields.err), /LIST \/api\/v1\/pods: the response's items is not a list/);
    await source.stop();
  });

  it('reads null fields as unset and refuses pods missing fields the kubelet needs (no containers, a nameless sysctl)', async () => {
    const { api, rec, logger, source } = setup();
    const nulls = {
      ...apiPod('nulls', 'uid-n'),
      spec: { ...apiPod('x', 'y').spec, securityContext: null, volumes: null },
    };
    const noContainers = { ...apiPod('none', 'uid-0'), spec: { nodeName: 'node-a' } };
    const sysctl = {
      ...apiPod('sysctl', 'uid-s'),
      spec: { ...apiPod('x', 'y').spec, securityContext: { sysctls: [{ name: null, value: '1' }] } },
    };
    api.respondOnce('GET', PODS, podList('100', [nulls, noContainers, sysctl] as unknown as Pod[]));
    source.start(rec.send);
    const snap = await rec.next();
    assert.deepEqual(names(snap), ['nulls']);
    assert.equal('securityContext' in (snap[0]?.spec ?? {}), false);
    assert.deepEqual(
      logger.lines
        .filter((l) => l.msg === 'Ignoring pod from the API server that does not decode')
        .map((l) => l.fields.error),
      ['spec.containers: Required value', 'spec.securityContext.sysctls[0].name: Required value'],
    );
    await source.stop();
  });

  it('ignores a watch event without an object instead of failing the watch on it at every retry', async () => {
    const { api, rec, logger, source } = setup();
    api.respondOnce('GET', PODS, podList('100', []));
    source.start(rec.send);
    await rec.next();
    const w = await api.nextWatch();
    for (const object of [null, 'x', [1]]) w.push('ADDED', object as unknown as Record<string, unknown>);
    w.pushPod('ADDED', apiPod('b', 'uid-b'));
    assert.deepEqual(names(await rec.next()), ['b']);
    assert.equal(w.state, 'open');
    assert.equal(
      logger.lines.filter((l) => l.msg === 'Ignoring pods watch event without an object').length,
      3,
    );
    await source.stop();
  });

  it('stop() aborts the open watch and starts nothing new', async () => {
    const { api, rec, source } = setup();
    api.respondOnce('GET', PODS, podList('100', []));
    source.start(rec.send);
    await rec.next();
    const w = await api.nextWatch();
    await source.stop();
    assert.equal(w.signal.aborted, true);
    assert.equal(w.state, 'aborted');
    await flush();
    assert.deepEqual(api.calls(), [`GET ${PODS}`, `WATCH ${PODS}`]);
  });

  it('stop() during back-off returns without waiting it out', async () => {
    const { api, rec, source } = setup(); // an hour of back-off
    api.respondOnce('GET', PODS, podList('100', []));
    source.start(rec.send);
    await rec.next();
    (await api.nextWatch()).fail(apiError(500, 'InternalError', 'boom'));
    await flush();
    let stopped = false;
    void source.stop().then(() => (stopped = true));
    await flush();
    assert.equal(stopped, true);
    assert.equal(api.watches.length, 1);
  });

  it('stop() during the initial list aborts it', async () => {
    const { api, rec, source } = setup();
    api.respondOnce('GET', PODS, () => new Promise(() => {}));
    source.start(rec.send);
    await flush();
    await source.stop();
    assert.equal(api.requests[0]?.signal?.aborted, true);
    assert.equal(rec.seen.length, 0);
    assert.equal(api.watches.length, 0);
  });

  it('delivers no snapshot after stop() has returned', async () => {
    const { api, rec, mirrors, source } = setup();
    api.respondOnce('GET', PODS, podList('100', []));
    source.start(rec.send);
    await rec.next();
    const w = await api.nextWatch();
    const sent = rec.seen.length;
    const mirrorCalls = mirrors.length;
    w.pushPod('ADDED', apiPod('late', 'uid-late', { resourceVersion: '101' }));
    await source.stop();
    await flush();
    assert.equal(rec.seen.length, sent, 'no snapshot after stop()');
    assert.equal(mirrors.length, mirrorCalls, 'no mirror update after stop()');
  });
});
