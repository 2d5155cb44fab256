/**
 * Probe timing while the wall clock steps (NTP, VM resume, date set by hand): periods and the
 * initial delay are kept on the monotonic clock, so probes fire as often, and as late, as without
 * a step.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMemoryRecorder } from '../api/events.ts';
import type { KubeletPod, Probe } from '../api/types.ts';
import { nullLogger } from '../util/logger.ts';
import { createProbeManager } from './index.ts';
import { createFakeClock, probedPod } from './testing.ts';

const UID = 'uid-1';
const H = 3_600_000;

function harness(probe: Probe, kind: 'livenessProbe' | 'readinessProbe' = 'livenessProbe') {
  const clock = createFakeClock();
  const t0 = clock.monotonic();
  /** Monotonic ms since the start of each exec call. */
  const probedAt: number[] = [];
  let duringProbe: (() => void) | undefined;
  const m = createProbeManager({
    exec: () => {
      probedAt.push(clock.monotonic() - t0);
      duringProbe?.();
      duringProbe = undefined;
      return Promise.resolve({ stdout: Buffer.from('ok'), stderr: Buffer.from(''), exitCode: 0 });
    },
    podIP: () => '10.0.0.2',
    recorder: createMemoryRecorder(),
    logger: nullLogger,
    onChange: () => {},
    now: () => clock.now(),
    monotonic: () => clock.monotonic(),
    random: () => 0,
    timers: clock.timers,
  });
  const pod: KubeletPod = probedPod({ [kind]: probe });
  m.addPod(pod);
  m.updateContainers(UID, [{ name: 'main', containerId: 'c1', state: 'running', startedAt: clock.now() }]);
  return {
    m,
    clock,
    probedAt,
    /** Steps the wall clock while the next probe is in flight. */
    stepDuringNextProbe(ms: number) {
      duringProbe = () => clock.stepWall(ms);
    },
  };
}

const probe = (extra: Partial<Probe> = {}): Probe => ({
  exec: { command: ['check'] },
  periodSeconds: 10,
  timeoutSeconds: 1,
  failureThreshold: 3,
  ...extra,
});

describe('probe timing while the wall clock steps', () => {
  for (const stepMs of [-H, 2 * H]) {
    it(`probes every period across a ${stepMs / H} h step taken while a probe was in flight`, async () => {
      const h = harness(probe());
      await h.clock.advance(15_000);
      h.stepDuringNextProbe(stepMs);
      await h.clock.advance(45_000);
      assert.deepEqual(h.probedAt, [0, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000]);
      await h.m.stop();
    });
  }

  it('waits initialDelaySeconds from the container start, not an hour more, after a 1 h backward step', async () => {
    const h = harness(probe({ initialDelaySeconds: 30 }), 'readinessProbe');
    await h.clock.advance(5_000);
    h.clock.stepWall(-H);
    await h.clock.advance(55_000);
    assert.deepEqual(h.probedAt, [30_000, 40_000, 50_000, 60_000]);
    assert.equal(h.m.isReady(UID, 'main'), true, 'ready within the initial delay and one period');
    await h.m.stop();
  });

  it('does not skip initialDelaySeconds after a 2 h forward step (upstream would probe at once)', async () => {
    const h = harness(probe({ initialDelaySeconds: 30 }));
    await h.clock.advance(5_000);
    h.clock.stepWall(2 * H);
    await h.clock.advance(35_000);
    assert.deepEqual(h.probedAt, [30_000, 40_000]);
    await h.m.stop();
  });
});
