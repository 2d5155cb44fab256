import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { imageContainer, imageErrorReason, imageManagerSetup, imagePod, SANDBOX_CONFIG } from '../testing.ts';

describe('image pull state for why (ImageManager.pullState)', () => {
  it('reports a pull in flight with when it started, and nothing once it is done', async () => {
    const s = imageManagerSetup();
    const pod = imagePod('a', []);
    const pulling = s.manager.ensureImage(pod, imageContainer('reg.io/a:1'), SANDBOX_CONFIG);
    for (let i = 0; i < 10 && s.images.pulls.length === 0; i++) await Promise.resolve();
    assert.equal(s.images.pulls.length, 1);
    assert.deepEqual(s.manager.pullState('uid-a'), [
      { image: 'reg.io/a:1', container: 'app', pullingSince: 1_000_000 },
    ]);
    assert.deepEqual(s.manager.pullState('uid-b'), [], 'another pod has no pulls');
    s.images.pulls[0]?.result.resolve('sha256:a');
    await pulling;
    assert.deepEqual(s.manager.pullState('uid-a'), []);
  });

  it('reports a failed pull in back-off with the time left, the delay and the last error', async () => {
    const s = imageManagerSetup();
    s.images.answer(() => {
      throw new Error('manifest unknown');
    });
    const pod = imagePod('a', []);
    assert.equal(
      await imageErrorReason(s.manager.ensureImage(pod, imageContainer('reg.io/a:1'), SANDBOX_CONFIG)),
      'ErrImagePull',
    );
    s.advance(4_000);
    assert.deepEqual(s.manager.pullState('uid-a'), [
      {
        image: 'reg.io/a:1',
        container: 'app',
        backOffLeftMs: 6_000,
        backOffMs: 10_000,
        lastError: 'manifest unknown',
      },
    ]);
    s.advance(6_000);
    assert.deepEqual(s.manager.pullState('uid-a'), [], 'the window is over');
  });
});
