/**
 * The evented PLEG on real containerd (issue 15 part 4): a container's exit reaches the kubelet
 * through containerd's event stream, long before the relist (30 s while events are live) would
 * have seen it; and with containerd killed mid-stream and started again, the kubelet re-subscribes
 * and a container exit that happened while containerd was down is still seen (by the relist).
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createContainerdEvents } from '../../src/runtime/containerd-events/index.ts';
import type { RuntimeEventHandlers, RuntimeEventSource } from '../../src/runtime/containerd-events/index.ts';
import { BED_PATHS } from '../harness/containerd.ts';
import { startContainerd, stopBedContainerd } from '../harness/index.ts';
import { IMAGE, containersOf, podManifest, testLogger, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, useKubelet } from './support.ts';

/** The real client, with the live / broken transitions counted for the test to wait on. */
class WatchedEvents implements RuntimeEventSource {
  live = false;
  lives = 0;
  breaks = 0;
  readonly client = createContainerdEvents({ endpoint: `unix://${BED_PATHS.socket}`, logger: testLogger() });
  run(h: RuntimeEventHandlers, signal: AbortSignal): Promise<void> {
    return this.client.run(
      {
        onLive: () => {
          this.live = true;
          this.lives++;
          h.onLive();
        },
        onEvent: (e) => h.onEvent(e),
        onBroken: (err, retry) => {
          this.live = false;
          this.breaks++;
          h.onBroken(err, retry);
        },
      },
      signal,
    );
  }
}

const SIGNAL_DIR = '/tmp/tskubelet-it-evented';

describe('evented PLEG on real containerd', () => {
  const events = new WatchedEvents();
  const t = useKubelet({ runtimeEvents: events });
  after(async () => {
    events.client.close();
    await rm(SIGNAL_DIR, { recursive: true, force: true });
  });

  it('restarts an exited container within a second or two: the exit came as an event, not from the 30 s relist', async () => {
    await eventually('event stream live', () => (events.live ? true : undefined), 20_000);
    await writeManifest(
      t.env,
      'quick-exit.yaml',
      podManifest('quick-exit', {
        // Exits once, 2 s after its first start; the restarted one (the marker in the emptyDir
        // survives the restart) waits.
        volumes: [{ name: 'data', emptyDir: {} }],
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: [
              'sh',
              '-c',
              "trap 'exit 0' TERM; if [ -f /data/ran ]; then sleep 3600 & wait; fi; touch /data/ran; sleep 2; exit 1",
            ],
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
      }),
    );
    const restarted = await eventually(
      'restartCount 1',
      () => {
        const s = findPod(t.k.kubelet, 'quick-exit')?.status?.containerStatuses?.[0];
        return s && s.restartCount >= 1 && s.state.running ? s : undefined;
      },
      20_000,
    );
    assert.equal(restarted.lastState.terminated?.exitCode, 1);
    const uid = findPod(t.k.kubelet, 'quick-exit')?.pod.metadata.uid ?? '';
    const runs = await Promise.all(
      (await containersOf(t.env, uid)).map((c) => t.env.cri.runtime.containerStatus(c.id)),
    );
    const first = runs.find((r) => r.metadata.attempt === 0);
    const second = runs.find((r) => r.metadata.attempt === 1);
    assert.ok(first && second, `attempts: ${runs.map((r) => r.metadata.attempt).join(',')}`);
    const gapMs = (second.startedAt - first.finishedAt) / 1e6;
    // While live the relist runs every 30 s: a restart this soon was driven by the exit event.
    assert.ok(gapMs < 3_000, `exit → restarted took ${Math.round(gapMs)} ms`);
    assert.equal(events.breaks, 0, 'the stream stayed up');
  });

  it('re-subscribes after containerd is killed and started again, and still sees an exit from the outage', async (tc) => {
    await mkdir(SIGNAL_DIR, { recursive: true });
    await rm(join(SIGNAL_DIR, 'exit'), { force: true });
    await writeManifest(
      t.env,
      'outage.yaml',
      podManifest('outage', {
        volumes: [{ name: 'signal', hostPath: { path: SIGNAL_DIR } }],
        containers: [
          {
            name: 'main',
            image: IMAGE,
            // Exits with 4 when the test creates /signal/exit (and consumes it, so the restarted
            // container waits again).
            command: [
              'sh',
              '-c',
              "trap 'exit 0' TERM; while [ ! -f /signal/exit ]; do sleep 0.1; done; rm -f /signal/exit; exit 4",
            ],
            volumeMounts: [{ name: 'signal', mountPath: '/signal' }],
          },
        ],
      }),
    );
    await eventually('outage pod running', () => {
      const s = findPod(t.k.kubelet, 'outage')?.status?.containerStatuses?.[0];
      return s?.state.running ? s : undefined;
    });
    await eventually('event stream live', () => (events.live ? true : undefined), 20_000);
    const livesBefore = events.lives;

    // Kill containerd under the live stream; its shims keep the containers running.
    assert.ok(
      await stopBedContainerd(),
      "the bed containerd is the harness's own (its pid file), so the test can stop it",
    );
    await eventually('stream broken', () => (events.live ? undefined : true), 10_000);
    // The container exits while containerd is down: nobody is there to publish its TaskExit.
    await writeFile(join(SIGNAL_DIR, 'exit'), 'go\n');
    await eventually(
      'the container consumed the signal',
      async () => ((await stat(join(SIGNAL_DIR, 'exit')).catch(() => undefined)) ? undefined : true),
      10_000,
    );
    await new Promise((r) => setTimeout(r, 1_000));
    await startContainerd();
    const back = Date.now();

    const restarted = await eventually(
      'the outage exit seen and the container restarted',
      () => {
        const s = findPod(t.k.kubelet, 'outage')?.status?.containerStatuses?.[0];
        return s && s.restartCount >= 1 && s.state.running ? s : undefined;
      },
      45_000,
      () => findPod(t.k.kubelet, 'outage')?.status,
    );
    const seenAfterMs = Date.now() - back;
    // The exit status survives containerd's restart when it reloads the task from its shim; the
    // restart itself is what this test is about.
    assert.ok(restarted.lastState.terminated, 'the outage run is reported terminated');
    await eventually(
      're-subscribed',
      () => (events.lives > livesBefore && events.live ? true : undefined),
      45_000,
    );
    // Seen by the relist the kubelet runs every second while the stream is down, and the relist
    // after it is live again: well under the 30 s live period.
    tc.diagnostic(
      `outage exit code ${restarted.lastState.terminated?.exitCode}; restart seen ${seenAfterMs} ms after containerd was back`,
    );
    assert.ok(seenAfterMs < 30_000, `restart seen ${seenAfterMs} ms after containerd came back`);
  });
});
