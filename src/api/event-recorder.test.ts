import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { ApiError } from './client-types.ts';
import { createApiEventRecorder } from './event-recorder.ts';
import { FakeApi, apiError, apiPod } from './testing.ts';
import { flush, recordingLogger } from '../util/testing.ts';

const T0 = Date.parse('2026-11-22T01:00:00.000Z');

function setup(opts: { qps: number; burst: number }, t?: TestContext) {
  // The recorder stamps events with Date, paces them on the monotonic clock (performance.now) and
  // sleeps with setTimeout: mocking all three (the monotonic clock follows the mocked Date) makes
  // pacing and timestamps deterministic.
  t?.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: T0 });
  if (t) t.mock.method(performance, 'now', () => Date.now() - T0);
  const api = new FakeApi();
  api.respond('POST', /^\/api\/v1\/namespaces\/[^/]+\/events$/, (req: { body: unknown }) => req.body);
  const logger = recordingLogger();
  const recorder = createApiEventRecorder({ api, nodeName: 'node-a', logger, ...opts });
  const posted = () => api.requestsFor('POST').map((r) => (r.body as { reason: string }).reason);
  return { api, logger, recorder, posted };
}

describe('API event recorder', () => {
  it('posts a v1 Event about a pod with the kubelet as source', async (t) => {
    const { api, recorder } = setup({ qps: 50, burst: 100 }, t);
    const pod = apiPod('web', 'uid-1', { namespace: 'apps' });
    recorder.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
    await flush();
    assert.deepEqual(api.calls(), ['POST /api/v1/namespaces/apps/events']);
    assert.deepEqual(api.requests[0]?.body, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: 'web.', namespace: 'apps' },
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: 'apps', name: 'web', uid: 'uid-1' },
      reason: 'BackOff',
      message: 'Back-off restarting failed container',
      type: 'Warning',
      source: { component: 'kubelet', host: 'node-a' },
      firstTimestamp: '2026-11-22T01:00:00Z',
      lastTimestamp: '2026-11-22T01:00:00Z',
      count: 1,
      reportingComponent: 'kubelet',
      reportingInstance: 'node-a',
    });
    await recorder.stop();
  });

  it('posts events about the node (a cluster-scoped object) to the default namespace', async () => {
    const { api, recorder } = setup({ qps: 50, burst: 100 });
    const ref = { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-uid' };
    recorder.eventFor(ref, 'Normal', 'NodeReady', 'Node node-a status is now: NodeReady');
    await flush();
    assert.deepEqual(api.calls(), ['POST /api/v1/namespaces/default/events']);
    const body = api.requests[0]?.body as Record<string, unknown>;
    assert.deepEqual(body.involvedObject, ref);
    assert.equal(body.type, 'Normal');
    assert.equal(body.reason, 'NodeReady');
    await recorder.stop();
  });

  it('logs every event with the pod identity, warnings at warn level', async () => {
    const { logger, recorder } = setup({ qps: 50, burst: 100 });
    recorder.event(apiPod('web', 'uid-1'), 'Normal', 'Pulled', 'image pulled');
    recorder.event(apiPod('web', 'uid-1'), 'Warning', 'Failed', 'no such image');
    await recorder.stop();
    const lines = logger.lines.filter((l) => l.fields.event !== undefined);
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg, l.fields.pod, l.fields.podUID, l.fields.event, l.fields.type]),
      [
        ['info', 'image pulled', 'default/web', 'uid-1', 'Pulled', 'Normal'],
        ['warn', 'no such image', 'default/web', 'uid-1', 'Failed', 'Warning'],
      ],
    );
  });

  it('posts in order, paced by eventRecordQPS after the eventBurst', async (t) => {
    const { recorder, posted } = setup({ qps: 1, burst: 2 }, t);
    const pod = apiPod('web', 'uid-1');
    for (const r of ['e1', 'e2', 'e3', 'e4']) recorder.event(pod, 'Normal', r, r);
    await flush();
    assert.deepEqual(posted(), ['e1', 'e2'], 'the burst goes out at once');
    t.mock.timers.tick(999);
    await flush();
    assert.deepEqual(posted(), ['e1', 'e2']);
    t.mock.timers.tick(1);
    await flush();
    assert.deepEqual(posted(), ['e1', 'e2', 'e3']);
    t.mock.timers.tick(1000);
    await flush();
    assert.deepEqual(posted(), ['e1', 'e2', 'e3', 'e4']);
    await recorder.stop();
  });

  it('logs an event the API server refuses (4xx), does not retry it, and goes on with the next', async () => {
    const { api, logger, recorder, posted } = setup({ qps: 50, burst: 100 });
    api.respondOnce('POST', '/api/v1/namespaces/default/events', apiError(403, 'Forbidden', 'denied'));
    const pod = apiPod('web', 'uid-1');
    recorder.event(pod, 'Normal', 'first', 'm');
    recorder.event(pod, 'Normal', 'second', 'm');
    await flush();
    assert.deepEqual(posted(), ['first', 'second']);
    const failed = logger.lines.find((l) => l.msg === 'the API server refused an event; not retrying');
    assert.equal(failed?.fields.reason, 'first');
    assert.match(String(failed?.fields.err), /403 Forbidden/);
    await recorder.stop();
  });

  it('retries an event while the API server cannot be reached, 10 s apart, and the events behind it wait', async (t) => {
    const { api, recorder, posted } = setup({ qps: 50, burst: 100 }, t);
    t.mock.method(Math, 'random', () => 0.5);
    const down = new Error('connect ECONNREFUSED 127.0.0.1:6443');
    api.respondOnce('POST', '/api/v1/namespaces/default/events', down);
    api.respondOnce('POST', '/api/v1/namespaces/default/events', down);
    const pod = apiPod('web', 'uid-1');
    recorder.event(pod, 'Warning', 'FailedMount', 'm');
    recorder.event(pod, 'Normal', 'Pulled', 'm');
    await flush();
    assert.deepEqual(posted(), ['FailedMount'], 'the first try');
    t.mock.timers.tick(4_999);
    await flush();
    assert.deepEqual(posted(), ['FailedMount'], 'the first wait is a random part of 10 s (here 5 s)');
    t.mock.timers.tick(1);
    await flush();
    assert.deepEqual(posted(), ['FailedMount', 'FailedMount']);
    t.mock.timers.tick(10_000);
    await flush();
    assert.deepEqual(
      posted(),
      ['FailedMount', 'FailedMount', 'FailedMount', 'Pulled'],
      'posted, then the next',
    );
    await recorder.stop();
  });

  it('drops an event after 12 tries with a warning, then posts the next', async (t) => {
    const { api, logger, recorder, posted } = setup({ qps: 50, burst: 100 }, t);
    for (let i = 0; i < 12; i++)
      api.respondOnce('POST', '/api/v1/namespaces/default/events', new Error('socket hang up'));
    const pod = apiPod('web', 'uid-1');
    recorder.event(pod, 'Warning', 'lost', 'm');
    recorder.event(pod, 'Normal', 'next', 'm');
    for (let i = 0; i < 13; i++) {
      await flush();
      t.mock.timers.tick(10_000);
    }
    await flush();
    assert.deepEqual(posted(), [...Array<string>(12).fill('lost'), 'next']);
    const dropped = logger.lines.filter(
      (l) => l.msg === 'could not post event; retry limit reached, dropping it',
    );
    assert.deepEqual(
      dropped.map((l) => [l.level, l.fields.reason, l.fields.tries]),
      [['warn', 'lost', 12]],
    );
    await recorder.stop();
  });

  it("waits at least the server's Retry-After before trying a throttled event again", async (t) => {
    const { api, recorder, posted } = setup({ qps: 50, burst: 100 }, t);
    t.mock.method(Math, 'random', () => 0);
    const throttled = new ApiError('POST events', 429, 'TooManyRequests', 'slow down', {
      retryAfterSeconds: 30,
    });
    api.respondOnce('POST', '/api/v1/namespaces/default/events', throttled);
    recorder.event(apiPod('web', 'uid-1'), 'Normal', 'Pulled', 'm');
    await flush();
    t.mock.timers.tick(29_999);
    await flush();
    assert.deepEqual(posted(), ['Pulled']);
    t.mock.timers.tick(1);
    await flush();
    assert.deepEqual(posted(), ['Pulled', 'Pulled']);
    await recorder.stop();
  });

  it('bounds the queue at 1000: further events are dropped with a log line, not queued', async () => {
    const { api, logger, recorder, posted } = setup({ qps: 1000, burst: 1000 });
    api.respond('POST', '/api/v1/namespaces/default/events', () => new Promise(() => {})); // API hangs
    const pod = apiPod('web', 'uid-1');
    recorder.event(pod, 'Normal', 'in-flight', 'm');
    await flush();
    assert.deepEqual(posted(), ['in-flight']);
    for (let i = 0; i < 1000; i++) recorder.event(pod, 'Normal', `queued-${i}`, 'm');
    const full = () => logger.lines.filter((l) => l.msg === 'event queue full; dropping events');
    assert.equal(full().length, 0, '1000 events fit');
    recorder.event(pod, 'Normal', 'dropped-1', 'm');
    assert.deepEqual(
      full().map((l) => l.fields.dropped),
      [1],
    );
    for (let i = 2; i <= 101; i++) recorder.event(pod, 'Normal', `dropped-${i}`, 'm');
    assert.deepEqual(
      full().map((l) => l.fields.dropped),
      [1, 101],
      'one line per 100 drops, not one per event',
    );
    assert.ok(
      logger.lines.some((l) => l.fields.event === 'dropped-101'),
      'a dropped event is still in the log',
    );
    await recorder.stop();
    assert.deepEqual(posted(), ['in-flight']);
  });

  it('stop() aborts the post in flight and drops pending events; later events are only logged', async (t) => {
    const { api, logger, recorder, posted } = setup({ qps: 1, burst: 1 }, t);
    api.respond('POST', '/api/v1/namespaces/default/events', () => new Promise(() => {}));
    const pod = apiPod('web', 'uid-1');
    recorder.event(pod, 'Normal', 'e1', 'm');
    recorder.event(pod, 'Normal', 'e2', 'm');
    recorder.event(pod, 'Normal', 'e3', 'm');
    await flush();
    assert.deepEqual(posted(), ['e1']);
    await recorder.stop();
    assert.equal(api.requests[0]?.signal?.aborted, true);
    recorder.event(pod, 'Normal', 'after-stop', 'm');
    t.mock.timers.tick(60_000);
    await flush();
    assert.deepEqual(posted(), ['e1']);
    assert.ok(logger.lines.some((l) => l.fields.event === 'after-stop'));
  });
});
