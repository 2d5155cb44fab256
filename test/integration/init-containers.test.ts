import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IMAGE, containersOf, podManifest, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, waitForPhase, useKubelet } from './support.ts';
import { LABEL_CONTAINER_NAME } from '../../src/config/defaults.ts';

describe('init containers on real containerd', () => {
  const t = useKubelet();

  it('runs init containers one at a time, in order, before the app containers', async () => {
    await writeManifest(
      t.env,
      'ordered.yaml',
      podManifest('ordered', {
        initContainers: [
          { name: 'init-1', image: IMAGE, command: ['sh', '-c', 'sleep 0.5'] },
          { name: 'init-2', image: IMAGE, command: ['sh', '-c', 'sleep 0.3'] },
        ],
        containers: [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'ordered', 'Running');
    const uid = view.pod.metadata.uid ?? '';
    const statuses = await Promise.all(
      (await containersOf(t.env, uid)).map((c) => t.env.cri.runtime.containerStatus(c.id)),
    );
    const by = (name: string) => {
      const s = statuses.find((x) => x.labels[LABEL_CONTAINER_NAME] === name);
      assert.ok(s, `container ${name} exists`);
      return s;
    };
    const i1 = by('init-1');
    const i2 = by('init-2');
    const app = by('app');
    assert.ok(i1.finishedAt <= i2.startedAt, 'init-2 started after init-1 finished');
    assert.ok(i2.finishedAt <= app.startedAt, 'app started after init-2 finished');
    const inits = view.status?.initContainerStatuses ?? [];
    assert.deepEqual(
      inits.map((s) => [s.name, s.state.terminated?.reason]),
      [
        ['init-1', 'Completed'],
        ['init-2', 'Completed'],
      ],
    );
    assert.equal(view.status?.conditions?.find((c) => c.type === 'Initialized')?.status, 'True');
  });

  it('blocks app containers while an init container fails, and retries it under restartPolicy Always', async () => {
    await writeManifest(
      t.env,
      'blocked.yaml',
      podManifest('blocked', {
        initContainers: [{ name: 'init-fail', image: IMAGE, command: ['sh', '-c', 'exit 1'] }],
        containers: [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }],
      }),
    );
    const view = await eventually('init container restarted', () => {
      const p = findPod(t.k.kubelet, 'blocked');
      return (p?.status?.initContainerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined;
    });
    assert.equal(view.status?.phase, 'Pending');
    assert.equal(view.status?.containerStatuses?.[0]?.state.waiting?.reason, 'PodInitializing');
    const initialized = view.status?.conditions?.find((c) => c.type === 'Initialized');
    assert.equal(initialized?.status, 'False');
    assert.equal(initialized?.reason, 'ContainersNotInitialized');
    const uid = view.pod.metadata.uid ?? '';
    const names = (await containersOf(t.env, uid)).map((c) => c.labels[LABEL_CONTAINER_NAME]);
    assert.ok(!names.includes('app'), 'the app container was never created');
  });

  it('fails the pod when an init container fails under restartPolicy Never', async () => {
    await writeManifest(
      t.env,
      'init-never.yaml',
      podManifest('init-never', {
        restartPolicy: 'Never',
        initContainers: [{ name: 'init-fail', image: IMAGE, command: ['sh', '-c', 'exit 2'] }],
        containers: [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'init-never', 'Failed');
    assert.equal(view.status?.initContainerStatuses?.[0]?.state.terminated?.exitCode, 2);
    assert.equal(view.status?.initContainerStatuses?.[0]?.restartCount, 0);
    const names = (await containersOf(t.env, view.pod.metadata.uid ?? '')).map(
      (c) => c.labels[LABEL_CONTAINER_NAME],
    );
    assert.deepEqual(names, ['init-fail']);
  });
});
