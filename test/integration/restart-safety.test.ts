import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { IMAGE, containersOf, podManifest, setupEnv, writeManifest, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, startKubelet, waitForPhase, type RunningKubelet } from './support.ts';
import { sleep } from '../../src/util/abort.ts';

describe('tskubelet restart with pods running', () => {
  let env: Env;
  let k: RunningKubelet | undefined;
  before(async () => {
    env = await setupEnv();
  });
  after(async () => {
    await k?.stop();
    await env?.close();
  });

  it('re-adopts running pods from CRI labels: no container restarted, counts and back-off continue', async () => {
    k = await startKubelet(env);
    await writeManifest(
      env,
      'steady.yaml',
      podManifest('steady', {
        initContainers: [{ name: 'init', image: IMAGE, command: ['true'] }],
        containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }],
      }),
    );
    await writeManifest(
      env,
      'crashy.yaml',
      podManifest('crashy', {
        containers: [{ name: 'main', image: IMAGE, command: ['sh', '-c', 'exit 1'] }],
      }),
    );
    const steady = await waitForPhase(k.kubelet, 'steady', 'Running');
    const crashy = await eventually('crashy in back-off', () => {
      const p = findPod(k!.kubelet, 'crashy');
      const s = p?.status?.containerStatuses?.[0];
      return s?.restartCount === 1 && s.state.waiting?.reason === 'CrashLoopBackOff' ? p : undefined;
    });
    const steadyUid = steady.pod.metadata.uid ?? '';
    const crashyUid = crashy.pod.metadata.uid ?? '';
    const idsBefore = (await containersOf(env, steadyUid)).map((c) => c.id).sort();
    const steadyContainerID = steady.status?.containerStatuses?.[0]?.containerID;

    await k.stop();
    k = await startKubelet(env);
    const again = await waitForPhase(k.kubelet, 'steady', 'Running');
    assert.equal(again.pod.metadata.uid, steadyUid, 'the same manifest gives the same pod UID');
    assert.equal(again.status?.containerStatuses?.[0]?.containerID, steadyContainerID);
    assert.equal(again.status?.containerStatuses?.[0]?.restartCount, 0);
    assert.equal(again.status?.initContainerStatuses?.[0]?.state.terminated?.reason, 'Completed');
    // Let a few sync and housekeeping rounds pass: nothing may be recreated.
    await sleep(3_000);
    const idsAfter = (await containersOf(env, steadyUid)).map((c) => c.id).sort();
    assert.deepEqual(idsAfter, idsBefore, 'no container was created or removed');

    // The crashing pod keeps its restart count and stays in back-off instead of restarting at once.
    const c = await eventually('crashy status after restart', () => {
      const s = findPod(k!.kubelet, 'crashy')?.status?.containerStatuses?.[0];
      return s?.state.waiting ? s : undefined;
    });
    assert.equal(c.restartCount, 1);
    assert.equal(c.state.waiting?.reason, 'CrashLoopBackOff');
    assert.equal((await containersOf(env, crashyUid)).length, 2, 'no extra run during back-off');
  });
});
