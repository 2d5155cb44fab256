import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import {
  LABEL_CONTAINER_NAME,
  LABEL_POD_NAME,
  LABEL_POD_NAMESPACE,
  LABEL_POD_UID,
} from '../config/defaults.ts';
import { createContainerdEvents } from '../runtime/containerd-events/index.ts';
import type {
  RuntimeEvent,
  RuntimeEventHandlers,
  RuntimeEventSource,
  RuntimeEventTopic,
} from '../runtime/containerd-events/index.ts';
import { exitEnvelope, FakeEventService } from '../runtime/containerd-events/testing.ts';
import { FakeRuntimeService } from '../runtime/cri/testing.ts';
import { createPodStatusReader } from '../runtime/kuberuntime/pod-status-reader.ts';
import { nullLogger } from '../util/logger.ts';
import { createPleg, type EventedStats, type Pleg, type PodLifecycleEvent } from './pleg.ts';
import { EXPECT_MAX_TRIES } from './relister.ts';
import { until as poll } from '../../test/kit/poll.ts';

/** An in-memory event stream: the test says when it is live, what it delivers, when it breaks. */
class FakeEventSource implements RuntimeEventSource {
  handlers: RuntimeEventHandlers | undefined;
  run(handlers: RuntimeEventHandlers, signal: AbortSignal): Promise<void> {
    this.handlers = handlers;
    return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }
  live(): void {
    this.handlers?.onLive();
  }
  emit(containerId: string, topic: RuntimeEventTopic = '/tasks/exit'): void {
    const ev: RuntimeEvent = { topic, namespace: 'k8s.io', at: Date.now(), containerId };
    this.handlers?.onEvent(ev);
  }
}

const HOUR = 3_600_000;

/** A fake CRI holding pods made the way the kubelet makes them (labels), read by the real reader. */
function fakeCri() {
  const cri = new FakeRuntimeService();
  const reader = createPodStatusReader({ runtime: cri, now: () => Date.now() });
  const sandboxConfig = (uid: string) => ({
    metadata: { name: `pod-${uid}`, namespace: 'ns', uid, attempt: 0 },
    labels: { [LABEL_POD_UID]: uid, [LABEL_POD_NAME]: `pod-${uid}`, [LABEL_POD_NAMESPACE]: 'ns' },
  });
  return {
    cri,
    reader,
    async pod(uid: string, containers: string[] = ['app']) {
      const sb = await cri.runPodSandbox(sandboxConfig(uid));
      const ids: string[] = [];
      for (const name of containers) ids.push(await this.container(uid, sb, name));
      return { sandbox: sb, containers: ids };
    },
    async container(uid: string, sb: string, name: string, start = true) {
      const id = await cri.createContainer(
        sb,
        {
          metadata: { name, attempt: 0 },
          image: { image: 'busybox:1.29' },
          labels: { [LABEL_POD_UID]: uid, [LABEL_CONTAINER_NAME]: name },
        },
        sandboxConfig(uid),
      );
      if (start) await cri.startContainer(id);
      return id;
    },
    /** Full relists so far (an unfiltered ListPodSandbox). */
    relists: () => cri.calls.filter((c) => c.method === 'listPodSandbox' && c.args[0] === undefined).length,
    /** Pod status reads so far (a filtered ListPodSandbox). */
    podReads: () => cri.calls.filter((c) => c.method === 'listPodSandbox' && c.args[0] !== undefined).length,
  };
}

const running: Pleg[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()));
});

const until = (cond: () => boolean, what: string, timeoutMs = 3_000) =>
  poll(what, cond, { timeoutMs, intervalMs: 2 });

/** A started evented PLEG over the fake CRI, live, its first relist done. */
async function setup(f: ReturnType<typeof fakeCri>) {
  const source = new FakeEventSource();
  const events: PodLifecycleEvent[] = [];
  let stats: EventedStats | undefined;
  const pleg = createPleg({
    runtime: f.reader,
    logger: nullLogger,
    events: source,
    periodMs: HOUR,
    eventedPeriodMs: HOUR,
    onEventedStats: (s) => (stats = s),
  });
  running.push(pleg);
  pleg.start((e) => events.push(e));
  source.live();
  await until(() => f.relists() >= 2, 'the start and live relists');
  await until(() => pleg.runtimePods() !== undefined, 'the first relist');
  events.length = 0;
  return {
    source,
    pleg,
    events,
    stats: () => stats,
    take: () => events.splice(0).map((e) => `${e.type}:${e.id}`),
  };
}

describe('evented PLEG (fake event stream, fake CRI)', () => {
  it('turns an exit event into ContainerDied at once, with the exit in the cache, without a relist', async () => {
    const f = fakeCri();
    const { containers } = await f.pod('u1');
    const c1 = containers[0] ?? '';
    const s = await setup(f);
    const relists = f.relists();
    f.cri.exitContainer(c1, 1);
    s.source.emit(c1);
    await until(() => s.events.length > 0, 'ContainerDied');
    assert.deepEqual(s.take(), [`ContainerDied:${c1}`]);
    assert.equal(s.pleg.cache.get('u1')?.containers[0]?.state, 'exited');
    assert.equal(s.pleg.cache.get('u1')?.containers[0]?.exitCode, 1);
    assert.equal(f.relists(), relists, 'no relist: the period is an hour');
    assert.equal(s.pleg.runtimePods()?.[0]?.containers[0]?.state, 'exited', 'runtimePods follows the event');
  });

  it('reads again when the exit event comes before CRI shows the exit (containerd publishes it first)', async () => {
    const f = fakeCri();
    const { containers } = await f.pod('u1');
    const c1 = containers[0] ?? '';
    const s = await setup(f);
    const relists = f.relists();
    const reads = f.podReads();
    s.source.emit(c1); // the exit, while CRI still reports the container running
    await until(() => f.podReads() > reads, 'the read the event asked for');
    setTimeout(() => f.cri.exitContainer(c1, 1), 30);
    await until(() => s.events.length > 0, 'ContainerDied after CRI applied the exit');
    assert.deepEqual(s.take(), [`ContainerDied:${c1}`]);
    assert.equal(s.pleg.cache.get('u1')?.containers[0]?.exitCode, 1);
    assert.ok(f.podReads() - reads >= 2, 'the pod was read again');
    assert.equal(f.relists(), relists, 'no relist: the period is an hour');
  });

  it('stops reading again after its tries when CRI never shows what the event said', async () => {
    const f = fakeCri();
    const { containers } = await f.pod('u1');
    const c1 = containers[0] ?? '';
    const s = await setup(f);
    const reads = f.podReads();
    s.source.emit(c1); // an exit CRI never confirms
    await new Promise((r) => setTimeout(r, 2_000));
    const total = f.podReads() - reads;
    assert.equal(total, 1 + EXPECT_MAX_TRIES, 'the first read and its bounded retries');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(f.podReads() - reads, total, 'then nothing more until the relist');
    assert.deepEqual(s.take(), []);
  });

  it('coalesces a burst of 100 exits (each sent twice): every pod gets its ContainerDied, each read once', async () => {
    const f = fakeCri();
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push(...(await f.pod(`u${i}`)).containers);
    const s = await setup(f);
    const relists = f.relists();
    const reads = f.podReads();
    for (const id of ids) f.cri.exitContainer(id, 0);
    for (const id of [...ids, ...ids]) s.source.emit(id);
    await until(() => s.events.length >= 100, '100 ContainerDied');
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(new Set(s.take()), new Set(ids.map((id) => `ContainerDied:${id}`)));
    assert.equal(f.podReads() - reads, 100, 'one status read per pod, not one per event');
    assert.equal(f.relists(), relists, 'known IDs need no relist');
    assert.equal(s.stats()?.podHints, 200);
  });

  it('re-reads a pod once for duplicate events and emits its change once', async () => {
    const f = fakeCri();
    const { containers } = await f.pod('u1');
    const c1 = containers[0] ?? '';
    const s = await setup(f);
    const reads = f.podReads();
    f.cri.exitContainer(c1, 2);
    for (let i = 0; i < 5; i++) s.source.emit(c1);
    await until(() => s.events.length > 0, 'ContainerDied');
    await new Promise((r) => setTimeout(r, 20));
    for (let i = 0; i < 3; i++) s.source.emit(c1); // late duplicates: read, nothing changed
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(s.take(), [`ContainerDied:${c1}`]);
    assert.ok(f.podReads() - reads <= 3, `at most one read per burst (got ${f.podReads() - reads})`);
  });

  it('ignores the order of events: a late start after an exit emits nothing more, the cache stays exited', async () => {
    const f = fakeCri();
    const { containers } = await f.pod('u1');
    const c1 = containers[0] ?? '';
    const s = await setup(f);
    f.cri.exitContainer(c1, 1);
    s.source.emit(c1, '/tasks/exit');
    s.source.emit(c1, '/tasks/start'); // delivered late, after the exit
    await until(() => s.events.length > 0, 'ContainerDied');
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(s.take(), [`ContainerDied:${c1}`]);
    assert.equal(s.pleg.cache.get('u1')?.containers[0]?.state, 'exited');
  });

  it('answers an event for a container it does not know yet (the create has not returned) by relisting until CRI shows it', async () => {
    const f = fakeCri();
    const { sandbox } = await f.pod('u1', []);
    const s = await setup(f);
    const relists = f.relists();
    // The event overtakes the CreateContainer that made the container: CRI does not list it yet.
    s.source.emit('pod-u1_ns_u1_0_late_0', '/tasks/start');
    await until(() => f.relists() > relists, 'a relist');
    assert.deepEqual(s.take(), [], 'nothing to report yet');
    const id = await f.container('u1', sandbox, 'late');
    assert.equal(id, 'pod-u1_ns_u1_0_late_0');
    await until(() => s.events.length > 0, 'ContainerStarted from a retried relist', 2_000);
    assert.deepEqual(s.take(), [`ContainerStarted:${id}`]);
    assert.equal(s.stats()?.relistHints, 1);
  });

  it('reads the pod, without a relist, when the pod worker caches a status naming the unknown container within the grace', async () => {
    const f = fakeCri();
    const { sandbox } = await f.pod('u1', []);
    const s = await setup(f);
    const relists = f.relists();
    const id = await f.container('u1', sandbox, 'fresh');
    s.source.emit(id, '/tasks/start'); // during StartContainer, before the worker read the pod
    s.pleg.cache.set('u1', await f.reader.getPodStatus('u1', 'pod-u1', 'ns')); // the worker's read
    await until(() => s.events.length > 0, 'ContainerStarted');
    assert.deepEqual(s.take(), [`ContainerStarted:${id}`]);
    assert.equal(f.relists(), relists, 'the worker taught the ID: no relist');
  });

  it('retries within a second, even on the hour-long period, when the pod read and the relist after it fail', async () => {
    const f = fakeCri();
    const { containers } = await f.pod('u1');
    const c1 = containers[0] ?? '';
    const s = await setup(f);
    f.cri.exitContainer(c1, 1);
    f.cri.injectError('listContainers', 'UNAVAILABLE', { once: true }); // the pod read
    f.cri.injectError('listContainers', 'UNAVAILABLE', { once: true }); // the relist it asks for
    const t0 = Date.now();
    s.source.emit(c1);
    await until(() => s.events.length > 0, 'ContainerDied from the retried relist', 2_500);
    assert.deepEqual(s.take(), [`ContainerDied:${c1}`]);
    assert.ok(Date.now() - t0 >= 900, 'seen by the retry a second later, not at once');
  });

  it('forgets a delete event for a container it never knew (nothing to learn, no relist)', async () => {
    const f = fakeCri();
    await f.pod('u1');
    const s = await setup(f);
    const relists = f.relists();
    s.source.emit('someone-elses', '/containers/delete');
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(f.relists(), relists);
  });
});

describe('evented PLEG over the real client and a fake containerd event service', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('falls back to the 1 s relist while the stream is broken, re-subscribes with back-off and relists once live again', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'pleg-evented-'));
    const fake = new FakeEventService(path.join(dir, 'containerd.sock'));
    await fake.start();
    const events = createContainerdEvents({ endpoint: fake.socket, logger: nullLogger, retryInitialMs: 30 });
    const f = fakeCri();
    const { containers } = await f.pod('u1', ['a', 'b']);
    const [a = '', b = ''] = containers;
    const got: PodLifecycleEvent[] = [];
    let stats: EventedStats | undefined;
    // The fallback period stands for upstream's 1 s, shortened for the test.
    const pleg = createPleg({
      runtime: f.reader,
      logger: nullLogger,
      events,
      periodMs: 100,
      eventedPeriodMs: HOUR,
      onEventedStats: (s) => (stats = s),
    });
    running.push(pleg);
    try {
      pleg.start((e) => got.push(e));
      await until(() => stats?.live === true, 'live');
      await new Promise((r) => setTimeout(r, 50));
      const liveRelists = f.relists();
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(f.relists(), liveRelists, 'no periodic relist while live');

      // An event on the live stream: seen at once.
      f.cri.exitContainer(a, 1);
      fake.send(exitEnvelope(a));
      await until(() => got.some((e) => e.id === a && e.type === 'ContainerDied'), 'a died (event)');

      // containerd goes away: the stream breaks and re-subscribing fails for a while.
      fake.refuse = true;
      fake.breakAll();
      await until(() => stats?.live === false, 'not live');
      const brokenAt = f.relists();
      // An exit nobody sends an event for: the 100 ms relist finds it.
      f.cri.exitContainer(b, 2);
      await until(() => got.some((e) => e.id === b && e.type === 'ContainerDied'), 'b died (relist)', 1_000);
      assert.ok(f.relists() > brokenAt, 'relisting at the fallback period');
      await until(() => fake.subscribes >= 3, 're-subscribe attempts');

      // containerd is back: live again, and a relist right then.
      fake.refuse = false;
      const beforeLive = f.relists();
      await until(() => stats?.live === true, 'live again', 3_000);
      await until(() => f.relists() > beforeLive, 'the relist after reconnect');
      assert.ok((stats?.resubscribes ?? 0) >= 1);
      await new Promise((r) => setTimeout(r, 100));
      const settled = f.relists();
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(f.relists(), settled, 'back to the long period');
    } finally {
      await pleg.stop();
      events.close();
      await fake.stop();
    }
  });
});
