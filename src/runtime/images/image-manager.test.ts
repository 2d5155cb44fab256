import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PullPolicy } from '../../api/types.ts';
import { KubeletError } from '../../util/errors.ts';
import { flush } from '../../util/testing.ts';
import { ImageError, shouldPullImage } from './image-manager.ts';
import { SANDBOX_CONFIG, imageContainer, imageErrorReason, imageManagerSetup, imagePod } from '../testing.ts';

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
      const s = imageManagerSetup();
      s.images.answer(() => 'sha256:pulled');
      if (present) s.images.present.add('reg.io/app:1');
      const result = s.manager.ensureImage(
        imagePod('p', []),
        imageContainer('reg.io/app:1', policy),
        SANDBOX_CONFIG,
      );
      if (policy === 'Never' && !present) {
        assert.equal(await imageErrorReason(result), 'ErrImageNeverPull');
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
    const s = imageManagerSetup();
    s.images.answer(() => 'sha256:x');
    s.images.present.add('busybox:latest');
    await s.manager.ensureImage(imagePod('p', []), imageContainer('busybox'), SANDBOX_CONFIG);
    assert.deepEqual(s.images.statusCalls, ['busybox:latest']);
    assert.deepEqual(
      s.images.pulls.map((c) => c.image),
      ['busybox:latest'],
    );
  });

  void it('reports an invalid reference as InvalidImageName without asking the runtime', async () => {
    const s = imageManagerSetup();
    assert.equal(
      await imageErrorReason(
        s.manager.ensureImage(imagePod('p', []), imageContainer('Bad/Name'), SANDBOX_CONFIG),
      ),
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
    const s = imageManagerSetup();
    s.images.failStatus(new KubeletError('Unavailable', 'CRI ImageStatus', 'connection refused'));
    assert.equal(
      await imageErrorReason(s.manager.ensureImage(imagePod('p', []), imageContainer('a:1'), SANDBOX_CONFIG)),
      'ImageInspectError',
    );
    assert.deepEqual(s.reasons(), ['InspectFailed']);
  });
});

void describe('pull back-off', () => {
  void it('goes ErrImagePull, then ImagePullBackOff while in the window, doubling after each failure', async () => {
    const s = imageManagerSetup();
    s.images.answer(() => {
      throw new KubeletError('NotFound', 'CRI PullImage', 'not found');
    });
    const ensure = () =>
      s.manager.ensureImage(imagePod('p', []), imageContainer('reg.io/app:1'), SANDBOX_CONFIG);

    assert.equal(await imageErrorReason(ensure()), 'ErrImagePull');
    assert.deepEqual(s.reasons(), ['Pulling', 'Failed']);
    assert.equal(s.events[1]?.message, 'Failed to pull image "reg.io/app:1": CRI PullImage: not found');

    s.advance(9_999);
    assert.equal(await imageErrorReason(ensure()), 'ImagePullBackOff');
    assert.equal(s.events.at(-1)?.reason, 'BackOff');
    assert.equal(s.events.at(-1)?.message, 'Back-off pulling image "reg.io/app:1"');
    assert.equal(s.images.pulls.length, 1);

    s.advance(1); // 10 s after the failure: the window (10 s) is over
    assert.equal(await imageErrorReason(ensure()), 'ErrImagePull');
    assert.equal(s.images.pulls.length, 2);

    s.advance(19_999); // the window is now 20 s
    assert.equal(await imageErrorReason(ensure()), 'ImagePullBackOff');
    s.advance(1);
    s.images.answer(() => 'sha256:ok');
    assert.equal(await ensure(), 'sha256:ok');
    assert.equal(s.images.pulls.length, 3);
  });

  void it('keeps back-off per pod: another pod pulling the same image is not held back', async () => {
    const s = imageManagerSetup();
    s.images.answer(() => {
      throw new Error('boom');
    });
    assert.equal(
      await imageErrorReason(
        s.manager.ensureImage(imagePod('a', []), imageContainer('reg.io/app:1'), SANDBOX_CONFIG),
      ),
      'ErrImagePull',
    );
    assert.equal(
      await imageErrorReason(
        s.manager.ensureImage(imagePod('b', []), imageContainer('reg.io/app:1'), SANDBOX_CONFIG),
      ),
      'ErrImagePull',
    );
    assert.equal(s.images.pulls.length, 2);
  });

  void it('does not back off, record Failed or wrap the error when the caller aborts', async () => {
    const s = imageManagerSetup();
    const ac = new AbortController();
    const p = s.manager.ensureImage(
      imagePod('p', []),
      imageContainer('reg.io/app:1'),
      SANDBOX_CONFIG,
      ac.signal,
    );
    await flush();
    const reason = new KubeletError('Canceled', 'sync pod', 'pod terminating');
    ac.abort(reason);
    await assert.rejects(p, (err: unknown) => err === reason);
    assert.deepEqual(s.reasons(), ['Pulling']);
    assert.equal(s.images.pulls[0]?.signal?.aborted, true, 'the abandoned pull is cancelled');
    s.images.answer(() => 'sha256:ok');
    assert.equal(
      await s.manager.ensureImage(imagePod('p', []), imageContainer('reg.io/app:1'), SANDBOX_CONFIG),
      'sha256:ok',
    );
  });

  void it('bounds a pull that never answers with the pull timeout', async () => {
    const s = imageManagerSetup({ pullTimeoutMs: 5 });
    const err = await s.manager
      .ensureImage(imagePod('p', []), imageContainer('reg.io/app:1'), SANDBOX_CONFIG)
      .catch((e: unknown) => e);
    assert.ok(err instanceof ImageError);
    assert.equal(err.reason, 'ErrImagePull');
    assert.match(err.message, /no result within 5 ms/);
  });
});

void describe('pull back-off while the wall clock steps', () => {
  for (const stepMs of [-3_600_000, 7_200_000]) {
    void it(`ends the window 10 s after the failure, as without a step, when the wall clock steps ${stepMs / 3_600_000} h`, async (t) => {
      t.mock.timers.enable({ apis: ['Date'], now: Date.UTC(2026, 10, 24, 12) });
      const s = imageManagerSetup(); // monotonic time: s.advance
      s.images.answer(() => {
        throw new KubeletError('NotFound', 'CRI PullImage', 'not found');
      });
      const ensure = () =>
        s.manager.ensureImage(imagePod('p', []), imageContainer('reg.io/app:1'), SANDBOX_CONFIG);
      assert.equal(await imageErrorReason(ensure()), 'ErrImagePull');
      t.mock.timers.setTime(Date.now() + stepMs);
      s.advance(9_999);
      assert.equal(await imageErrorReason(ensure()), 'ImagePullBackOff');
      s.advance(1);
      assert.equal(await imageErrorReason(ensure()), 'ErrImagePull', 'pulled again after 10 s');
      assert.equal(s.images.pulls.length, 2);
    });
  }
});
