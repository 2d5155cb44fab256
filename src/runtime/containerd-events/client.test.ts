import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { nullLogger } from '../../util/logger.ts';
import { createContainerdEvents, type RuntimeEvent } from './index.ts';
import { exitEnvelope as exit, FakeEventService as FakeEvents } from './testing.ts';
import { MARKER_TOPIC, subscribeFilters, toRuntimeEvent } from './stream.ts';
import { until as poll } from '../../../test/kit/poll.ts';

const until = (cond: () => boolean, what: string, timeoutMs = 5_000) =>
  poll(what, cond, { timeoutMs, intervalMs: 5 });

describe('toRuntimeEvent', () => {
  test('keeps a task exit of a container in the namespace, with its exit status and time', () => {
    const ev = toRuntimeEvent(
      {
        namespace: 'k8s.io',
        topic: '/tasks/exit',
        timestamp: { seconds: 10, nanos: 250e6 },
        event: { containerId: 'c1', id: 'c1', exitStatus: 137 },
      },
      'k8s.io',
    );
    assert.deepEqual(ev, {
      topic: '/tasks/exit',
      namespace: 'k8s.io',
      at: 10_250,
      containerId: 'c1',
      exitStatus: 137,
    });
  });
  test('drops the exit of an exec process (a probe), other namespaces and other topics', () => {
    assert.equal(
      toRuntimeEvent(
        { namespace: 'k8s.io', topic: '/tasks/exit', event: { containerId: 'c1', id: 'exec-9' } },
        'k8s.io',
      ),
      undefined,
    );
    assert.equal(
      toRuntimeEvent(
        { namespace: 'moby', topic: '/tasks/exit', event: { containerId: 'c1', id: 'c1' } },
        'k8s.io',
      ),
      undefined,
    );
    assert.equal(
      toRuntimeEvent(
        { namespace: 'k8s.io', topic: '/tasks/exec-started', event: { containerId: 'c1' } },
        'k8s.io',
      ),
      undefined,
    );
  });
  test('a container delete names the container by its id field', () => {
    const ev = toRuntimeEvent(
      { namespace: 'k8s.io', topic: '/containers/delete', event: { id: 'c2' } },
      'k8s.io',
    );
    assert.equal(ev?.containerId, 'c2');
  });
  test('subscribes to the four topics and the marker, each within the namespace', () => {
    const f = subscribeFilters('k8s.io');
    assert.equal(f.length, 5);
    assert.ok(f.every((x) => x.startsWith('namespace=="k8s.io",topic=="/')));
    assert.ok(f.includes(`namespace=="k8s.io",topic=="${MARKER_TOPIC}"`));
  });
});

describe('containerd event client against a fake event service', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ctrd-events-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('goes live once its marker comes back, then delivers task events (not exec exits)', async () => {
    const fake = new FakeEvents(path.join(dir, 'a.sock'));
    await fake.start();
    const events = createContainerdEvents({ endpoint: fake.socket, logger: nullLogger });
    const abort = new AbortController();
    const got: RuntimeEvent[] = [];
    let live = 0;
    const done = events.run(
      { onLive: () => live++, onEvent: (e) => got.push(e), onBroken: () => undefined },
      abort.signal,
    );
    try {
      await until(() => live === 1, 'live');
      assert.deepEqual(fake.filters[0], subscribeFilters('k8s.io'));
      fake.send(exit('c1', 'probe-exec'));
      fake.send(exit('c1'));
      fake.send(exit('c9', 'c9', 'other-ns'));
      await until(() => got.length === 1, 'the exit');
      assert.equal(got[0]?.containerId, 'c1');
      assert.equal(got[0]?.exitStatus, 3);
      assert.equal(got[0]?.at, 1_700_000_000_500);
    } finally {
      abort.abort();
      await done;
      events.close();
      await fake.stop();
    }
  });

  test('a broken stream is reported and re-subscribed with back-off, and goes live again', async () => {
    const fake = new FakeEvents(path.join(dir, 'b.sock'));
    await fake.start();
    const events = createContainerdEvents({ endpoint: fake.socket, logger: nullLogger, retryInitialMs: 50 });
    const abort = new AbortController();
    let live = 0;
    const broken: number[] = [];
    const done = events.run(
      { onLive: () => live++, onEvent: () => undefined, onBroken: (_e, retry) => broken.push(retry) },
      abort.signal,
    );
    try {
      await until(() => live === 1, 'first live');
      fake.breakAll();
      await until(
        () => live === 2,
        `live again (broken ${JSON.stringify(broken)}, subscribes ${fake.subscribes})`,
      );
      assert.deepEqual(broken, [50]);
      assert.equal(fake.subscribes, 2);
    } finally {
      abort.abort();
      await done;
      events.close();
      await fake.stop();
    }
  });

  test('a subscription whose marker never comes back is dropped at the live deadline and retried, doubling', async () => {
    const fake = new FakeEvents(path.join(dir, 'c.sock'));
    fake.echoMarker = false;
    await fake.start();
    const events = createContainerdEvents({
      endpoint: fake.socket,
      logger: nullLogger,
      retryInitialMs: 20,
      liveTimeoutMs: 100,
      markerEveryMs: 20,
    });
    const abort = new AbortController();
    const broken: { err: Error; retry: number }[] = [];
    let live = 0;
    const done = events.run(
      {
        onLive: () => live++,
        onEvent: () => undefined,
        onBroken: (err, retry) => broken.push({ err, retry }),
      },
      abort.signal,
    );
    try {
      await until(() => broken.length >= 2, 'two failures');
      assert.equal(live, 0);
      assert.match(broken[0]?.err.message ?? '', /not live after 100 ms/);
      assert.deepEqual(
        broken.slice(0, 2).map((b) => b.retry),
        [20, 40],
      );
    } finally {
      abort.abort();
      await done;
      events.close();
      await fake.stop();
    }
  });

  test('a runtime that refuses the marker goes live after the settle instead, and delivers events', async () => {
    const fake = new FakeEvents(path.join(dir, 'd.sock'));
    fake.refusePublish = GrpcStatus.UNIMPLEMENTED;
    await fake.start();
    const events = createContainerdEvents({ endpoint: fake.socket, logger: nullLogger, refusedSettleMs: 50 });
    const abort = new AbortController();
    const got: RuntimeEvent[] = [];
    let live = 0;
    const done = events.run(
      { onLive: () => live++, onEvent: (e) => got.push(e), onBroken: () => undefined },
      abort.signal,
    );
    try {
      await until(() => live === 1, 'live after the settle');
      fake.send(exit('c7'));
      await until(() => got.length === 1, 'the exit');
    } finally {
      abort.abort();
      await done;
      events.close();
      await fake.stop();
    }
  });

  test('close ends the live subscription at once (reported broken), and run keeps retrying until aborted', async () => {
    const fake = new FakeEvents(path.join(dir, 'e.sock'));
    await fake.start();
    const events = createContainerdEvents({ endpoint: fake.socket, logger: nullLogger, retryInitialMs: 10 });
    const abort = new AbortController();
    let live = 0;
    const broken: Error[] = [];
    const done = events.run(
      { onLive: () => live++, onEvent: () => undefined, onBroken: (e) => broken.push(e) },
      abort.signal,
    );
    try {
      await until(() => live === 1, 'live');
      events.close();
      await until(() => broken.length >= 2, 'broken, then a retry on the closed client failing');
      assert.match(broken[0]?.message ?? '', /the events client is closed/);
      assert.equal(live, 1);
    } finally {
      abort.abort();
      await done;
      await fake.stop();
    }
  });

  test('a runtime that is not there is retried until aborted, and run resolves on abort', async () => {
    const events = createContainerdEvents({
      endpoint: path.join(dir, 'nobody.sock'),
      logger: nullLogger,
      retryInitialMs: 10,
      liveTimeoutMs: 200,
    });
    const abort = new AbortController();
    const broken: Error[] = [];
    const done = events.run(
      {
        onLive: () => assert.fail('cannot be live'),
        onEvent: () => undefined,
        onBroken: (e) => broken.push(e),
      },
      abort.signal,
    );
    await until(() => broken.length >= 2, 'two failures');
    abort.abort();
    await done;
    events.close();
  });
});
