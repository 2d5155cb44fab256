import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { nullLogger } from '../../util/logger.ts';
import type { PvMetrics } from '../pv-plugins.ts';
import { createCsiVolumeStats } from './volume-stats.ts';

const USAGE: PvMetrics = {
  capacityBytes: 100,
  availableBytes: 60,
  usedBytes: 40,
  inodes: 10,
  inodesFree: 7,
  inodesUsed: 3,
};

/** A mounter whose volumeStats calls wait for the test to answer them. */
function fakeMounter() {
  const calls: { uid: string; name: string; answer(m: PvMetrics | undefined | Error): void }[] = [];
  return {
    calls,
    mounter: {
      volumeStats: (uid: string, name: string) =>
        new Promise<PvMetrics | undefined>((resolve, reject) =>
          calls.push({ uid, name, answer: (m) => (m instanceof Error ? reject(m) : resolve(m)) }),
        ),
    },
  };
}

const flush = () => new Promise<void>((r) => setImmediate(r));

describe('CSI volume stats', () => {
  it('never waits for the driver: nothing until the first NodeGetVolumeStats answers, then its numbers and time', async () => {
    const f = fakeMounter();
    let mono = 0;
    const stats = createCsiVolumeStats({
      mounter: f.mounter,
      periodMs: 60_000,
      logger: nullLogger,
      now: () => 1_700_000_000_000,
      monotonic: () => mono,
    });
    assert.equal(stats.get('u1', 'pv-1'), undefined);
    assert.equal(stats.get('u1', 'pv-1'), undefined);
    assert.equal(f.calls.length, 1, 'one measurement in flight per volume');
    f.calls[0]?.answer(USAGE);
    await flush();
    assert.deepEqual(stats.get('u1', 'pv-1'), { usage: USAGE, time: 1_700_000_000_000 });
    mono = 59_999;
    stats.get('u1', 'pv-1');
    assert.equal(f.calls.length, 1, 'measured at most once per period');
    mono = 60_000;
    stats.get('u1', 'pv-1');
    assert.equal(f.calls.length, 2);
  });

  it('keeps the last numbers when a measurement fails (a driver restarting), and drops them when the driver reports none', async () => {
    const f = fakeMounter();
    let mono = 0;
    const stats = createCsiVolumeStats({
      mounter: f.mounter,
      periodMs: 1_000,
      logger: nullLogger,
      monotonic: () => mono,
    });
    stats.get('u1', 'pv-1');
    f.calls[0]?.answer(USAGE);
    await flush();
    mono = 1_000;
    stats.get('u1', 'pv-1');
    f.calls[1]?.answer(new Error('context deadline exceeded'));
    await flush();
    assert.deepEqual(stats.get('u1', 'pv-1')?.usage, USAGE);
    mono = 2_000;
    stats.get('u1', 'pv-1');
    f.calls[2]?.answer(undefined);
    await flush();
    assert.equal(stats.get('u1', 'pv-1'), undefined);
  });
});
