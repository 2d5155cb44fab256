import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { until } from '../../test/kit/poll.ts';
import { fakeCriKubelet } from './testing.ts';

describe('image GC scheduling', () => {
  it('runs the first pass as soon as the kubelet runs (upstream wait.Until), not a period later', async (t) => {
    let measured = 0;
    const s = await fakeCriKubelet(t, {
      deps: {
        sources: [],
        // 90% used: above the default high threshold (85%), so the pass removes the unused image.
        imageFsUsage: () => {
          measured++;
          return Promise.resolve({ capacityBytes: 1000, availableBytes: 100 });
        },
      },
    });
    const images = s.images;
    images.addImage('docker.io/library/unused:1', { size: 300 });
    await s.start();
    await until('an image removal', () => images.callsTo('removeImage').length > 0, { intervalMs: 10 });
    assert.equal(measured, 1, 'one pass, at start');
    assert.equal(
      images.callsTo('removeImage').length,
      1,
      'the unused image (present at the first pass) went',
    );
  });
});
