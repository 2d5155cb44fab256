import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createRateLimiter, type RateLimiter } from '../../api/rate-limiter.ts';
import { KubeletError } from '../../util/errors.ts';
import { flush } from '../../util/testing.ts';
import type { PullSecret } from './pull-secrets.ts';
import { SANDBOX_CONFIG, dockerSecret, imageContainer, imageManagerSetup, imagePod } from '../testing.ts';

void describe('parallel pulls', () => {
  void it('runs at most maxParallelPulls at once, starting the next when one ends', async () => {
    const s = imageManagerSetup({ maxParallelPulls: 2 });
    const settled = Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((n) =>
        s.manager.ensureImage(imagePod(n, []), imageContainer(`reg.io/${n}:1`), SANDBOX_CONFIG),
      ),
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
    const s = imageManagerSetup({ maxParallelPulls: 1 });
    const results = ['a', 'b'].map((n) =>
      s.manager.ensureImage(imagePod(n, []), imageContainer(`reg.io/${n}:1`), SANDBOX_CONFIG),
    );
    await flush();
    assert.equal(s.images.pulls.length, 1);
    s.images.pulls[0]?.result.resolve('sha256:a');
    await flush();
    assert.equal(s.images.pulls.length, 2);
    s.images.pulls[1]?.result.resolve('sha256:b');
    await Promise.all(results);
  });

  void it('lets a waiter give up its place in the queue', async () => {
    const s = imageManagerSetup({ maxParallelPulls: 1 });
    const first = s.manager.ensureImage(imagePod('a', []), imageContainer('reg.io/a:1'), SANDBOX_CONFIG);
    const ac = new AbortController();
    const second = s.manager.ensureImage(
      imagePod('b', []),
      imageContainer('reg.io/b:1'),
      SANDBOX_CONFIG,
      ac.signal,
    );
    const third = s.manager.ensureImage(imagePod('c', []), imageContainer('reg.io/c:1'), SANDBOX_CONFIG);
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
    const s = imageManagerSetup({ maxParallelPulls: Infinity });
    const results = ['a', 'b', 'c', 'd', 'e', 'f'].map((n) =>
      s.manager.ensureImage(imagePod(n, []), imageContainer(`reg.io/${n}:1`), SANDBOX_CONFIG),
    );
    await flush();
    assert.equal(s.images.pulls.length, 6);
    for (const c of s.images.pulls) c.result.resolve('sha256:x');
    await Promise.all(results);
  });

  void it('rejects a maxParallelPulls below 1', () => {
    assert.throws(() => imageManagerSetup({ maxParallelPulls: 0 }), KubeletError);
  });

  void it('shares one pull between pods pulling the same image with the same credentials', async () => {
    const s = imageManagerSetup();
    const a = s.manager.ensureImage(imagePod('a', []), imageContainer('reg.io/app:1'), SANDBOX_CONFIG);
    const b = s.manager.ensureImage(imagePod('b', []), imageContainer('reg.io/app:1'), SANDBOX_CONFIG);
    await flush();
    assert.equal(s.images.pulls.length, 1);
    s.images.pulls[0]?.result.resolve('sha256:shared');
    assert.deepEqual(await Promise.all([a, b]), ['sha256:shared', 'sha256:shared']);
    assert.deepEqual(
      s.events.filter((e) => e.reason === 'Pulled').map((e) => e.pod),
      ['ns/a', 'ns/b'],
    );
    // Once done, a later pull is a new one.
    const c = s.manager.ensureImage(
      imagePod('c', []),
      imageContainer('reg.io/app:1', 'Always'),
      SANDBOX_CONFIG,
    );
    await flush();
    assert.equal(s.images.pulls.length, 2);
    s.images.pulls[1]?.result.resolve('sha256:again');
    assert.equal(await c, 'sha256:again');
  });

  void it('does not share a pull between pods with different credentials', async () => {
    const byPod: Record<string, PullSecret[]> = {
      a: [dockerSecret('a', { 'reg.io': { username: 'alice', password: 'x' } })],
      b: [dockerSecret('b', { 'reg.io': { username: 'bob', password: 'y' } })],
    };
    const s = imageManagerSetup({ pullSecrets: (p) => Promise.resolve(byPod[p.metadata.name ?? ''] ?? []) });
    const a = s.manager.ensureImage(imagePod('a', [], ['a']), imageContainer('reg.io/app:1'), SANDBOX_CONFIG);
    const b = s.manager.ensureImage(imagePod('b', [], ['b']), imageContainer('reg.io/app:1'), SANDBOX_CONFIG);
    await flush();
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth?.username),
      ['alice', 'bob'],
    );
    for (const c of s.images.pulls) c.result.resolve('sha256:x');
    await Promise.all([a, b]);
  });

  void it('keeps a shared pull going for the pods still waiting when one gives up, and stops it when all do', async () => {
    const s = imageManagerSetup();
    const acA = new AbortController();
    const acB = new AbortController();
    const a = s.manager.ensureImage(
      imagePod('a', []),
      imageContainer('reg.io/app:1'),
      SANDBOX_CONFIG,
      acA.signal,
    );
    const b = s.manager.ensureImage(
      imagePod('b', []),
      imageContainer('reg.io/app:1'),
      SANDBOX_CONFIG,
      acB.signal,
    );
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
    const s = imageManagerSetup({ rateLimiter: limiter });
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
      s.manager.ensureImage(imagePod(n, []), imageContainer(`reg.io/${n}:1`), SANDBOX_CONFIG),
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
    const s = imageManagerSetup({ rateLimiter: undefined, registryPullQPS: 1, registryBurst: 0 });
    s.images.answer(() => 'sha256:ok');
    assert.equal(
      await s.manager.ensureImage(imagePod('p', []), imageContainer('reg.io/a:1'), SANDBOX_CONFIG),
      'sha256:ok',
    );
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
    const s = imageManagerSetup({
      rateLimiter: counting,
      pullSecrets: () =>
        Promise.resolve([
          dockerSecret('a', { 'reg.io': { username: 'one', password: 'x' } }),
          dockerSecret('b', { 'reg.io': { username: 'two', password: 'y' } }),
        ]),
    });
    s.images.answer((_img, auth) => {
      if (auth?.username === 'one') throw new Error('401');
      return 'sha256:ok';
    });
    await s.manager.ensureImage(
      imagePod('p', [], ['a', 'b']),
      imageContainer('reg.io/app:1'),
      SANDBOX_CONFIG,
    );
    assert.equal(s.images.pulls.length, 2);
    assert.equal(acquired, 1);
  });
});
