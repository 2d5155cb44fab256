import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IMAGE, containersOf, podManifest, sandboxesOf, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, waitForPhase, useKubelet } from './support.ts';

describe('restart policy and crash-loop back-off on real containerd', () => {
  const t = useKubelet();

  it('restarts a crashing container with growing back-off and counts restarts', async () => {
    await writeManifest(
      t.env,
      'crash.yaml',
      podManifest('crash', {
        containers: [{ name: 'main', image: IMAGE, command: ['sh', '-c', 'sleep 0.3; exit 3'] }],
      }),
    );
    // Upstream: the first restart is immediate, the next waits 10 s (then 20 s, 40 s, ... 300 s).
    const first = await eventually('restartCount 1', () => {
      const s = findPod(t.k.kubelet, 'crash')?.status?.containerStatuses?.[0];
      return s && s.restartCount >= 1 ? s : undefined;
    });
    const backoff = await eventually('CrashLoopBackOff', () => {
      const s = findPod(t.k.kubelet, 'crash')?.status?.containerStatuses?.[0];
      return s?.state.waiting?.reason === 'CrashLoopBackOff' ? s : undefined;
    });
    assert.equal(first.restartCount, 1);
    assert.equal(backoff.lastState.terminated?.exitCode, 3);
    assert.equal(backoff.lastState.terminated?.reason, 'Error');
    assert.match(backoff.state.waiting?.message ?? '', /back-off 10s restarting failed container=main/);
    assert.equal(findPod(t.k.kubelet, 'crash')?.status?.phase, 'Running');
    const third = await eventually(
      'restartCount 2',
      () => {
        const s = findPod(t.k.kubelet, 'crash')?.status?.containerStatuses?.[0];
        return s && s.restartCount >= 2 ? s : undefined;
      },
      30_000,
    );
    // The third run started no sooner than 10 s after the second one finished.
    const uid = findPod(t.k.kubelet, 'crash')?.pod.metadata.uid ?? '';
    const runs = await Promise.all(
      (await containersOf(t.env, uid)).map((c) => t.env.cri.runtime.containerStatus(c.id)),
    );
    const byAttempt = new Map(runs.map((r) => [r.metadata.attempt, r]));
    const second = byAttempt.get(1);
    const latest = byAttempt.get(2);
    assert.ok(second && latest, `attempts seen: ${[...byAttempt.keys()].join(',')}`);
    const gapMs = (latest.startedAt - second.finishedAt) / 1e6;
    assert.ok(gapMs >= 9_900, `back-off gap ${gapMs} ms should be at least 10 s`);
    assert.equal(third.restartCount, 2);
    assert.ok(t.k.events.some((e) => e.reason === 'BackOff' && e.pod === 'default/crash-itest'));
  });

  it('never restarts a failed container under restartPolicy Never: the pod fails and its sandbox stops', async () => {
    await writeManifest(
      t.env,
      'never.yaml',
      podManifest('never', {
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: IMAGE, command: ['sh', '-c', 'exit 7'] }],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'never', 'Failed');
    const cs = view.status?.containerStatuses?.[0];
    assert.equal(cs?.restartCount, 0);
    assert.equal(cs?.state.terminated?.exitCode, 7);
    assert.equal(cs?.state.terminated?.reason, 'Error');
    const uid = view.pod.metadata.uid ?? '';
    await eventually('sandbox stopped', async () => {
      const sbs = await sandboxesOf(t.env, uid);
      return sbs.length === 1 && sbs[0]?.state === 'SANDBOX_NOTREADY' ? true : undefined;
    });
    assert.equal((await containersOf(t.env, uid)).length, 1, 'exactly one run, kept for its logs');
  });

  it('completes a pod whose containers succeed under OnFailure, and restarts a failing one', async () => {
    await writeManifest(
      t.env,
      'onfailure-ok.yaml',
      podManifest('onfailure-ok', {
        restartPolicy: 'OnFailure',
        containers: [{ name: 'main', image: IMAGE, command: ['sh', '-c', 'echo done'] }],
      }),
    );
    await writeManifest(
      t.env,
      'onfailure-bad.yaml',
      podManifest('onfailure-bad', {
        restartPolicy: 'OnFailure',
        containers: [{ name: 'main', image: IMAGE, command: ['sh', '-c', 'sleep 0.2; exit 1'] }],
      }),
    );
    const ok = await waitForPhase(t.k.kubelet, 'onfailure-ok', 'Succeeded');
    assert.equal(ok.status?.containerStatuses?.[0]?.state.terminated?.reason, 'Completed');
    assert.equal(ok.status?.containerStatuses?.[0]?.restartCount, 0);
    const ready = ok.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'PodCompleted');
    const bad = await eventually('failing OnFailure container restarted', () => {
      const p = findPod(t.k.kubelet, 'onfailure-bad');
      return (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined;
    });
    assert.equal(bad.status?.phase, 'Running');
  });

  it('succeeds a restartPolicy Never pod whose containers exit 0', async () => {
    await writeManifest(
      t.env,
      'never-ok.yaml',
      podManifest('never-ok', {
        restartPolicy: 'Never',
        containers: [
          { name: 'a', image: IMAGE, command: ['true'] },
          { name: 'b', image: IMAGE, command: ['sh', '-c', 'sleep 0.5'] },
        ],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'never-ok', 'Succeeded');
    for (const cs of view.status?.containerStatuses ?? []) {
      assert.equal(cs.state.terminated?.exitCode, 0);
      assert.equal(cs.restartCount, 0);
    }
  });
});
