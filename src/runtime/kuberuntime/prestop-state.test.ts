import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { flush } from '../../util/testing.ts';
import { createPodKiller } from './pod-killer.ts';
import { createRuntimeManager } from './runtime-manager.ts';
import { fakeRuntimeDeps, makePod } from '../testing.ts';

describe('preStop hooks running, for why (PodKiller.preStopsRunning)', () => {
  it('lists a preStop hook while it runs, with when it started, and forgets it once it ends', async (t) => {
    const f = await fakeRuntimeDeps(t);
    let clock = 1_000;
    const killer = createPodKiller({
      runtime: f.cri,
      recorder: f.recorder,
      logger: f.logger,
      hooks: f.deps.hooks,
      monotonic: () => clock,
      onContainerRemoved: () => undefined,
    });
    const manager = createRuntimeManager(f.deps);
    const pod = makePod('web', ['app'], { grace: 30 });
    pod.spec.containers[0]!.lifecycle = { preStop: { exec: { command: ['/bin/drain'] } } };
    const status = () => manager.getPodStatus(pod.metadata.uid, pod.metadata.name, pod.metadata.namespace);
    await manager.syncPod(pod, await status());
    f.cri.setLatency('execSync', Infinity);
    const ctl = new AbortController();

    assert.deepEqual(killer.preStopsRunning(pod.metadata.uid), []);
    const kill = killer.killPod(pod, await status(), undefined, ctl.signal);
    await flush();
    assert.deepEqual(killer.preStopsRunning(pod.metadata.uid), [{ container: 'app', since: 1_000 }]);
    assert.deepEqual(killer.preStopsRunning('another-pod'), []);
    clock = 2_000;
    ctl.abort(new Error('stop'));
    await assert.rejects(kill, /stop/);
    assert.deepEqual(killer.preStopsRunning(pod.metadata.uid), []);
  });
});
