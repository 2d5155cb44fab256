import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { describe, it, type TestContext } from 'node:test';
import type { KubeletPod } from '../../api/types.ts';
import { createPodStatusReader } from './pod-status-reader.ts';
import { createRuntimeManager } from './runtime-manager.ts';
import { fakeRuntimeDeps, makePod, START } from '../testing.ts';

/** A status reader on the fake CRI; pods are brought up by a runtime manager on the same fakes. */
async function setup(t: TestContext) {
  const f = await fakeRuntimeDeps(t);
  const reader = createPodStatusReader({
    runtime: f.cri,
    now: () => Date.now(),
    monotonic: () => Date.now(),
  });
  const manager = createRuntimeManager(f.deps);
  const status = (pod: KubeletPod) =>
    reader.getPodStatus(pod.metadata.uid ?? '', pod.metadata.name ?? '', pod.metadata.namespace ?? '');
  return {
    ...f,
    reader,
    status,
    start: async (pod: KubeletPod) => manager.syncPod(pod, await status(pod)),
    /** The container's termination-message file on the host. */
    messageFile(name: string): string {
      const c = this.cri.latestContainer(name);
      const path = c?.config.mounts?.find((m) => m.containerPath === '/dev/termination-log')?.hostPath;
      if (!path) assert.fail(`container ${name} has no termination-message file`);
      return path;
    },
  };
}

describe('pod status reader on the fake CRI', () => {
  it('reads what the kubelet wrote at creation back from the labels and annotations, newest run first', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { grace: 45 });
    await s.start(pod);
    s.cri.exitContainer(s.cri.latestContainer('app')!.status.id, 1);
    s.advance(1_000);
    await s.start(pod);

    const st = await s.status(pod);
    assert.deepEqual(
      st.containers.map((c) => [c.name, c.state, c.restartCount, c.attempt, c.terminationGracePeriodSeconds]),
      [
        ['app', 'running', 1, 1, 45],
        ['app', 'exited', 0, 0, 45],
      ],
    );
    assert.equal(st.containers[0]?.hash, st.containers[1]?.hash);
    assert.notEqual(st.containers[0]?.hash, '');
    assert.equal(st.containers[1]?.finishedAt, START);
    assert.equal(st.timestamp, START + 1_000);
  });

  it('reads an exited container’s termination message once, until the container is forgotten', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    await s.start(pod);
    await writeFile(s.messageFile('app'), 'config missing');
    s.cri.exitContainer(s.cri.latestContainer('app')!.status.id, 1);

    assert.equal((await s.status(pod)).containers[0]?.message, 'config missing');
    await writeFile(s.messageFile('app'), 'rewritten later');
    assert.equal(
      (await s.status(pod)).containers[0]?.message,
      'config missing',
      'an exited message never changes',
    );

    s.reader.forgetContainer(s.cri.latestContainer('app')!.status.id);
    assert.equal((await s.status(pod)).containers[0]?.message, 'rewritten later');
  });

  it('reads a message taken from the logs again until the log has settled', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    pod.spec.containers[0]!.terminationMessagePolicy = 'FallbackToLogsOnError';
    await s.start(pod);
    const { logPath, id } = s.cri.latestContainer('app')!.status;
    const log = (text: string) =>
      writeFile(logPath ?? '', `2026-01-10T08:00:00.000000000Z stderr F ${text}\n`);
    await log('panic: first line');
    s.cri.exitContainer(id, 2);

    assert.equal((await s.status(pod)).containers[0]?.message, 'panic: first line\n');
    await log('panic: all lines');
    assert.equal((await s.status(pod)).containers[0]?.message, 'panic: all lines\n', 'still being copied');

    s.advance(2_001);
    assert.equal((await s.status(pod)).containers[0]?.message, 'panic: all lines\n');
    await log('too late');
    assert.equal((await s.status(pod)).containers[0]?.message, 'panic: all lines\n', 'settled: remembered');
  });

  it('lists pods with two list calls and no status call per sandbox or container', async (t) => {
    const s = await setup(t);
    await s.start(makePod('a', ['app', 'proxy']));
    await s.start(makePod('b', ['app']));
    const before = s.cri.calls.length;

    const pods = await s.reader.listPods();
    assert.deepEqual(pods.map((p) => [p.uid, p.sandboxes.length, p.containers.length]).sort(), [
      ['uid-a', 1, 2],
      ['uid-b', 1, 1],
    ]);
    assert.deepEqual(
      s.cri.calls
        .slice(before)
        .map((c) => c.method)
        .sort(),
      ['listContainers', 'listPodSandbox'],
    );
  });
});

describe('pod status reader while the wall clock steps', () => {
  /** A pod running on the fake CRI, then the wall clock steps back an hour and its container crashes. */
  async function crashAfterBackwardStep(t: TestContext) {
    const f = await fakeRuntimeDeps(t);
    let mono = 50_000;
    const manager = createRuntimeManager({ ...f.deps, monotonic: () => mono });
    const reader = createPodStatusReader({ runtime: f.cri, now: () => Date.now(), monotonic: () => mono });
    const read = (pod: KubeletPod) =>
      reader.getPodStatus(pod.metadata.uid, pod.metadata.name, pod.metadata.namespace);
    const pod = makePod('web', ['app']);
    await manager.syncPod(pod, await read(pod));
    const before = await read(pod);
    t.mock.timers.setTime(START - 3_600_000);
    mono += 1_000;
    f.cri.exitContainer(f.cri.latestContainer('app')!.status.id, 1);
    await manager.syncPod(pod, await read(pod)); // the first crash restarts at once
    return { before, after: await read(pod) };
  }

  it('stamps reads on the monotonic clock: a read after a backward wall step is the newer one', async (t) => {
    const { before, after } = await crashAfterBackwardStep(t);
    assert.ok(after.timestamp > before.timestamp, `${after.timestamp} > ${before.timestamp}`);
  });
});

describe('pod status reader: order of instances', () => {
  it('lists a container restarted after a backward wall step before the one it replaced (by attempt)', async (t) => {
    const f = await fakeRuntimeDeps(t);
    const reader = createPodStatusReader({
      runtime: f.cri,
      now: () => Date.now(),
      monotonic: () => Date.now(),
    });
    const manager = createRuntimeManager(f.deps);
    const read = (pod: KubeletPod) =>
      reader.getPodStatus(pod.metadata.uid, pod.metadata.name, pod.metadata.namespace);
    const pod = makePod('web', ['app']);
    await manager.syncPod(pod, await read(pod));
    t.mock.timers.setTime(START - 3_600_000);
    f.cri.exitContainer(f.cri.latestContainer('app')!.status.id, 1);
    await manager.syncPod(pod, await read(pod));
    const after = await read(pod);
    assert.deepEqual(
      after.containers.map((c) => [c.state, c.restartCount]),
      [
        ['running', 1],
        ['exited', 0],
      ],
    );
    assert.ok(
      after.containers[0]!.createdAt < after.containers[1]!.createdAt,
      'created "earlier" by the wall',
    );
  });
});
