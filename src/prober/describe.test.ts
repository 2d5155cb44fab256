import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeletPod } from '../api/types.ts';
import { createMemoryRecorder } from '../api/events.ts';
import { nullLogger } from '../util/logger.ts';
import { createProbeManager } from './index.ts';
import { createFakeClock, probedPod } from './testing.ts';

const UID = 'uid-1';

function setup() {
  const clock = createFakeClock();
  const exit = new Map<string, number>();
  const m = createProbeManager({
    exec: (containerId) => {
      const code = exit.get(containerId) ?? 0;
      return Promise.resolve({
        stdout: Buffer.from(code === 0 ? 'ok' : `HTTP 503 from ${containerId}`),
        stderr: Buffer.from(''),
        exitCode: code,
      });
    },
    podIP: () => '10.0.0.2',
    recorder: createMemoryRecorder(),
    logger: nullLogger,
    onChange: () => undefined,
    now: () => clock.now(),
    monotonic: () => clock.monotonic(),
    random: () => 0,
    timers: clock.timers,
  });
  const pod: KubeletPod = probedPod({
    readinessProbe: { exec: { command: ['check'] }, periodSeconds: 10, failureThreshold: 3 },
  });
  return { m, clock, exit, pod };
}

describe('probe manager describe (for why)', () => {
  it('reports failures in a row against the threshold and the last output of the current container', async () => {
    const { m, clock, exit, pod } = setup();
    m.addPod(pod);
    m.updateContainers(UID, [{ name: 'main', containerId: 'c1', state: 'running', startedAt: clock.now() }]);
    exit.set('c1', 1);
    await clock.advance(0);
    await clock.advance(10_000);
    assert.deepEqual(m.describe(UID), [
      {
        container: 'main',
        probe: 'readiness',
        result: 'failure',
        consecutiveFailures: 2,
        failureThreshold: 3,
        lastResult: 'failure',
        lastOutput: 'HTTP 503 from c1',
        lastAt: clock.now(),
      },
    ]);
    exit.set('c1', 0);
    await clock.advance(10_000);
    const [after] = m.describe(UID);
    assert.equal(after?.result, 'success');
    assert.equal(after?.consecutiveFailures, 0, 'a success ends the run of failures');
    assert.equal(after?.lastResult, 'success');
    await m.stop();
  });

  it('forgets the last output of an older container instance and answers nothing for an unknown pod', async () => {
    const { m, clock, exit, pod } = setup();
    m.addPod(pod);
    m.updateContainers(UID, [{ name: 'main', containerId: 'c1', state: 'running', startedAt: clock.now() }]);
    exit.set('c1', 1);
    await clock.advance(0);
    m.updateContainers(UID, [{ name: 'main', containerId: 'c2', state: 'created', startedAt: 0 }]);
    const [d] = m.describe(UID);
    assert.equal(d?.lastOutput, undefined);
    assert.equal(d?.consecutiveFailures, 0);
    assert.deepEqual(m.describe('other'), []);
    await m.stop();
  });
});
