import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Container, KubeletPod, PullPolicy } from '../api/types.ts';
import { createMemoryRecorder } from '../api/events.ts';
import { createRateLimiter, type RateLimiter } from '../api/rate-limiter.ts';
import { deferred, type Deferred } from '../api/testing.ts';
import type {
  AuthConfig,
  CallOptions,
  Image,
  ImageService,
  ImageSpec,
  PodSandboxConfig,
} from './cri/types.ts';
import {
  ImageError,
  createImageManager,
  defaultPullPolicyFor,
  formatGoDuration,
  hasPinnedTag,
  parseImageReference,
  shouldPullImage,
  type ImageManagerDeps,
} from './image-manager.ts';
import {
  DOCKER_CONFIG_JSON_KEY,
  SECRET_TYPE_DOCKER_CONFIG_JSON,
  keyringFromEntries,
  type Keyring,
  type PullSecret,
} from './pull-secrets.ts';
import { KubeletError } from '../util/errors.ts';
import { flush } from '../util/testing.ts';

const SANDBOX: PodSandboxConfig = { metadata: { name: 'p', uid: 'u', namespace: 'ns', attempt: 0 } };

interface PullCall {
  image: string;
  auth: AuthConfig | undefined;
  signal: AbortSignal | undefined;
  result: Deferred<string>;
}

/**
 * An ImageService whose store is a set of references. pullImage either answers at once through
 * `onPull` or, without it, parks the call in `pulls` for the test to settle.
 */
function fakeImages() {
  const present = new Set<string>();
  const pulls: PullCall[] = [];
  const statusCalls: string[] = [];
  let statusError: Error | undefined;
  let onPull: ((image: string, auth: AuthConfig | undefined) => string) | undefined;
  const svc: ImageService = {
    listImages: () => Promise.resolve([]),
    imageStatus(spec: ImageSpec): Promise<Image | null> {
      statusCalls.push(spec.image);
      if (statusError) return Promise.reject(statusError);
      if (!present.has(spec.image)) return Promise.resolve(null);
      return Promise.resolve({
        id: `sha256:id-of-${spec.image}`,
        repoTags: [spec.image],
        repoDigests: [],
        size: 1,
        username: '',
      });
    },
    pullImage(
      spec: ImageSpec,
      auth?: AuthConfig,
      _sb?: PodSandboxConfig,
      opts?: CallOptions,
    ): Promise<string> {
      const call: PullCall = { image: spec.image, auth, signal: opts?.signal, result: deferred<string>() };
      pulls.push(call);
      opts?.signal?.addEventListener('abort', () => call.result.reject(opts.signal?.reason), { once: true });
      if (onPull) {
        try {
          const ref = onPull(spec.image, auth);
          present.add(spec.image);
          call.result.resolve(ref);
        } catch (err) {
          call.result.reject(err);
        }
      }
      return call.result.promise;
    },
    removeImage: () => Promise.resolve(),
    imageFsInfo: () => Promise.resolve([]),
  };
  return {
    svc,
    present,
    pulls,
    statusCalls,
    failStatus(err: Error) {
      statusError = err;
    },
    answer(fn: (image: string, auth: AuthConfig | undefined) => string) {
      onPull = fn;
    },
  };
}

function pod(name: string, containers: Container[], pullSecrets?: string[]): KubeletPod {
  const p: KubeletPod = { metadata: { name, namespace: 'ns', uid: `uid-${name}` }, spec: { containers } };
  if (pullSecrets) p.spec.imagePullSecrets = pullSecrets.map((n) => ({ name: n }));
  return p;
}

function ctr(image: string, imagePullPolicy?: PullPolicy): Container {
  const c: Container = { name: 'app', image };
  if (imagePullPolicy) c.imagePullPolicy = imagePullPolicy;
  return c;
}

function secret(name: string, auths: Record<string, { username: string; password: string }>): PullSecret {
  return {
    metadata: { name, namespace: 'ns' },
    type: SECRET_TYPE_DOCKER_CONFIG_JSON,
    data: { [DOCKER_CONFIG_JSON_KEY]: Buffer.from(JSON.stringify({ auths })).toString('base64') },
  };
}

function setup(overrides: Partial<ImageManagerDeps> = {}) {
  const images = fakeImages();
  const recorder = createMemoryRecorder();
  let nowMs = 1_000_000;
  const unlimited: RateLimiter = { acquire: () => Promise.resolve(), waiting: () => 0 };
  const manager = createImageManager({
    images: images.svc,
    recorder,
    now: () => nowMs,
    rateLimiter: unlimited,
    ...overrides,
  });
  return {
    images,
    manager,
    reasons: () => recorder.events.map((e) => e.reason),
    events: recorder.events,
    advance(ms: number) {
      nowMs += ms;
    },
  };
}

/** The ImageError reason ensureImage rejects with (fails the test if it resolves). */
async function reasonOf(p: Promise<string>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ImageError, `expected an ImageError, got ${String(err)}`);
    return err.reason;
  }
  assert.fail('ensureImage resolved');
}

void describe('image references', () => {
  const table: [string, { repository: string; tag?: string; digest?: string }][] = [
    ['busybox', { repository: 'docker.io/library/busybox' }],
    ['busybox:1.29', { repository: 'docker.io/library/busybox', tag: '1.29' }],
    ['docker.io/library/busybox:1.29', { repository: 'docker.io/library/busybox', tag: '1.29' }],
    ['index.docker.io/team/app', { repository: 'docker.io/team/app' }],
    ['team/app:v1', { repository: 'docker.io/team/app', tag: 'v1' }],
    ['localhost/app', { repository: 'localhost/app' }],
    ['localhost:5000/app:x', { repository: 'localhost:5000/app', tag: 'x' }],
    [
      '127.0.0.1:5000/tskubelet/busybox:pulltest',
      { repository: '127.0.0.1:5000/tskubelet/busybox', tag: 'pulltest' },
    ],
    ['Registry.Example.com/a/b', { repository: 'Registry.Example.com/a/b' }],
    // An upper-case first component can only be a registry host (newer docker/distribution).
    ['Team/app', { repository: 'Team/app' }],
    [
      `app@sha256:${'a'.repeat(64)}`,
      { repository: 'docker.io/library/app', digest: `sha256:${'a'.repeat(64)}` },
    ],
    [
      `quay.io/app:v2@sha256:${'b'.repeat(64)}`,
      { repository: 'quay.io/app', tag: 'v2', digest: `sha256:${'b'.repeat(64)}` },
    ],
  ];
  for (const [image, want] of table) {
    void it(`parses ${image}`, () => {
      const ref = parseImageReference(image);
      assert.equal(ref.repository, want.repository);
      assert.equal(ref.tag, want.tag);
      assert.equal(ref.digest, want.digest);
    });
  }

  const invalid = ['', 'a b', 'team/App', 'app:', 'app:bad/tag', 'app@sha256:abc', '-app', 'a'.repeat(64)];
  for (const image of invalid) {
    void it(`rejects ${JSON.stringify(image)}`, () => {
      assert.throws(() => parseImageReference(image));
    });
  }

  void it('defaults the pull policy as the API server does', () => {
    const policy = (image: string) => defaultPullPolicyFor(parseImageReference(image));
    assert.equal(policy('busybox'), 'Always');
    assert.equal(policy('busybox:latest'), 'Always');
    assert.equal(policy('busybox:1.29'), 'IfNotPresent');
    assert.equal(policy(`busybox@sha256:${'c'.repeat(64)}`), 'IfNotPresent');
    assert.equal(policy(`busybox:latest@sha256:${'c'.repeat(64)}`), 'Always');
    assert.equal(hasPinnedTag('docker.io/library/busybox:1.29'), true);
    assert.equal(hasPinnedTag('busybox'), false);
  });

  void it('formats durations as Go does', () => {
    assert.equal(formatGoDuration(0), '0s');
    assert.equal(formatGoDuration(0.5), '500µs');
    assert.equal(formatGoDuration(81), '81ms');
    assert.equal(formatGoDuration(81.25), '81.25ms');
    assert.equal(formatGoDuration(1234), '1.234s');
    assert.equal(formatGoDuration(2000), '2s');
    assert.equal(formatGoDuration(61_500), '1m1.5s');
    assert.equal(formatGoDuration(3_600_000), '1h0m0s');
  });
});

void describe('pull policy', () => {
  const table: [PullPolicy, boolean, boolean][] = [
    ['Always', true, true],
    ['Always', false, true],
    ['IfNotPresent', true, false],
    ['IfNotPresent', false, true],
    ['Never', true, false],
    ['Never', false, false],
  ];
  for (const [policy, present, pulls] of table) {
    void it(`${policy} with the image ${present ? 'present' : 'missing'} ${pulls ? 'pulls' : 'does not pull'}`, async () => {
      assert.equal(shouldPullImage(policy, present), pulls);
      const s = setup();
      s.images.answer(() => 'sha256:pulled');
      if (present) s.images.present.add('reg.io/app:1');
      const result = s.manager.ensureImage(pod('p', []), ctr('reg.io/app:1', policy), SANDBOX);
      if (policy === 'Never' && !present) {
        assert.equal(await reasonOf(result), 'ErrImageNeverPull');
        assert.deepEqual(s.reasons(), ['ErrImageNeverPull']);
        assert.match(s.events[0]?.message ?? '', /is not present with pull policy of Never/);
      } else if (pulls) {
        assert.equal(await result, 'sha256:pulled');
        assert.deepEqual(s.reasons(), ['Pulling', 'Pulled']);
        assert.match(s.events[1]?.message ?? '', /^Successfully pulled image "reg\.io\/app:1" in \d/);
      } else {
        assert.equal(await result, 'sha256:id-of-reg.io/app:1');
        assert.deepEqual(s.reasons(), ['Pulled']);
        assert.equal(s.events[0]?.message, 'Container image "reg.io/app:1" already present on machine');
      }
      assert.equal(s.images.pulls.length, pulls ? 1 : 0);
    });
  }

  void it('an image without a tag is looked up and pulled as :latest, and defaults to Always', async () => {
    const s = setup();
    s.images.answer(() => 'sha256:x');
    s.images.present.add('busybox:latest');
    await s.manager.ensureImage(pod('p', []), ctr('busybox'), SANDBOX);
    assert.deepEqual(s.images.statusCalls, ['busybox:latest']);
    assert.deepEqual(
      s.images.pulls.map((c) => c.image),
      ['busybox:latest'],
    );
  });

  void it('reports an invalid reference as InvalidImageName without asking the runtime', async () => {
    const s = setup();
    assert.equal(
      await reasonOf(s.manager.ensureImage(pod('p', []), ctr('Bad/Name'), SANDBOX)),
      'InvalidImageName',
    );
    assert.deepEqual(s.reasons(), ['InspectFailed']);
    assert.match(
      s.events[0]?.message ?? '',
      /^Failed to apply default image tag "Bad\/Name": couldn't parse/,
    );
    assert.equal(s.images.statusCalls.length, 0);
  });

  void it('reports a failing ImageStatus as ImageInspectError', async () => {
    const s = setup();
    s.images.failStatus(new KubeletError('Unavailable', 'CRI ImageStatus', 'connection refused'));
    assert.equal(
      await reasonOf(s.manager.ensureImage(pod('p', []), ctr('a:1'), SANDBOX)),
      'ImageInspectError',
    );
    assert.deepEqual(s.reasons(), ['InspectFailed']);
  });
});

void describe('pull back-off', () => {
  void it('goes ErrImagePull, then ImagePullBackOff while in the window, doubling after each failure', async () => {
    const s = setup();
    s.images.answer(() => {
      throw new KubeletError('NotFound', 'CRI PullImage', 'not found');
    });
    const ensure = () => s.manager.ensureImage(pod('p', []), ctr('reg.io/app:1'), SANDBOX);

    assert.equal(await reasonOf(ensure()), 'ErrImagePull');
    assert.deepEqual(s.reasons(), ['Pulling', 'Failed']);
    assert.equal(s.events[1]?.message, 'Failed to pull image "reg.io/app:1": CRI PullImage: not found');

    s.advance(9_999);
    assert.equal(await reasonOf(ensure()), 'ImagePullBackOff');
    assert.equal(s.events.at(-1)?.reason, 'BackOff');
    assert.equal(s.events.at(-1)?.message, 'Back-off pulling image "reg.io/app:1"');
    assert.equal(s.images.pulls.length, 1);

    s.advance(1); // 10 s after the failure: the window (10 s) is over
    assert.equal(await reasonOf(ensure()), 'ErrImagePull');
    assert.equal(s.images.pulls.length, 2);

    s.advance(19_999); // the window is now 20 s
    assert.equal(await reasonOf(ensure()), 'ImagePullBackOff');
    s.advance(1);
    s.images.answer(() => 'sha256:ok');
    assert.equal(await ensure(), 'sha256:ok');
    assert.equal(s.images.pulls.length, 3);
  });

  void it('keeps back-off per pod: another pod pulling the same image is not held back', async () => {
    const s = setup();
    s.images.answer(() => {
      throw new Error('boom');
    });
    assert.equal(
      await reasonOf(s.manager.ensureImage(pod('a', []), ctr('reg.io/app:1'), SANDBOX)),
      'ErrImagePull',
    );
    assert.equal(
      await reasonOf(s.manager.ensureImage(pod('b', []), ctr('reg.io/app:1'), SANDBOX)),
      'ErrImagePull',
    );
    assert.equal(s.images.pulls.length, 2);
  });

  void it('does not back off, record Failed or wrap the error when the caller aborts', async () => {
    const s = setup();
    const ac = new AbortController();
    const p = s.manager.ensureImage(pod('p', []), ctr('reg.io/app:1'), SANDBOX, ac.signal);
    await flush();
    const reason = new KubeletError('Canceled', 'sync pod', 'pod terminating');
    ac.abort(reason);
    await assert.rejects(p, (err: unknown) => err === reason);
    assert.deepEqual(s.reasons(), ['Pulling']);
    assert.equal(s.images.pulls[0]?.signal?.aborted, true, 'the abandoned pull is cancelled');
    s.images.answer(() => 'sha256:ok');
    assert.equal(await s.manager.ensureImage(pod('p', []), ctr('reg.io/app:1'), SANDBOX), 'sha256:ok');
  });

  void it('bounds a pull that never answers with the pull timeout', async () => {
    const s = setup({ pullTimeoutMs: 5 });
    const err = await s.manager
      .ensureImage(pod('p', []), ctr('reg.io/app:1'), SANDBOX)
      .catch((e: unknown) => e);
    assert.ok(err instanceof ImageError);
    assert.equal(err.reason, 'ErrImagePull');
    assert.match(err.message, /no result within 5 ms/);
  });
});

void describe('pull secrets', () => {
  const image = '127.0.0.1:5001/team/app:1';

  void it('pulls with the matching credential as CRI AuthConfig', async () => {
    const asked: string[] = [];
    const s = setup({
      pullSecrets: (p) => {
        asked.push(p.metadata.name ?? '');
        return Promise.resolve([
          secret('other', { 'quay.io': { username: 'q', password: 'q' } }),
          secret('mine', { '127.0.0.1:5001': { username: 'bed', password: 's3cret' } }),
        ]);
      },
    });
    s.images.answer(() => 'sha256:ok');
    await s.manager.ensureImage(pod('p', [], ['other', 'mine']), ctr(image), SANDBOX);
    assert.deepEqual(asked, ['p']);
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [{ username: 'bed', password: 's3cret' }],
    );
  });

  void it('tries each matching credential in turn until one works', async () => {
    const s = setup({
      pullSecrets: () =>
        Promise.resolve([
          secret('a', { '127.0.0.1:5001': { username: 'old', password: 'x' } }),
          secret('b', { '127.0.0.1:5001/team': { username: 'team', password: 'y' } }),
          secret('c', { '127.0.0.1:5001': { username: 'new', password: 'z' } }),
        ]),
    });
    s.images.answer((_img, auth) => {
      if (auth?.username !== 'new') throw new KubeletError('Unknown', 'CRI PullImage', '401 Unauthorized');
      return 'sha256:ok';
    });
    assert.equal(
      await s.manager.ensureImage(pod('p', [], ['a', 'b', 'c']), ctr(image), SANDBOX),
      'sha256:ok',
    );
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth?.username),
      ['team', 'old', 'new'],
    );
  });

  void it('fails with every attempt in the message when no credential works, and never goes anonymous', async () => {
    const s = setup({
      pullSecrets: () =>
        Promise.resolve([
          secret('a', { '127.0.0.1:5001': { username: 'one', password: 'x' } }),
          secret('b', { '127.0.0.1:5001': { username: 'two', password: 'y' } }),
        ]),
    });
    s.images.answer((_img, auth) => {
      throw new Error(`401 for ${auth?.username ?? 'anonymous'}`);
    });
    const err = await s.manager
      .ensureImage(pod('p', [], ['a', 'b']), ctr(image), SANDBOX)
      .catch((e: unknown) => e);
    assert.ok(err instanceof ImageError && err.reason === 'ErrImagePull');
    assert.match(err.message, /\[401 for one, 401 for two\]/);
    assert.equal(s.images.pulls.length, 2);
  });

  void it('pulls anonymously when no secret matches the registry', async () => {
    const s = setup({
      pullSecrets: () => Promise.resolve([secret('q', { 'quay.io': { username: 'q', password: 'q' } })]),
    });
    s.images.answer(() => 'sha256:ok');
    await s.manager.ensureImage(pod('p', [], ['q']), ctr(image), SANDBOX);
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [undefined],
    );
  });

  void it('does not ask for secrets when the pod names none', async () => {
    let asked = 0;
    const s = setup({
      pullSecrets: () => {
        asked++;
        return Promise.resolve([]);
      },
    });
    s.images.answer(() => 'sha256:ok');
    await s.manager.ensureImage(pod('p', []), ctr(image), SANDBOX);
    assert.equal(asked, 0);
  });

  void it('pulls without secrets when they cannot be read', async () => {
    const s = setup({
      pullSecrets: () => Promise.reject(new KubeletError('Unavailable', 'GET secret', 'down')),
    });
    s.images.answer(() => 'sha256:ok');
    assert.equal(await s.manager.ensureImage(pod('p', [], ['a']), ctr(image), SANDBOX), 'sha256:ok');
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [undefined],
    );
  });

  void it('fails the pull (ErrImagePull, back-off) on a secret that does not parse', async () => {
    const bad: PullSecret = {
      metadata: { name: 'bad', namespace: 'ns' },
      type: SECRET_TYPE_DOCKER_CONFIG_JSON,
      data: { [DOCKER_CONFIG_JSON_KEY]: Buffer.from('{oops').toString('base64') },
    };
    const s = setup({ pullSecrets: () => Promise.resolve([bad]) });
    const err = await s.manager
      .ensureImage(pod('p', [], ['bad']), ctr(image), SANDBOX)
      .catch((e: unknown) => e);
    assert.ok(err instanceof ImageError && err.reason === 'ErrImagePull');
    assert.match(err.message, /ns\/bad/);
    assert.equal(s.images.pulls.length, 0);
    assert.equal(
      await reasonOf(s.manager.ensureImage(pod('p', [], ['bad']), ctr(image), SANDBOX)),
      'ImagePullBackOff',
    );
  });
});

void describe('node credentials', () => {
  const image = '127.0.0.1:5001/team/app:1';
  const nodeKeyring = (entries: Record<string, string>): Keyring =>
    keyringFromEntries(
      Object.entries(entries).map(([loc, user]) => [
        loc,
        { username: user, password: `${user}-pw`, source: '/var/lib/kubelet/config.json' },
      ]),
    );

  void it('pulls with the node credentials when the pod has no pull secrets', async () => {
    let asked = 0;
    const s = setup({
      nodeCredentials: () => {
        asked++;
        return Promise.resolve(nodeKeyring({ '127.0.0.1:5001': 'node' }));
      },
    });
    s.images.answer(() => 'sha256:ok');
    await s.manager.ensureImage(pod('p', []), ctr(image), SANDBOX);
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [{ username: 'node', password: 'node-pw' }],
    );
    assert.equal(asked, 1);
  });

  void it('tries the pod secrets first, then the node credentials', async () => {
    const s = setup({
      pullSecrets: () =>
        Promise.resolve([secret('mine', { '127.0.0.1:5001': { username: 'pod', password: 'x' } })]),
      nodeCredentials: () => Promise.resolve(nodeKeyring({ '127.0.0.1:5001': 'node' })),
    });
    s.images.answer((_img, auth) => {
      if (auth?.username !== 'node') throw new Error('401 Unauthorized');
      return 'sha256:ok';
    });
    assert.equal(await s.manager.ensureImage(pod('p', [], ['mine']), ctr(image), SANDBOX), 'sha256:ok');
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth?.username),
      ['pod', 'node'],
    );
  });

  void it('does not read the node credentials for an image already present', async () => {
    let asked = 0;
    const s = setup({
      nodeCredentials: () => {
        asked++;
        return Promise.resolve(nodeKeyring({}));
      },
    });
    s.images.present.add(image);
    await s.manager.ensureImage(pod('p', []), ctr(image), SANDBOX);
    assert.equal(asked, 0);
  });

  void it('pulls with the pod secrets only when the node credentials cannot be read', async () => {
    const s = setup({ nodeCredentials: () => Promise.reject(new Error('EACCES')) });
    s.images.answer(() => 'sha256:ok');
    assert.equal(await s.manager.ensureImage(pod('p', []), ctr(image), SANDBOX), 'sha256:ok');
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [undefined],
    );
  });

  void it('ignores node credentials for other registries', async () => {
    const s = setup({ nodeCredentials: () => Promise.resolve(nodeKeyring({ 'quay.io': 'node' })) });
    s.images.answer(() => 'sha256:ok');
    await s.manager.ensureImage(pod('p', []), ctr(image), SANDBOX);
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [undefined],
    );
  });
});

void describe('parallel pulls', () => {
  void it('runs at most maxParallelPulls at once, starting the next when one ends', async () => {
    const s = setup({ maxParallelPulls: 2 });
    const settled = Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((n) => s.manager.ensureImage(pod(n, []), ctr(`reg.io/${n}:1`), SANDBOX)),
    );
    await flush();
    assert.deepEqual(
      s.images.pulls.map((c) => c.image),
      ['reg.io/a:1', 'reg.io/b:1'],
    );
    s.images.pulls[1]?.result.resolve('sha256:b');
    await flush();
    assert.deepEqual(
      s.images.pulls.map((c) => c.image),
      ['reg.io/a:1', 'reg.io/b:1', 'reg.io/c:1'],
    );
    s.images.pulls[0]?.result.reject(new Error('a failed'));
    await flush();
    assert.equal(s.images.pulls.length, 4);
    s.images.pulls[2]?.result.resolve('sha256:c');
    s.images.pulls[3]?.result.resolve('sha256:d');
    assert.deepEqual(
      (await settled).map((r) => r.status),
      ['rejected', 'fulfilled', 'fulfilled', 'fulfilled'],
    );
  });

  void it('serializes pulls with maxParallelPulls 1 (serializeImagePulls)', async () => {
    const s = setup({ maxParallelPulls: 1 });
    const results = ['a', 'b'].map((n) => s.manager.ensureImage(pod(n, []), ctr(`reg.io/${n}:1`), SANDBOX));
    await flush();
    assert.equal(s.images.pulls.length, 1);
    s.images.pulls[0]?.result.resolve('sha256:a');
    await flush();
    assert.equal(s.images.pulls.length, 2);
    s.images.pulls[1]?.result.resolve('sha256:b');
    await Promise.all(results);
  });

  void it('lets a waiter give up its place in the queue', async () => {
    const s = setup({ maxParallelPulls: 1 });
    const first = s.manager.ensureImage(pod('a', []), ctr('reg.io/a:1'), SANDBOX);
    const ac = new AbortController();
    const second = s.manager.ensureImage(pod('b', []), ctr('reg.io/b:1'), SANDBOX, ac.signal);
    const third = s.manager.ensureImage(pod('c', []), ctr('reg.io/c:1'), SANDBOX);
    await flush();
    ac.abort(new KubeletError('Canceled', 'test', 'gone'));
    await assert.rejects(second, KubeletError);
    s.images.pulls[0]?.result.resolve('sha256:a');
    await flush();
    assert.deepEqual(
      s.images.pulls.map((c) => c.image),
      ['reg.io/a:1', 'reg.io/c:1'],
    );
    s.images.pulls[1]?.result.resolve('sha256:c');
    await Promise.all([first, third]);
  });

  void it('runs every pull at once with maxParallelPulls Infinity (serializeImagePulls false)', async () => {
    const s = setup({ maxParallelPulls: Infinity });
    const results = ['a', 'b', 'c', 'd', 'e', 'f'].map((n) =>
      s.manager.ensureImage(pod(n, []), ctr(`reg.io/${n}:1`), SANDBOX),
    );
    await flush();
    assert.equal(s.images.pulls.length, 6);
    for (const c of s.images.pulls) c.result.resolve('sha256:x');
    await Promise.all(results);
  });

  void it('rejects a maxParallelPulls below 1', () => {
    assert.throws(() => setup({ maxParallelPulls: 0 }), KubeletError);
  });

  void it('shares one pull between pods pulling the same image with the same credentials', async () => {
    const s = setup();
    const a = s.manager.ensureImage(pod('a', []), ctr('reg.io/app:1'), SANDBOX);
    const b = s.manager.ensureImage(pod('b', []), ctr('reg.io/app:1'), SANDBOX);
    await flush();
    assert.equal(s.images.pulls.length, 1);
    s.images.pulls[0]?.result.resolve('sha256:shared');
    assert.deepEqual(await Promise.all([a, b]), ['sha256:shared', 'sha256:shared']);
    assert.deepEqual(
      s.events.filter((e) => e.reason === 'Pulled').map((e) => e.pod),
      ['ns/a', 'ns/b'],
    );
    // Once done, a later pull is a new one.
    const c = s.manager.ensureImage(pod('c', []), ctr('reg.io/app:1', 'Always'), SANDBOX);
    await flush();
    assert.equal(s.images.pulls.length, 2);
    s.images.pulls[1]?.result.resolve('sha256:again');
    assert.equal(await c, 'sha256:again');
  });

  void it('does not share a pull between pods with different credentials', async () => {
    const byPod: Record<string, PullSecret[]> = {
      a: [secret('a', { 'reg.io': { username: 'alice', password: 'x' } })],
      b: [secret('b', { 'reg.io': { username: 'bob', password: 'y' } })],
    };
    const s = setup({ pullSecrets: (p) => Promise.resolve(byPod[p.metadata.name ?? ''] ?? []) });
    const a = s.manager.ensureImage(pod('a', [], ['a']), ctr('reg.io/app:1'), SANDBOX);
    const b = s.manager.ensureImage(pod('b', [], ['b']), ctr('reg.io/app:1'), SANDBOX);
    await flush();
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth?.username),
      ['alice', 'bob'],
    );
    for (const c of s.images.pulls) c.result.resolve('sha256:x');
    await Promise.all([a, b]);
  });

  void it('keeps a shared pull going for the pods still waiting when one gives up, and stops it when all do', async () => {
    const s = setup();
    const acA = new AbortController();
    const acB = new AbortController();
    const a = s.manager.ensureImage(pod('a', []), ctr('reg.io/app:1'), SANDBOX, acA.signal);
    const b = s.manager.ensureImage(pod('b', []), ctr('reg.io/app:1'), SANDBOX, acB.signal);
    await flush();
    const pull = s.images.pulls[0];
    acA.abort(new KubeletError('Canceled', 'test', 'a gone'));
    await assert.rejects(a, KubeletError);
    assert.equal(pull?.signal?.aborted, false);
    acB.abort(new KubeletError('Canceled', 'test', 'b gone'));
    await assert.rejects(b, KubeletError);
    assert.equal(pull?.signal?.aborted, true);
    assert.equal(s.images.pulls.length, 1);
  });
});

void describe('registry pull rate limit', () => {
  /** setTimeout is mocked and `now` moves with it, so the bucket runs on fake time only. */
  function limited(t: TestContext, qps: number, burst: number) {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let nowMs = 0;
    const limiter = createRateLimiter(qps, burst, () => nowMs);
    const s = setup({ rateLimiter: limiter });
    return {
      ...s,
      async advance(ms: number) {
        nowMs += ms;
        t.mock.timers.tick(ms);
        await flush();
      },
    };
  }

  void it('lets a burst through and holds the rest to the QPS', async (t) => {
    const s = limited(t, 1, 2);
    s.images.answer((img) => `sha256:${img}`);
    const results = ['a', 'b', 'c'].map((n) =>
      s.manager.ensureImage(pod(n, []), ctr(`reg.io/${n}:1`), SANDBOX),
    );
    await flush();
    assert.equal(s.images.pulls.length, 2);
    await s.advance(999);
    assert.equal(s.images.pulls.length, 2);
    await s.advance(1);
    assert.equal(s.images.pulls.length, 3);
    await Promise.all(results);
  });

  void it('takes a registryBurst of 0 as 1, so pulls still go (upstream would refuse them all)', async () => {
    const s = setup({ rateLimiter: undefined, registryPullQPS: 1, registryBurst: 0 });
    s.images.answer(() => 'sha256:ok');
    assert.equal(await s.manager.ensureImage(pod('p', []), ctr('reg.io/a:1'), SANDBOX), 'sha256:ok');
  });

  void it('takes one token per pull, however many credentials it tries', async () => {
    let acquired = 0;
    const counting: RateLimiter = {
      acquire: () => {
        acquired++;
        return Promise.resolve();
      },
      waiting: () => 0,
    };
    const s = setup({
      rateLimiter: counting,
      pullSecrets: () =>
        Promise.resolve([
          secret('a', { 'reg.io': { username: 'one', password: 'x' } }),
          secret('b', { 'reg.io': { username: 'two', password: 'y' } }),
        ]),
    });
    s.images.answer((_img, auth) => {
      if (auth?.username === 'one') throw new Error('401');
      return 'sha256:ok';
    });
    await s.manager.ensureImage(pod('p', [], ['a', 'b']), ctr('reg.io/app:1'), SANDBOX);
    assert.equal(s.images.pulls.length, 2);
    assert.equal(acquired, 1);
  });
});
