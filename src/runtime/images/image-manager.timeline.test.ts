import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fakeTimeline } from '../../timeline/testing.ts';
import { SANDBOX_CONFIG, imageContainer, imageErrorReason, imageManagerSetup, imagePod } from '../testing.ts';

void describe('the image steps of the timeline', () => {
  void it('a present image is image-pull-done with cached: true and its size, without a pull', async () => {
    const timeline = fakeTimeline();
    const s = imageManagerSetup({ timeline });
    s.images.present.add('reg.io/app:1');
    await s.manager.ensureImage(imagePod('p', []), imageContainer('reg.io/app:1'), SANDBOX_CONFIG);
    assert.deepEqual(timeline.steps, [
      { uid: 'uid-p', step: 'image-pull-started', fields: { container: 'app', image: 'reg.io/app:1' } },
      {
        uid: 'uid-p',
        step: 'image-pull-done',
        fields: { container: 'app', image: 'reg.io/app:1', bytes: 1, cached: true },
      },
    ]);
  });

  void it('a pulled image is image-pull-done with cached: false and the size read after the pull', async () => {
    const timeline = fakeTimeline();
    const s = imageManagerSetup({ timeline });
    s.images.answer((image) => image);
    await s.manager.ensureImage(imagePod('p', []), imageContainer('reg.io/app:1', 'Always'), SANDBOX_CONFIG);
    assert.deepEqual(timeline.steps.at(-1)?.fields, {
      container: 'app',
      image: 'reg.io/app:1',
      bytes: 1,
      cached: false,
    });
  });

  void it('a failed pull, then a pull in back-off, are each a failed step naming image-pull-done', async () => {
    const timeline = fakeTimeline();
    const s = imageManagerSetup({ timeline });
    s.images.answer(() => {
      throw new Error('registry said no');
    });
    const pod = imagePod('p', []);
    const c = imageContainer('reg.io/app:1', 'Always');
    assert.equal(await imageErrorReason(s.manager.ensureImage(pod, c, SANDBOX_CONFIG)), 'ErrImagePull');
    assert.equal(await imageErrorReason(s.manager.ensureImage(pod, c, SANDBOX_CONFIG)), 'ImagePullBackOff');
    assert.deepEqual(timeline.stepsOf('uid-p'), [
      'image-pull-started',
      'failed',
      'image-pull-started',
      'failed',
    ]);
    const failures = timeline.steps.filter((x) => x.step === 'failed').map((x) => x.fields);
    assert.equal(failures[0]?.failedStep, 'image-pull-done');
    assert.match(failures[0]?.error ?? '', /registry said no/);
    assert.match(failures[1]?.error ?? '', /^Back-off pulling image/);
  });
});
