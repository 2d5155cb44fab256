import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createMemoryRecorder } from '../api/events.ts';
import { sleep } from '../util/abort.ts';
import { nullLogger } from '../util/logger.ts';
import { FakeImageService, FakeRuntimeService } from '../runtime/cri/testing.ts';
import { createKubelet } from './kubelet.ts';
import { FakeKmsg } from '../oom/testing.ts';

describe('image GC scheduling', () => {
  it('runs the first pass as soon as the kubelet runs (upstream wait.Until), not a period later', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'tskubelet-imagegc-start-'));
    const images = new FakeImageService();
    images.addImage('docker.io/library/unused:1', { size: 300 });
    let measured = 0;
    const kubelet = createKubelet(
      {
        nodeName: 'node-a',
        nodeIP: '192.0.2.10',
        rootDir: dir,
        podLogsDir: join(dir, 'logs'),
        maxPods: 110,
        syncFrequencyMs: 60_000,
      },
      {
        runtimeService: new FakeRuntimeService(),
        imageService: images,
        sources: [],
        recorder: createMemoryRecorder(),
        logger: nullLogger,
        openKmsg: new FakeKmsg().opener,
        node: () => ({
          name: 'node-a',
          labels: {},
          allocatable: { milliCPU: 2000, memory: 4 << 30, pods: 110 },
        }),
        // 90% used: above the default high threshold (85%), so the pass removes the unused image.
        imageFsUsage: () => {
          measured++;
          return Promise.resolve({ capacityBytes: 1000, availableBytes: 100 });
        },
      },
    );
    t.after(async () => {
      await kubelet.stop();
      await rm(dir, { recursive: true, force: true });
    });
    void kubelet.run();
    const deadline = Date.now() + 5_000;
    while (images.callsTo('removeImage').length === 0 && Date.now() < deadline) await sleep(10);
    assert.equal(measured, 1, 'one pass, at start');
    assert.equal(
      images.callsTo('removeImage').length,
      1,
      'the unused image (present at the first pass) went',
    );
  });
});
