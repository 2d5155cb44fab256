/**
 * The eviction manager while the wall clock steps: soft grace periods and the pressure transition
 * period last as long as without a step, and stats stamped with the stepped wall time still count
 * as new measurements. The wall clock is node:test's mocked Date (what stats stamp and what the
 * manager used to read); monotonic time is the test's counter.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import type { Summary } from '../stats/index.ts';
import { nullLogger } from '../util/logger.ts';
import { createEvictionManager } from './manager.ts';
import type { Threshold } from './signals.ts';
import { Gi, LOW_PRIORITY, memoryStats, memorySummary, Mi, names, pod } from './testing.ts';

const MIN = 60_000;
const H = 60 * MIN;

function setup(t: TestContext, thresholds: Threshold[]) {
  t.mock.timers.enable({ apis: ['Date'], now: Date.UTC(2026, 0, 10, 8) });
  let mono = 5_000_000;
  const pods: KubeletPod[] = [pod('a', { priority: LOW_PRIORITY }), pod('b', { priority: LOW_PRIORITY })];
  let available = 4 * Gi;
  const killed: string[] = [];
  const manager = createEvictionManager(
    { thresholds, pressureTransitionPeriodMs: 5 * MIN, maxPodGracePeriodSeconds: 5 },
    {
      // Stamped as the stats are: with the wall clock at the time of the read.
      summary: (): Promise<Summary<number>> =>
        Promise.resolve(
          memorySummary(
            available,
            pods.map((p) => memoryStats(p, 100 * Mi)),
            Date.now(),
          ),
        ),
      hasDedicatedImageFs: () => Promise.resolve(false),
      activePods: () => pods.filter((p) => !killed.includes(p.metadata.uid)),
      killPod: (p) => {
        killed.push(p.metadata.uid);
        return Promise.resolve();
      },
      podCleanedUp: () => true,
      deleteAllUnusedContainers: () => Promise.resolve(),
      deleteUnusedImages: () => Promise.resolve(),
      recorder: { event: () => {} },
      nodeEvent: () => {},
      logger: nullLogger,
      monotonic: () => mono,
      sleep: () => Promise.resolve(),
    },
  );
  return {
    manager,
    killed,
    setAvailable: (bytes: number) => (available = bytes),
    /** Time passes (both clocks), then one pass; the pods it evicted. */
    async pass(afterMs: number): Promise<string[]> {
      mono += afterMs;
      t.mock.timers.tick(afterMs);
      return names(await manager.synchronize());
    },
    stepWall: (ms: number) => t.mock.timers.setTime(Date.now() + ms),
  };
}

const soft: Threshold = { signal: 'memory.available', value: { quantity: 2 * Gi }, gracePeriodMs: 2 * MIN };
const hard: Threshold = { signal: 'memory.available', value: { quantity: Gi }, gracePeriodMs: 0 };

describe('eviction while the wall clock steps', () => {
  it('waits the whole soft grace period across a 2 h forward step', async (t) => {
    const h = setup(t, [soft]);
    h.setAvailable(1500 * Mi);
    assert.deepEqual(await h.pass(0), []);
    h.stepWall(2 * H);
    assert.deepEqual(await h.pass(MIN), [], 'one minute into a two-minute grace period');
    assert.deepEqual(await h.pass(MIN), ['a'], 'evicted when the grace period is over');
  });

  it('drops the pressure condition one transition period after the last crossing across a 1 h backward step', async (t) => {
    const h = setup(t, [hard]);
    h.setAvailable(500 * Mi);
    assert.deepEqual(await h.pass(0), ['a']);
    h.setAvailable(3 * Gi);
    h.stepWall(-H);
    await h.pass(4 * MIN);
    assert.equal(h.manager.pressure().memory, true, 'within the 5 min transition period');
    await h.pass(MIN + 1);
    assert.equal(h.manager.pressure().memory, false, 'past it');
  });

  it('acts on stats stamped after a 1 h backward step (new measurements, though "older")', async (t) => {
    const h = setup(t, [hard]);
    h.setAvailable(500 * Mi);
    assert.deepEqual(await h.pass(0), ['a']);
    h.stepWall(-H);
    assert.deepEqual(await h.pass(10_000), ['b'], 'still under pressure: the next pod goes');
  });
});
