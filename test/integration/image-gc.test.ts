/**
 * Image garbage collection on real containerd (src/gc/image-gc.ts, upstream realImageGCManager).
 * The GC is built as the kubelet builds it (managers.ts buildImageGC), on the bed's CRI, with two
 * test seams: a fake image filesystem measurement (ImageFsUsageFn; the bed's disk is nowhere near
 * 85% full) and a test clock. ListImages, ImageStatus, ListContainers and RemoveImage are real.
 *
 * The GC sees only the images this file imports plus the sandbox image: a filtered ListImages keeps
 * it away from the bed's busybox and from images other tests left, which it would otherwise be
 * entitled to remove. Every image this file imports is removed at the end.
 *
 * The steps build on each other (one GC, one record table, as in a kubelet): run them in order.
 * Run under the shared bed lock:
 *   flock /tmp/tskubelet-bed.lock node --test --test-concurrency=1 test/integration/image-gc.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  BUSYBOX_IMAGE,
  PAUSE_IMAGE,
  buildImage,
  removeAllPods,
  startContainerd,
  type ContainerdBed,
} from '../harness/index.ts';
import { run } from '../harness/exec.ts';
import { createCriClient, isCriNotFound, type CriClient } from '../../src/runtime/cri/index.ts';
import type { ContainerConfig, ImageService, PodSandboxConfig } from '../../src/runtime/cri/types.ts';
import { createImageGC, type ImageGC, type ImageGCPassResult } from '../../src/gc/index.ts';
import {
  DEFAULT_IMAGE_GC_HIGH_THRESHOLD_PERCENT,
  DEFAULT_IMAGE_GC_LOW_THRESHOLD_PERCENT,
  DEFAULT_IMAGE_MINIMUM_GC_AGE_MS,
} from '../../src/config/defaults.ts';
import { describeError } from '../../src/util/errors.ts';
import { testLogger } from '../kit/bed.ts';

const MIN = 60_000;
const NAMES = ['running', 'old', 'mid', 'new', 'young'] as const;
type Name = (typeof NAMES)[number];
const ref = (name: Name) => `tskubelet.test/image-gc/${name}:1`;
/** A distinct command per image: a distinct config, so a distinct image ID over the shared layer. */
const spec = (name: Name) => ({ ref: ref(name), cmd: ['sh', '-c', `echo ${name}`] });

describe('image garbage collection on real containerd', () => {
  let bed: ContainerdBed | undefined;
  let cri: CriClient | undefined;
  let logDir = '';
  let sandboxId = '';
  let gc: ImageGC;
  let nowMs = Date.now();
  const T0 = nowMs;
  const at = (minutes: number) => (nowMs = T0 + minutes * MIN);
  /** What the GC is told about its filesystem. */
  const fs = { capacityBytes: 1_000_000, availableBytes: 500_000 };
  const events: { type: string; reason: string; message: string }[] = [];
  /** Image IDs the GC removed, in order. */
  const removed: string[] = [];
  const idOf = new Map<Name, string>();
  const sizeOf = new Map<Name, number>();
  const uid = `image-gc-${process.pid}-${Date.now()}`;
  const sandboxConfig = (): PodSandboxConfig => ({
    metadata: { name: 'image-gc', uid, namespace: 'default', attempt: 0 },
    hostname: 'image-gc',
    logDirectory: logDir,
    labels: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.pod.name': 'image-gc' },
    annotations: {},
    linux: {
      cgroupParent: '',
      securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } },
    },
  });
  const containerConfig = (name: string, image: Name, command: string[]): ContainerConfig => ({
    metadata: { name, attempt: 0 },
    image: { image: ref(image) },
    command,
    labels: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': name },
    annotations: {},
    logPath: `${name}/0.log`,
    linux: { securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
  });
  const client = (): CriClient => {
    assert.ok(cri, 'the CRI client is up');
    return cri;
  };

  async function importImage(name: Name): Promise<void> {
    const built = await buildImage(spec(name));
    assert.ok(bed, 'the bed is up');
    await run('ctr', ['--address', bed.socket, '--namespace', 'k8s.io', 'images', 'import', built.tarPath], {
      timeoutMs: 120_000,
    });
    const img = await client().image.imageStatus({ image: ref(name) });
    assert.ok(img, `${ref(name)} imported`);
    idOf.set(name, img.id);
    sizeOf.set(name, img.size);
  }

  /** Removes a test image if present; NotFound (already collected) is fine. */
  async function removeTestImage(name: Name): Promise<void> {
    try {
      await client().image.removeImage({ image: ref(name) });
    } catch (err) {
      if (!isCriNotFound(err)) throw err;
    }
  }

  /** Test image names present in containerd (through the real, unfiltered ListImages). */
  async function present(): Promise<Set<string>> {
    const tags = new Set((await client().image.listImages()).flatMap((i) => i.repoTags));
    return new Set([
      ...NAMES.filter((n) => tags.has(ref(n))),
      ...[PAUSE_IMAGE, BUSYBOX_IMAGE].filter((r) => tags.has(r)),
    ]);
  }

  const nameOfId = (id: string): string => [...idOf].find(([, v]) => v === id)?.[0] ?? id;

  before(async () => {
    bed = await startContainerd();
    await removeAllPods(bed);
    cri = createCriClient({ endpoint: bed.endpoint });
    logDir = await mkdtemp(join(tmpdir(), 'tskubelet-image-gc-'));
    for (const n of NAMES) await removeTestImage(n); // left by an interrupted run
    for (const n of NAMES) if (n !== 'young') await importImage(n);

    // One pod using the `running` image: its sandbox runs the pause image.
    sandboxId = await cri.runtime.runPodSandbox(sandboxConfig());
    const c = await cri.runtime.createContainer(
      sandboxId,
      containerConfig('app', 'running', ['sleep', '3600']),
      sandboxConfig(),
    );
    await cri.runtime.startContainer(c);

    const real = cri.image;
    const visible = new Set([...NAMES.map(ref), PAUSE_IMAGE]);
    const view: ImageService = {
      listImages: async (filter, opts) =>
        (await real.listImages(filter, opts)).filter((i) => i.repoTags.some((t) => visible.has(t))),
      imageStatus: (image, opts) => real.imageStatus(image, opts),
      pullImage: (image, auth, sandbox, opts) => real.pullImage(image, auth, sandbox, opts),
      removeImage: async (image, opts) => {
        removed.push(image.image);
        await real.removeImage(image, opts);
      },
      imageFsInfo: (opts) => real.imageFsInfo(opts),
    };
    gc = createImageGC({
      images: view,
      runtime: cri.runtime,
      policy: {
        highThresholdPercent: DEFAULT_IMAGE_GC_HIGH_THRESHOLD_PERCENT,
        lowThresholdPercent: DEFAULT_IMAGE_GC_LOW_THRESHOLD_PERCENT,
        minAgeMs: DEFAULT_IMAGE_MINIMUM_GC_AGE_MS,
      },
      sandboxImage: PAUSE_IMAGE,
      imageFsUsage: () => Promise.resolve({ ...fs }),
      nodeEvent: (type, reason, message) => events.push({ type, reason, message }),
      signal: new AbortController().signal,
      logger: testLogger(),
      monotonic: () => nowMs,
    });
  });

  after(async () => {
    const problems: string[] = [];
    const step = async (what: string, fn: () => Promise<unknown>) => {
      try {
        await fn();
      } catch (err) {
        problems.push(`${what}: ${describeError(err)}`);
      }
    };
    if (bed) {
      const b = bed;
      await step('remove pods', () => removeAllPods(b));
    }
    if (cri) for (const n of NAMES) await step(`remove ${ref(n)}`, () => removeTestImage(n));
    cri?.close();
    if (logDir) await step('remove log dir', () => rm(logDir, { recursive: true, force: true }));
    await bed?.stop();
    assert.deepEqual(problems, []);
  });

  /** One pass at the current clock and fake usage. */
  const pass = (): Promise<ImageGCPassResult> => gc.collect();

  it('records the images at its first pass and removes nothing below the high threshold', async () => {
    at(0);
    const r = await pass();
    assert.deepEqual([r.usagePercent, r.bytesToFree, r.removedImages, r.errors], [50, 0, 0, []]);
    assert.deepEqual(removed, []);
  });

  it('marks an image used whenever a container (created, never started) was made from it', async () => {
    for (const [minute, name] of [
      [1, 'old'],
      [2, 'mid'],
      [3, 'new'],
    ] as const) {
      const c = await client().runtime.createContainer(
        sandboxId,
        containerConfig(`use-${name}`, name, ['true']),
        sandboxConfig(),
      );
      at(minute);
      const r = await pass();
      await client().runtime.removeContainer(c);
      assert.deepEqual([r.removedImages, r.errors], [0, []], `pass at minute ${minute}`);
    }
  });

  it('above the high threshold frees down to the low threshold, least recently used first, keeping the images in use and young ones', async () => {
    await importImage('young'); // first seen by the next pass: younger than imageMinimumGCAge
    at(10);
    // Needed: more than `old` alone, no more than `old` and `mid`. Capacity 10× that with that much
    // available is 90% used, and freeing to 80% needs exactly that much.
    const want = (sizeOf.get('old') ?? 0) + 1;
    fs.capacityBytes = 10 * want;
    fs.availableBytes = want;
    const r = await pass();
    assert.deepEqual([r.usagePercent, r.bytesToFree, r.errors], [90, want, []]);
    assert.deepEqual(
      removed.map(nameOfId),
      ['old', 'mid'],
      'least recently used first, stopping once enough is freed',
    );
    assert.equal(r.freedBytes, (sizeOf.get('old') ?? 0) + (sizeOf.get('mid') ?? 0));
    assert.deepEqual(events, []);
    const left = await present();
    for (const kept of ['running', 'new', 'young', PAUSE_IMAGE, BUSYBOX_IMAGE])
      assert.ok(left.has(kept), `${kept} kept`);
    for (const gone of ['old', 'mid']) assert.ok(!left.has(gone), `${gone} removed from containerd`);
    const [app] = await client().runtime.listContainers({
      podSandboxId: sandboxId,
      state: { state: 'CONTAINER_RUNNING' },
    });
    assert.equal(app?.metadata.name, 'app', "the pod's container still runs");
  });

  it('reports FreeDiskSpaceFailed when it cannot free enough, and ImageGCFailed when that fails twice in a row', async () => {
    at(11); // `young` is 1 minute old: still kept
    const want = 10 * [...sizeOf.values()].reduce((a, b) => a + b, 0);
    fs.capacityBytes = 10 * want;
    fs.availableBytes = want;
    removed.length = 0;
    const first = await pass();
    assert.deepEqual(removed.map(nameOfId), ['new'], 'everything it may remove');
    const size = sizeOf.get('new') ?? 0;
    const message = (freed: number) =>
      `failed to garbage collect required amount of images. Wanted to free ${want} bytes, but freed ${freed} bytes`;
    assert.deepEqual(first.errors, [message(size)]);
    assert.deepEqual(events, [{ type: 'Warning', reason: 'FreeDiskSpaceFailed', message: message(size) }]);

    at(11.5);
    const second = await pass();
    assert.equal(second.removedImages, 0);
    assert.deepEqual(
      events.slice(1),
      [
        { type: 'Warning', reason: 'FreeDiskSpaceFailed', message: message(0) },
        { type: 'Warning', reason: 'ImageGCFailed', message: message(0) },
      ],
      'the second failure in a row is an ImageGCFailed event too (upstream: only repeated failures)',
    );
    const left = await present();
    for (const kept of ['running', 'young', PAUSE_IMAGE]) assert.ok(left.has(kept), `${kept} kept`);
  });
});
