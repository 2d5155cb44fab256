import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sleep } from '../util/abort.ts';
import { recordingLogger } from '../util/testing.ts';
import { FakeImageService, FakeRuntimeService } from '../runtime/cri/testing.ts';
import type { Image } from '../runtime/cri/types.ts';
import { createImageFsUsage, createImageGC, type ImageGCPolicy } from './index.ts';

const T0 = Date.parse('2026-01-10T08:00:00Z');
const MIN = 60_000;
const PAUSE = 'registry.k8s.io/pause:3.6';
/** Upstream's defaults: 85% starts a pass, it frees down to 80%, images younger than 2m stay. */
const POLICY: ImageGCPolicy = { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 2 * MIN };
const CAPACITY = 1000;

/**
 * The fake CRI on a clock the test sets, and an image filesystem of CAPACITY bytes holding the
 * images plus `other` bytes of something else.
 */
function setup(policy: ImageGCPolicy = POLICY) {
  let nowMs = T0;
  const clock = { now: () => nowMs, sleep };
  const images = new FakeImageService({ clock });
  const runtime = new FakeRuntimeService({ clock });
  const logger = recordingLogger();
  const events: { type: string; reason: string; message: string }[] = [];
  const reasons = () => events.map((e) => e.reason);
  const fs = { capacity: CAPACITY, other: 0, measured: 0 };
  const stop = new AbortController();
  const gc = createImageGC({
    images,
    runtime,
    policy,
    sandboxImage: PAUSE,
    imageFsUsage: () => {
      fs.measured++;
      const used = [...images.images.values()].reduce((n, i) => n + i.size, 0) + fs.other;
      return Promise.resolve({ capacityBytes: fs.capacity, availableBytes: fs.capacity - used });
    },
    nodeEvent: (type, reason, message) => events.push({ type, reason, message }),
    signal: stop.signal,
    logger,
    monotonic: () => nowMs,
  });
  let sandboxes = 0;
  return {
    images,
    runtime,
    logger,
    events,
    reasons,
    fs,
    gc,
    /** Moves the clock to T0 + `minutes`. */
    at(minutes: number) {
      nowMs = T0 + minutes * MIN;
    },
    add(ref: string, extra: Partial<Pick<Image, 'size' | 'pinned'>> = {}): Image {
      return images.addImage(ref, { size: 100, ...extra });
    },
    /** A container (exited unless `running`) created from `ref` (as containerd reports it: the ID). */
    async container(ref: string, running = false): Promise<string> {
      const n = sandboxes++;
      const sb = await runtime.runPodSandbox({
        metadata: { name: `p${n}`, namespace: 'ns', uid: `u${n}`, attempt: 0 },
      });
      const id = await runtime.createContainer(
        sb,
        { metadata: { name: 'c', attempt: 0 }, image: { image: ref } },
        {
          metadata: { name: `p${n}`, namespace: 'ns', uid: `u${n}`, attempt: 0 },
        },
      );
      await runtime.startContainer(id);
      if (!running) runtime.exitContainer(id, 0);
      return id;
    },
    removed: () => images.callsTo('removeImage').map(([spec]) => (spec as { image: string }).image),
  };
}

describe('image GC', () => {
  it('removes nothing while usage is below the high threshold', async () => {
    const env = setup();
    env.add('a:1');
    env.add('b:1');
    env.fs.other = 640; // 84%
    const result = await env.gc.collect();
    assert.equal(result.usagePercent, 84);
    assert.deepEqual(env.removed(), []);
    assert.deepEqual(result.errors, []);
    assert.deepEqual(env.events, []);
  });

  it('frees down to the low threshold, least recently used first', async () => {
    const env = setup();
    const a = env.add('a:1');
    const b = env.add('b:1');
    const c = env.add('c:1');
    const d = env.add('d:1');
    const used = await env.container(a.id);
    assert.equal((await env.gc.collect()).usagePercent, 40); // a marked used at T0
    await env.runtime.removeContainer(used);
    env.at(10);
    env.fs.other = 600; // 100%: 200 bytes to free down to 80%
    const result = await env.gc.collect();
    assert.equal(result.usagePercent, 100);
    assert.equal(result.bytesToFree, 200);
    // b and c were never used; a was used at T0 and is kept; d is not needed.
    assert.deepEqual(env.removed(), [b.id, c.id]);
    assert.deepEqual([...env.images.images.keys()].sort(), [a.id, d.id].sort());
    assert.equal(result.freedBytes, 200);
    assert.deepEqual(result.errors, []);
    assert.deepEqual(env.events, []);
  });

  it('never removes an image in use, the pause image, a pinned image, nor one younger than the minimum age', async () => {
    const env = setup();
    const exited = env.add('exited:1');
    const running = env.add('running:1');
    const pause = env.add(PAUSE);
    env.add('pinned:1', { pinned: true });
    const old = env.add('old:1');
    await env.container(exited.id);
    // Referenced by tag rather than ID: still in use.
    await env.container(running.repoTags[0] ?? '', true);
    await env.gc.collect();
    env.at(1);
    const young = env.add('young:1');
    env.fs.other = 400; // 100%
    const result = await env.gc.collect();
    assert.deepEqual(env.removed(), [old.id]);
    assert.ok(env.images.images.has(pause.id));
    assert.ok(env.images.images.has(young.id));
    assert.equal(result.removedImages, 1);
    // Too young now; once the minimum age has passed it goes.
    env.at(4);
    await env.gc.collect();
    assert.deepEqual(env.removed(), [old.id, young.id]);
  });

  it('goes on to the next image when RemoveImage fails, and logs the failure', async () => {
    const env = setup();
    const a = env.add('a:1');
    const b = env.add('b:1');
    const c = env.add('c:1');
    env.fs.other = 700; // 100%: 200 bytes to free
    env.images.injectError('removeImage', 'UNAVAILABLE', { once: true });
    const result = await env.gc.collect();
    assert.deepEqual(env.removed(), [a.id, b.id, c.id]);
    assert.deepEqual([...env.images.images.keys()], [a.id]);
    assert.equal(result.freedBytes, 200);
    assert.equal(result.errors.length, 1);
    assert.match(result.errors[0] ?? '', /wanted to free 200 bytes, but freed 200 bytes space with errors/);
    assert.ok(env.logger.lines.some((l) => l.level === 'warn' && l.fields['imageID'] === a.id));
    // Upstream records ImageGCFailed only when a second pass in a row fails.
    assert.deepEqual(env.events, []);
    env.images.injectError('removeImage', 'UNAVAILABLE', { once: true });
    env.fs.other = 900;
    await env.gc.collect();
    assert.deepEqual(env.reasons(), ['ImageGCFailed']);
  });

  it('records FreeDiskSpaceFailed on the node when it cannot free enough', async () => {
    const env = setup();
    const a = env.add('a:1');
    env.add('b:1');
    await env.container(a.id, true);
    env.fs.other = 800; // 100%: 200 bytes to free, 100 can be
    const result = await env.gc.collect();
    const message =
      'failed to garbage collect required amount of images. Wanted to free 200 bytes, but freed 100 bytes';
    assert.deepEqual(result.errors, [message]);
    assert.deepEqual(env.events, [{ type: 'Warning', reason: 'FreeDiskSpaceFailed', message }]);
    await env.gc.collect();
    assert.deepEqual(env.reasons(), ['FreeDiskSpaceFailed', 'FreeDiskSpaceFailed', 'ImageGCFailed']);
  });

  it('records InvalidDiskCapacity when the image filesystem reports no capacity', async () => {
    const env = setup();
    env.fs.capacity = 0;
    const result = await env.gc.collect();
    assert.deepEqual(result.errors, ['invalid capacity 0 on image filesystem']);
    assert.deepEqual(env.reasons(), ['InvalidDiskCapacity']);
  });

  it('does nothing at all with a high threshold of 100', async () => {
    const env = setup({ ...POLICY, highThresholdPercent: 100 });
    env.add('a:1');
    env.fs.other = 900;
    const result = await env.gc.collect();
    assert.equal(result.usagePercent, undefined);
    assert.deepEqual(env.images.calls, []);
    assert.deepEqual(env.runtime.calls, []);
    assert.equal(env.fs.measured, 0);
  });

  it('fails the pass (logged) when listing images fails, and removes nothing', async () => {
    const env = setup();
    env.add('a:1');
    env.fs.other = 900;
    env.images.injectError('listImages', 'UNAVAILABLE', { once: true });
    const result = await env.gc.collect();
    assert.equal(result.errors.length, 1);
    assert.deepEqual(env.removed(), []);
    assert.ok(env.logger.lines.some((l) => l.level === 'error'));
  });
});

describe('image filesystem usage', () => {
  const stat = (paths: string[]) => (path: string) => {
    paths.push(path);
    return Promise.resolve({ bsize: 4096, blocks: 100, bavail: 25 });
  };

  it('measures the filesystem CRI ImageFsInfo names', async () => {
    const images = new FakeImageService();
    const paths: string[] = [];
    const usage = createImageFsUsage({
      images,
      fallbackPath: '/var/lib/containerd',
      logger: recordingLogger(),
      callTimeoutMs: 1000,
      statfs: stat(paths),
    });
    assert.deepEqual(await usage(new AbortController().signal), {
      capacityBytes: 409_600,
      availableBytes: 102_400,
    });
    assert.deepEqual(paths, ['/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs']);
  });

  it('measures the configured path when ImageFsInfo fails', async () => {
    const images = new FakeImageService();
    images.injectError('imageFsInfo', 'UNIMPLEMENTED');
    const paths: string[] = [];
    const usage = createImageFsUsage({
      images,
      fallbackPath: '/data/containerd',
      logger: recordingLogger(),
      callTimeoutMs: 1000,
      statfs: stat(paths),
    });
    assert.equal((await usage(new AbortController().signal)).capacityBytes, 409_600);
    assert.deepEqual(paths, ['/data/containerd']);
  });
});

describe('image GC while the wall clock steps', () => {
  for (const stepMs of [-60 * MIN, 120 * MIN]) {
    it(`keeps an image seen after the first pass for imageMinimumGCAge across a ${stepMs / 60 / MIN} h step (default clock)`, async (t) => {
      t.mock.timers.enable({ apis: ['Date'], now: T0 });
      let mono = 10 * MIN;
      t.mock.method(performance, 'now', () => mono);
      const images = new FakeImageService();
      const gc = createImageGC({
        images,
        runtime: new FakeRuntimeService(),
        policy: POLICY,
        sandboxImage: PAUSE,
        imageFsUsage: () => Promise.resolve({ capacityBytes: CAPACITY, availableBytes: 0 }),
        nodeEvent: () => {},
        signal: new AbortController().signal,
        logger: recordingLogger(),
      });
      const old = images.addImage('old:1', { size: 100 });
      await gc.collect(); // present at the first pass: old enough at once
      assert.equal(images.images.has(old.id), false);
      const pulled = images.addImage('pulled:1', { size: 100 });
      await gc.collect(); // first seen now
      t.mock.timers.setTime(Date.now() + stepMs);
      mono += 2 * MIN - 1;
      await gc.collect();
      assert.ok(images.images.has(pulled.id), 'younger than 2 min');
      mono += 1;
      await gc.collect();
      assert.equal(images.images.has(pulled.id), false, 'removed once 2 min old');
    });
  }
});
