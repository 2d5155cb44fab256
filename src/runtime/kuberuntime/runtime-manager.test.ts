import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import type { KubeletPod } from '../../api/types.ts';
import { hasCode } from '../../util/errors.ts';
import { flush } from '../../util/testing.ts';
import { createRuntimeManager, type PodSyncResult } from './runtime-manager.ts';
import { fakeRuntimeDeps, makePod, START, stateOf } from '../testing.ts';

/**
 * A runtime manager on the fake CRI with the real image manager and back-off. Time is node:test's
 * mock clock (Date and setTimeout), shared by the manager, the image manager and the fakes.
 */
async function setup(t: TestContext) {
  const f = await fakeRuntimeDeps(t);
  const manager = createRuntimeManager(f.deps);
  const status = (pod: KubeletPod) =>
    manager.getPodStatus(pod.metadata.uid ?? '', pod.metadata.name ?? '', pod.metadata.namespace ?? '');
  return {
    ...f,
    manager,
    status,
    /** One pod worker pass: read the status, sync against it. */
    sync: async (pod: KubeletPod): Promise<PodSyncResult> => manager.syncPod(pod, await status(pod)),
  };
}

/** The pod's managed /etc/hosts maps its sandbox's IP (the IP every container was set up with). */
async function assertEtcHostsHasSandboxIP(s: Awaited<ReturnType<typeof setup>>, pod: KubeletPod) {
  const ip = (await s.status(pod)).sandboxes[0]?.ip ?? 'no sandbox';
  const hosts = await readFile(join(s.dir, 'pods', pod.metadata.uid, 'etc-hosts'), 'utf8');
  assert.match(hosts, new RegExp(`^${ip.replaceAll('.', '\\.')}\\s`, 'm'));
}

describe('RuntimeManager on the fake CRI: a pod’s whole life', () => {
  it('from first sync to removal: sandbox, init then app containers, status, kill, remove, nothing left', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app', 'proxy'], { init: ['init'], grace: 20 });

    let r = await s.sync(pod);
    assert.deepEqual([r.started, r.sandboxError, r.startFailures.size], [['init'], undefined, 0]);
    let st = await s.status(pod);
    assert.equal(st.sandboxes.length, 1);
    assert.equal(st.sandboxes[0]?.ready, true);
    assert.match(st.sandboxes[0]?.ip ?? '', /^10\.88\.0\.\d+$/);
    assert.deepEqual(stateOf(st), { init: 'running' });

    s.cri.exitContainer(s.cri.latestContainer('init')!.status.id, 0);
    s.advance(1_000);
    r = await s.sync(pod);
    assert.deepEqual([...r.started].sort(), ['app', 'proxy']);
    st = await s.status(pod);
    assert.deepEqual(stateOf(st), { init: 'exited', app: 'running', proxy: 'running' });
    assert.deepEqual(
      st.containers.filter((c) => c.name === 'init').map((c) => [c.exitCode, c.reason]),
      [[0, 'Completed']],
    );
    s.steps();
    s.advance(1_000);
    r = await s.sync(pod);
    assert.deepEqual([r.started, s.steps()], [[], []], 'a running pod needs nothing');

    await s.manager.killPod(pod, st);
    const kill = s.steps();
    assert.deepEqual(kill.slice(0, 2).sort(), [
      'stopContainer app:0 grace=20',
      'stopContainer proxy:0 grace=20',
    ]);
    assert.deepEqual(kill.slice(2), ['stopPodSandbox sandbox:0']);
    st = await s.status(pod);
    assert.deepEqual(stateOf(st), { init: 'exited', app: 'exited', proxy: 'exited' });
    assert.equal(st.sandboxes[0]?.ready, false);

    await s.manager.removePod(st);
    assert.deepEqual(s.steps().sort(), [
      'removeContainer app:0',
      'removeContainer init:0',
      'removeContainer proxy:0',
      'removePodSandbox sandbox:0',
    ]);
    st = await s.status(pod);
    assert.deepEqual([st.sandboxes, st.containers], [[], []]);
    assert.deepEqual(await s.manager.listPods(), []);
    assert.deepEqual(
      s
        .reasons()
        .filter((x) => x === 'Created' || x === 'Started' || x === 'Killing')
        .sort(),
      ['Created', 'Created', 'Created', 'Killing', 'Killing', 'Started', 'Started', 'Started'],
    );
  });

  it('creates the sandbox, runs init containers one at a time in order, then the app containers', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app', 'proxy'], { init: ['init-a', 'init-b'] });

    let r = await s.sync(pod);
    assert.equal(r.sandboxError, undefined);
    assert.deepEqual(r.started, ['init-a']);
    assert.deepEqual(s.steps(), [
      'runPodSandbox sandbox',
      'createContainer init-a:0',
      'startContainer init-a:0',
    ]);

    s.advance(1_000);
    r = await s.sync(pod);
    assert.deepEqual(r.started, [], 'the next init container waits for the running one');
    assert.deepEqual(s.steps(), []);

    s.cri.exitContainer(s.cri.latestContainer('init-a')!.status.id, 0);
    s.advance(1_000);
    r = await s.sync(pod);
    assert.deepEqual(r.started, ['init-b']);
    assert.deepEqual(s.steps(), ['createContainer init-b:0', 'startContainer init-b:0']);

    s.cri.exitContainer(s.cri.latestContainer('init-b')!.status.id, 0);
    s.advance(1_000);
    r = await s.sync(pod);
    assert.deepEqual(r.started.sort(), ['app', 'proxy']);
    assert.equal(r.startFailures.size, 0);
    assert.deepEqual(s.steps().sort(), [
      'createContainer app:0',
      'createContainer proxy:0',
      'startContainer app:0',
      'startContainer proxy:0',
    ]);

    s.advance(1_000);
    r = await s.sync(pod);
    assert.deepEqual(r.started, [], 'a pod in its desired state needs nothing');
    assert.deepEqual(s.steps(), []);
  });

  it('reads a new sandbox’s IPs once per sync and gives them to every container (/etc/hosts)', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['a', 'b', 'c']);
    const before = s.cri.callsTo('podSandboxStatus').length;
    const r = await s.sync(pod);
    assert.deepEqual(r.started.sort(), ['a', 'b', 'c']);
    assert.equal(
      s.cri.callsTo('podSandboxStatus').length - before,
      1,
      'one PodSandboxStatus, not one per container',
    );
    await assertEtcHostsHasSandboxIP(s, pod);
  });

  it('sets up and starts at most 16 containers of a pod at once, and all of them in the end', async (t) => {
    const s = await setup(t);
    const names = Array.from({ length: 40 }, (_, i) => `c${i}`);
    const pod = makePod('wide', names);
    s.cri.setLatency('createContainer', 1_000);
    const creates = () => s.cri.callsTo('createContainer').length;
    // Host-side setup does real file I/O: turn the loop until `n` creates were asked (real time,
    // bounded), then a while longer to see that no more come.
    const reach = async (n: number) => {
      const until = performance.now() + 5_000;
      while (creates() < n && performance.now() < until) await flush();
      const settled = performance.now() + 50;
      while (performance.now() < settled) await flush();
    };
    const syncing = s.sync(pod);
    await reach(16);
    assert.equal(creates(), 16, 'the first 16, and no more, are in flight');
    for (const n of [32, 40]) {
      s.advance(1_000);
      await reach(n);
      assert.equal(creates(), n);
    }
    s.advance(1_000);
    const r = await syncing;
    assert.equal(r.started.length, 40);
    assert.equal(s.cri.callsTo('createContainer').length, 40);
  });

  it('reports what the runtime holds in getPodStatus: sandbox, IP, states, hash, image, times', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { init: ['init'] });
    await s.sync(pod);
    s.advance(2_000);
    s.cri.exitContainer(s.cri.latestContainer('init')!.status.id, 0);
    s.advance(1_000);
    await s.sync(pod);

    const st = await s.status(pod);
    assert.equal(st.uid, 'uid-web');
    assert.equal(st.sandboxes.length, 1);
    const sb = st.sandboxes[0]!;
    assert.equal(sb.ready, true);
    assert.match(sb.ip, /^10\.88\.0\.\d+$/);
    assert.equal(sb.createdAt, START);
    assert.deepEqual(stateOf(st), { app: 'running', init: 'exited' });
    const app = st.containers[0]!;
    assert.equal(app.name, 'app', 'newest first');
    assert.equal(app.restartCount, 0);
    assert.equal(app.podSandboxId, sb.id);
    assert.notEqual(app.hash, '');
    assert.equal(app.startedAt, START + 3_000);
    assert.equal(app.imageRef, s.images.find('busybox:1.29')?.id, 'created from the pulled image ID');
    assert.equal(app.terminationGracePeriodSeconds, 30);
    const init = st.containers[1]!;
    assert.equal(init.exitCode, 0);
    assert.equal(init.reason, 'Completed');
    assert.equal(init.finishedAt, START + 2_000);
  });

  it('killPod stops every running container with the grace period, then the sandbox; removePod removes all', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app', 'proxy'], { grace: 45 });
    await s.sync(pod);
    s.steps();
    s.advance(1_000);

    await s.manager.killPod(pod, await s.status(pod));
    const steps = s.steps();
    assert.deepEqual(steps.slice(0, 2).sort(), [
      'stopContainer app:0 grace=45',
      'stopContainer proxy:0 grace=45',
    ]);
    assert.deepEqual(steps.slice(2), ['stopPodSandbox sandbox:0'], 'the sandbox only after its containers');
    const killed = await s.status(pod);
    assert.deepEqual(stateOf(killed), { app: 'exited', proxy: 'exited' });
    assert.equal(killed.sandboxes[0]?.ready, false);
    assert.deepEqual(
      s.reasons().filter((r) => r === 'Killing'),
      ['Killing', 'Killing'],
    );

    await s.manager.killPod(pod, killed, 0);
    assert.deepEqual(s.steps(), [], 'nothing left to stop');

    await s.manager.removePod(killed);
    assert.equal(s.cri.containers.size, 0);
    assert.equal(s.cri.sandboxes.size, 0);
    assert.deepEqual((await s.status(pod)).sandboxes, []);
  });

  it('a grace period override replaces the pod’s own', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { grace: 45 });
    await s.sync(pod);
    s.steps();
    await s.manager.killPod(pod, await s.status(pod), 2);
    assert.deepEqual(s.steps(), ['stopContainer app:0 grace=2', 'stopPodSandbox sandbox:0']);
  });

  it('replaces a sandbox that died: kills the containers, removes the old sandbox, starts over on a new one', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    await s.sync(pod);
    const old = s.cri.latestContainer('app')!;
    s.steps();
    s.cri.setSandboxNotReady(old.podSandboxId);
    s.advance(1_000);

    const r = await s.sync(pod);
    assert.deepEqual(r.started, ['app']);
    assert.deepEqual(s.steps(), [
      'stopContainer app:0 grace=30',
      'removePodSandbox sandbox:0',
      'runPodSandbox sandbox',
      'createContainer app:1',
      'startContainer app:1',
    ]);
    assert.ok(s.reasons().includes('SandboxChanged'));
    const st = await s.status(pod);
    assert.equal(st.sandboxes.length, 1);
    assert.equal(st.sandboxes[0]?.attempt, 1);
    assert.deepEqual(stateOf(st), { app: 'running' });
    assert.equal(st.containers[0]?.restartCount, 1, 'the restart count carries over');
  });
});

describe('RuntimeManager on the fake CRI: pod variants', () => {
  it('keeps the sandbox of a host-network pod, which has no IP of its own', async (t) => {
    const s = await setup(t);
    const pod = makePod('host', ['app']);
    pod.spec.hostNetwork = true;
    await s.sync(pod);
    s.steps();
    s.advance(1_000);
    const st = await s.status(pod);
    assert.equal(st.sandboxes[0]?.ip, '');
    assert.equal(st.sandboxes[0]?.hostNetwork, true);
    await s.sync(pod);
    assert.deepEqual(s.steps(), []);
  });

  it('completes a restartPolicy Never pod: its exited container stays, the sandbox is stopped', async (t) => {
    const s = await setup(t);
    const pod = makePod('job', ['work'], { restartPolicy: 'Never' });
    await s.sync(pod);
    s.cri.exitContainer(s.cri.latestContainer('work')!.status.id, 0);
    s.steps();
    s.advance(1_000);
    const r = await s.sync(pod);
    assert.deepEqual(r.started, []);
    assert.deepEqual(s.steps(), ['stopPodSandbox sandbox:0']);
    assert.deepEqual(stateOf(await s.status(pod)), { work: 'exited' });
  });

  it('kills a container whose postStart hook fails and reports PostStartHookError', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    pod.spec.containers[0]!.lifecycle = { postStart: { exec: { command: ['/bin/warm-up'] } } };
    s.cri.execResult = () => ({ stdout: Buffer.from(''), stderr: Buffer.from('cache cold'), exitCode: 2 });

    const r = await s.sync(pod);
    assert.equal(r.startFailures.get('app')?.reason, 'PostStartHookError');
    assert.match(r.startFailures.get('app')?.message ?? '', /cache cold/);
    assert.deepEqual(s.cri.callsTo('execSync')[0]?.[1], ['/bin/warm-up']);
    assert.deepEqual(s.steps().slice(-1), ['stopContainer app:0 grace=30']);
    assert.ok(s.reasons().includes('FailedPostStartHook'));
  });

  it('runs the preStop hook before StopContainer and takes its time off the grace period', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { grace: 30 });
    pod.spec.containers[0]!.lifecycle = { preStop: { exec: { command: ['/bin/drain'] } } };
    await s.sync(pod);
    s.cri.setLatency('execSync', 7_000);

    const kill = s.manager.killPod(pod, await s.status(pod));
    await flush();
    s.advance(7_000);
    await kill;
    assert.deepEqual(s.cri.callsTo('execSync')[0]?.slice(0, 2), [
      s.cri.latestContainer('app')?.status.id,
      ['/bin/drain'],
    ]);
    assert.deepEqual(s.steps().slice(-2), ['stopContainer app:0 grace=23', 'stopPodSandbox sandbox:0']);
  });
});

describe('RuntimeManager on the fake CRI: errors at each CRI step leave a state the next sync retries', () => {
  it('RunPodSandbox fails: a sandboxError, nothing created, and the next sync creates the pod', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    s.cri.injectError('runPodSandbox', 'UNAVAILABLE', { once: true, message: 'CNI not ready' });

    let r = await s.sync(pod);
    assert.match(r.sandboxError ?? '', /^Failed to create pod sandbox: CRI RunPodSandbox: CNI not ready/);
    assert.deepEqual(r.started, []);
    assert.equal(s.cri.sandboxes.size, 0);
    assert.equal(s.cri.containers.size, 0);
    assert.ok(s.reasons().includes('FailedCreatePodSandBox'));

    r = await s.sync(pod);
    assert.equal(r.sandboxError, undefined);
    assert.deepEqual(r.started, ['app']);
    assert.deepEqual(stateOf(await s.status(pod)), { app: 'running' });
  });

  it('PodSandboxStatus of a new sandbox fails: FailedStatusPodSandBox, and the next sync starts the containers in it', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    s.cri.injectError('podSandboxStatus', 'UNAVAILABLE', { once: true, message: 'runtime busy' });

    let r = await s.sync(pod);
    assert.match(
      r.sandboxError ?? '',
      /^Unable to get pod sandbox status: CRI PodSandboxStatus: runtime busy/,
    );
    assert.deepEqual(r.started, []);
    assert.ok(s.reasons().includes('FailedStatusPodSandBox'));

    r = await s.sync(pod);
    assert.deepEqual(r.started, ['app']);
    assert.equal(s.cri.sandboxes.size, 1, 'the sandbox of the first sync is kept');
    await assertEtcHostsHasSandboxIP(s, pod);
  });

  it('PullImage fails: ErrImagePull, then ImagePullBackOff inside the image back-off, then a new pull', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    s.images.injectError('pullImage', 'UNAVAILABLE', { once: true, message: 'registry down' });

    let r = await s.sync(pod);
    assert.equal(r.startFailures.get('app')?.reason, 'ErrImagePull');
    assert.match(r.startFailures.get('app')?.message ?? '', /registry down/);
    assert.equal(s.cri.containers.size, 0, 'no container without its image');
    assert.equal((await s.status(pod)).sandboxes[0]?.ready, true, 'the sandbox stays for the retry');

    s.advance(5_000);
    r = await s.sync(pod);
    assert.equal(r.startFailures.get('app')?.reason, 'ImagePullBackOff');
    assert.equal(s.images.callsTo('pullImage').length, 1);

    s.advance(5_000);
    r = await s.sync(pod);
    assert.deepEqual(r.started, ['app']);
    assert.equal(s.images.callsTo('pullImage').length, 2);
    assert.equal(s.cri.sandboxes.size, 1, 'the same sandbox');
  });

  it('CreateContainer fails: CreateContainerError, nothing left behind, and the next sync creates it', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    s.cri.injectError('createContainer', 'UNKNOWN', { once: true, message: 'no space left on device' });

    let r = await s.sync(pod);
    assert.equal(r.startFailures.get('app')?.reason, 'CreateContainerError');
    assert.match(r.startFailures.get('app')?.message ?? '', /no space left on device/);
    assert.equal(s.cri.containers.size, 0);
    assert.ok(s.recorder.events.some((e) => e.reason === 'Failed' && e.message.includes('no space left')));

    s.advance(1_000);
    r = await s.sync(pod);
    assert.deepEqual(r.started, ['app']);
    assert.deepEqual(stateOf(await s.status(pod)), { app: 'running' });
  });

  it('StartContainer fails: RunContainerError; the next sync starts a new attempt of the container', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    s.cri.injectError('startContainer', 'UNKNOWN', { once: true, message: 'exec: "sh": not found' });

    let r = await s.sync(pod);
    assert.equal(r.startFailures.get('app')?.reason, 'RunContainerError');
    assert.deepEqual(stateOf(await s.status(pod)), { app: 'created' });
    s.steps();

    s.advance(1_000);
    r = await s.sync(pod);
    assert.deepEqual(r.started, ['app']);
    assert.deepEqual(s.steps(), ['createContainer app:1', 'startContainer app:1']);
    const st = await s.status(pod);
    assert.equal(st.containers[0]?.state, 'running');
    assert.equal(st.containers[0]?.restartCount, 1);
  });

  it('a process that cannot start (StartError) is restarted at once, then with crash-loop back-off', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    s.cri.startErrors.set('app', 'exec: "server": executable file not found in $PATH');

    let r = await s.sync(pod);
    assert.equal(r.startFailures.get('app')?.reason, 'RunContainerError');
    assert.match(r.startFailures.get('app')?.message ?? '', /executable file not found/);
    const failed = (await s.status(pod)).containers[0];
    assert.equal(failed?.state, 'exited');
    assert.equal(failed?.exitCode, 128);
    assert.equal(failed?.reason, 'StartError');

    s.advance(1_000);
    r = await s.sync(pod);
    assert.equal(r.startFailures.get('app')?.reason, 'RunContainerError', 'the first retry is immediate');
    s.advance(1_000);
    r = await s.sync(pod);
    assert.equal(r.startFailures.get('app')?.reason, 'CrashLoopBackOff');

    s.cri.startErrors.clear();
    s.advance(10_000);
    r = await s.sync(pod);
    assert.deepEqual(r.started, ['app']);
    assert.equal((await s.status(pod)).containers[0]?.restartCount, 2);
  });

  it('an init container that could not be created holds back the rest and is created again next sync', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { init: ['init-a', 'init-b'] });
    s.cri.injectError('createContainer', 'UNKNOWN', { once: true });

    let r = await s.sync(pod);
    assert.equal(r.startFailures.get('init-a')?.reason, 'CreateContainerError');
    assert.deepEqual(s.steps(), ['runPodSandbox sandbox', 'createContainer init-a:0']);

    s.advance(1_000);
    r = await s.sync(pod);
    assert.deepEqual(r.started, ['init-a']);
    assert.deepEqual(s.steps(), ['createContainer init-a:0', 'startContainer init-a:0']);
  });

  it('getPodStatus leaves out a container or sandbox removed between the list and its status call', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app', 'proxy']);
    await s.sync(pod);
    // The PLEG relists while the pod worker removes a container: the status call comes too late.
    s.cri.setLatency('containerStatus', 1_000);
    let reading = s.status(pod);
    await flush();
    await s.cri.removeContainer(s.cri.latestContainer('proxy')!.status.id);
    s.advance(1_000);
    assert.deepEqual(stateOf(await reading), { app: 'running' });

    s.cri.setLatency('containerStatus', 0);
    s.cri.setLatency('podSandboxStatus', 1_000);
    reading = s.status(pod);
    await flush();
    await s.cri.removePodSandbox(s.cri.latestContainer('app')!.podSandboxId);
    s.advance(1_000);
    const st = await reading;
    assert.deepEqual([st.sandboxes, st.containers], [[], []]);
  });

  it('getPodStatus fails with the CRI error when the runtime cannot answer', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    await s.sync(pod);
    s.cri.injectError('containerStatus', 'UNAVAILABLE');
    await assert.rejects(s.status(pod), (err: unknown) => hasCode(err, 'Unavailable'));
    s.cri.clearErrors();
    assert.deepEqual(stateOf(await s.status(pod)), { app: 'running' });
  });
});

describe('RuntimeManager on the fake CRI: crash-loop back-off', () => {
  it('restarts the first crash at once, then not inside the back-off window, then after it', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    await s.sync(pod);
    const crash = () => s.cri.exitContainer(s.cri.latestContainer('app')!.status.id, 1);

    s.advance(1_000);
    crash();
    s.advance(1_000);
    let r = await s.sync(pod);
    assert.deepEqual(r.started, ['app'], 'the first restart is immediate');
    assert.equal(r.retryAfterMs, undefined);

    s.advance(1_000);
    crash();
    s.advance(1_000);
    s.steps();
    r = await s.sync(pod);
    assert.deepEqual(r.started, []);
    assert.equal(r.startFailures.get('app')?.reason, 'CrashLoopBackOff');
    assert.match(r.startFailures.get('app')?.message ?? '', /^back-off 10s restarting failed container=app/);
    assert.equal(r.retryAfterMs, 9_000, 'the end of the 10 s window, counted from the exit');
    assert.deepEqual(s.steps(), [], 'no container is created inside the window');
    assert.ok(s.reasons().includes('BackOff'));

    s.advance(8_999);
    r = await s.sync(pod);
    assert.equal(r.startFailures.get('app')?.reason, 'CrashLoopBackOff');
    assert.equal(r.retryAfterMs, 1);

    s.advance(1);
    r = await s.sync(pod);
    assert.deepEqual(r.started, ['app']);
    assert.deepEqual(s.steps(), ['createContainer app:2', 'startContainer app:2']);
    assert.equal((await s.status(pod)).containers[0]?.restartCount, 2);

    s.advance(1_000);
    crash();
    s.advance(1_000);
    r = await s.sync(pod);
    assert.equal(r.retryAfterMs, 19_000, 'the window doubled');
  });

  it('keeps only the two newest exited runs of a container', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { restartPolicy: 'Always' });
    await s.sync(pod);
    for (let i = 0; i < 4; i++) {
      s.advance(1_000);
      s.cri.exitContainer(s.cri.latestContainer('app')!.status.id, 1);
      s.advance(400_000); // past any back-off
      await s.sync(pod);
    }
    const st = await s.status(pod);
    assert.deepEqual(
      st.containers.map((c) => `${c.state}:${c.restartCount}`),
      ['running:4', 'exited:3', 'exited:2'],
    );
  });
});

describe('RuntimeManager on the fake CRI: kills that take long', () => {
  it('a StopContainer blocked past its deadline is reported and does not hang the caller', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { grace: 30 });
    await s.sync(pod);
    s.cri.setLatency('stopContainer', Infinity);

    let settled = false;
    const kill = s.manager.killPod(pod, await s.status(pod)).then(
      () => assert.fail('the kill resolved'),
      (err: unknown) => {
        settled = true;
        return err;
      },
    );
    await flush();
    const call = s.cri.calls.find((c) => c.method === 'stopContainer');
    assert.equal(call?.opts?.timeoutMs, 150_000, 'the deadline covers the grace period');

    s.advance(149_999);
    await flush();
    assert.equal(settled, false, 'still waiting inside the deadline');

    s.advance(1);
    const err = await kill;
    assert.ok(err instanceof Error);
    assert.match(
      err.message,
      /^failed to kill 1 container\(s\): CRI StopContainer: context deadline exceeded/,
    );
    assert.ok(hasCode(err.cause, 'DeadlineExceeded'));
    assert.ok(
      s.cri.called().includes('stopPodSandbox'),
      'the sandbox is stopped anyway (containerd kills what is left)',
    );
  });

  it('a container that ignores SIGTERM is stopped at the end of its grace period, with SIGKILL', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { grace: 5 });
    await s.sync(pod);
    s.cri.ignoreSigterm.add('app');

    let done = false;
    const kill = s.manager.killPod(pod, await s.status(pod)).then(() => (done = true));
    await flush();
    s.advance(4_999);
    await flush();
    assert.equal(done, false);
    assert.equal(s.cri.latestContainer('app')?.status.state, 'CONTAINER_RUNNING');

    s.advance(1);
    await kill;
    const st = await s.status(pod);
    assert.equal(st.containers[0]?.exitCode, 137);
    assert.equal(st.containers[0]?.finishedAt, START + 5_000);
  });

  it('an aborted kill rejects at once and leaves the container running for the next kill', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { grace: 30 });
    await s.sync(pod);
    s.cri.ignoreSigterm.add('app');
    const ctl = new AbortController();

    const kill = s.manager.killPod(pod, await s.status(pod), undefined, ctl.signal);
    await flush();
    ctl.abort(new Error('a shorter grace period arrived'));
    await assert.rejects(kill, /a shorter grace period arrived/);
    assert.ok(!s.cri.called().includes('stopPodSandbox'));
    assert.deepEqual(stateOf(await s.status(pod)), { app: 'running' });

    await s.manager.killPod(pod, await s.status(pod), 0);
    assert.deepEqual(stateOf(await s.status(pod)), { app: 'exited' });
  });
});

describe('RuntimeManager on the fake CRI: listPods', () => {
  it('groups sandboxes and containers by the pod UID label, and skips containers no kubelet made', async (t) => {
    const s = await setup(t);
    const a = makePod('a', ['app', 'proxy']);
    const b = makePod('b', ['app']);
    await s.sync(a);
    s.advance(1_000);
    await s.sync(b);
    const sbA = s.cri.latestContainer('proxy', 'uid-a')!.podSandboxId;
    // Someone else's container in pod a's sandbox (e.g. made with crictl): no kubelet labels.
    await s.cri.createContainer(
      sbA,
      { metadata: { name: 'debug', attempt: 0 }, image: { image: 'busybox' } },
      { metadata: { name: 'a', namespace: 'ns', uid: 'uid-a', attempt: 0 } },
    );

    const pods = await s.manager.listPods();
    const byUid = Object.fromEntries(
      pods.map((p) => [
        p.uid,
        {
          name: `${p.namespace}/${p.name}`,
          sandboxes: p.sandboxes.map((x) => x.state),
          containers: p.containers.map((c) => `${c.name}:${c.state}`).sort(),
        },
      ]),
    );
    assert.deepEqual(byUid, {
      'uid-a': { name: 'ns/a', sandboxes: ['ready'], containers: ['app:running', 'proxy:running'] },
      'uid-b': { name: 'ns/b', sandboxes: ['ready'], containers: ['app:running'] },
    });
    assert.equal(pods.find((p) => p.uid === 'uid-a')?.containers[0]?.podSandboxId, sbA);
  });
});
