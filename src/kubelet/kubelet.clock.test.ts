/**
 * The kubelet core on the fake CRI while the wall clock steps (NTP correction, VM resume, the date
 * set by hand): pods keep being synced from fresh runtime state, crashed containers restart on
 * their usual schedule. Real timers; the wall clock (kubelet and fake CRI alike) is the machine's
 * plus an offset the test steps, the monotonic clock is the machine's.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { PodStatus } from '../api/types.ts';
import { FakeImageService, FakeRuntimeService } from '../runtime/cri/testing.ts';
import { sleep } from '../util/abort.ts';
import { monotonicNow } from '../util/clock.ts';
import { nullVolumeManager } from '../volume/testing.ts';
import type { Kubelet } from './types.ts';
import { fakeCriKubelet, sourcedPod } from './testing.ts';

const H = 3_600_000;

function steppingWall() {
  let offset = 0;
  return { now: () => Date.now() + offset, step: (ms: number) => (offset += ms) };
}

/** A volume manager with nothing to mount that counts pod syncs (each sync sets volumes up). */
function countingVolumes() {
  const volumes = {
    syncs: 0,
    ...nullVolumeManager({
      setUpPodVolumes: () => {
        volumes.syncs++;
        return Promise.resolve();
      },
    }),
  };
  return volumes;
}

async function setup(t: TestContext, syncFrequencyMs = 60_000) {
  const wall = steppingWall();
  const cri = new FakeRuntimeService({ clock: { now: wall.now, sleep } });
  const volumes = countingVolumes();
  const s = await fakeCriKubelet(t, {
    options: { syncFrequencyMs },
    deps: {
      runtimeService: cri,
      imageService: new FakeImageService({ clock: { now: wall.now, sleep } }),
      now: wall.now,
      monotonic: monotonicNow,
      managers: { volumes },
      random: () => 0,
    },
  });
  const kubelet: Kubelet = await s.start();
  return { cri, src: s.source, kubelet, wall, volumes };
}

async function until<T>(what: string, get: () => T | undefined | false, timeoutMs = 8_000): Promise<T> {
  const deadline = monotonicNow() + timeoutMs;
  for (;;) {
    const v = get();
    if (v !== undefined && v !== false) return v;
    if (monotonicNow() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const pod = sourcedPod('web', { creationTimestamp: '2026-11-24T00:00:00Z' });

const appStatus = (k: Kubelet): NonNullable<PodStatus['containerStatuses']>[number] | undefined =>
  k.pods().find((p) => p.pod.metadata.uid === 'uid-web')?.status?.containerStatuses?.[0];

describe('the kubelet core while the wall clock steps', () => {
  for (const stepMs of [-H, 2 * H]) {
    void it(`restarts a crashed container at once and reports it running after a ${stepMs / H} h wall step`, async (t) => {
      const { cri, src, kubelet, wall } = await setup(t);
      src.send([pod]);
      await until('running', () => appStatus(kubelet)?.state?.running);
      // Let a relist cache the running container under the old wall time.
      await sleep(1_200);
      wall.step(stepMs);
      cri.exitContainer(cri.latestContainer('app', 'uid-web')!.status.id, 1);
      // restartPolicy Always, first crash: the restart is immediate (upstream doBackOff arms only).
      const restarted = await until('restarted and reported running', () => {
        const s = appStatus(kubelet);
        return s?.restartCount === 1 && s.state?.running ? s : undefined;
      });
      assert.equal(restarted.lastState?.terminated?.exitCode, 1);
      // Two relists later the status still describes the live container, and only one runs.
      await sleep(2_200);
      const live = [...cri.containers.values()].filter((c) => c.status.state === 'CONTAINER_RUNNING');
      assert.equal(live.length, 1, 'exactly one app container runs');
      assert.equal(appStatus(kubelet)?.containerID, `containerd://${live[0]!.status.id}`);
      assert.ok(appStatus(kubelet)?.state?.running, 'reported running');
    });
  }

  void it('resyncs a pod on its period across a 1 h backward and a 2 h forward wall step, as without', async (t) => {
    // syncFrequency 0.5 s: due every half second, taken by the 1 s tick, so one sync a second.
    const { src, kubelet, wall, volumes } = await setup(t, 500);
    src.send([pod]);
    await until('running', () => appStatus(kubelet)?.state?.running);
    const syncsIn = async (ms: number) => {
      const before = volumes.syncs;
      await sleep(ms);
      return volumes.syncs - before;
    };
    const steady = await syncsIn(3_500);
    wall.step(-H);
    const afterBack = await syncsIn(3_500);
    wall.step(2 * H);
    const afterForward = await syncsIn(3_500);
    assert.ok(steady >= 2 && steady <= 5, `${steady} syncs in 3.5 s without a step`);
    assert.ok(afterBack >= 2 && afterBack <= 5, `${afterBack} syncs in 3.5 s after -1 h`);
    assert.ok(afterForward >= 2 && afterForward <= 5, `${afterForward} syncs in 3.5 s after +2 h`);
  });
});
