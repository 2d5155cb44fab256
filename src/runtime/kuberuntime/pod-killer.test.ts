import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { KubeletPod } from '../../api/types.ts';
import { hasCode } from '../../util/errors.ts';
import { flush } from '../../util/testing.ts';
import { createPodKiller, gracePeriodFor } from './pod-killer.ts';
import { createRuntimeManager } from './runtime-manager.ts';
import type { RuntimeContainerStatus, RuntimePodStatus } from './runtime-pod.ts';
import { fakeRuntimeDeps, makePod, START, stateOf } from '../testing.ts';

/** The kill path on the fake CRI; pods are brought up by a runtime manager on the same fakes. */
async function setup(t: TestContext) {
  const f = await fakeRuntimeDeps(t);
  const removed: string[] = [];
  /** How far the wall clock (the mocked Date) was stepped: monotonic time is Date minus this. */
  let wallSteps = 0;
  const killer = createPodKiller({
    runtime: f.cri,
    recorder: f.recorder,
    logger: f.logger,
    hooks: f.deps.hooks,
    monotonic: () => Date.now() - wallSteps,
    onContainerRemoved: (id) => removed.push(id),
  });
  const manager = createRuntimeManager(f.deps);
  const status = (pod: KubeletPod) =>
    manager.getPodStatus(pod.metadata.uid ?? '', pod.metadata.name ?? '', pod.metadata.namespace ?? '');
  return {
    ...f,
    killer,
    removed,
    status,
    /** Steps the wall clock (the mocked Date) by `ms`; the killer's monotonic clock does not move. */
    stepWall(ms: number) {
      wallSteps += ms;
      t.mock.timers.setTime(Date.now() + ms);
    },
    /** Syncs the pod once and answers its status afterwards. */
    async run(pod: KubeletPod): Promise<RuntimePodStatus> {
      await manager.syncPod(pod, await status(pod));
      return status(pod);
    },
  };
}

const containerNamed = (st: RuntimePodStatus, name: string): RuntimeContainerStatus => {
  const c = st.containers.find((x) => x.name === name);
  if (!c) assert.fail(`no container ${name}`);
  return c;
};

/** A container run with only what pruning looks at. */
const run = (id: string, name: string, state: RuntimeContainerStatus['state']) =>
  ({ id, name, state }) as RuntimeContainerStatus;

/** The runtime status of pod ns/web (no sandbox) holding these container runs. */
const webStatus = (containers: RuntimeContainerStatus[]): RuntimePodStatus => ({
  uid: 'uid-web',
  name: 'web',
  namespace: 'ns',
  sandboxes: [],
  containers,
  timestamp: START,
});

describe('gracePeriodFor', () => {
  it('an override wins (never below 0); else deletion grace, the spec’s, the annotation’s, 30 s; at least 2 s', () => {
    const pod = makePod('web', ['app'], { grace: 45 });
    assert.equal(gracePeriodFor(pod, 10, 0), 0);
    assert.equal(gracePeriodFor(pod, 10, -5), 0);
    assert.equal(gracePeriodFor(pod, 10, 1), 1, 'an override may go below the minimum');
    assert.equal(gracePeriodFor(pod, 10), 45);
    pod.metadata.deletionGracePeriodSeconds = 7;
    assert.equal(gracePeriodFor(pod, 10), 7);
    assert.equal(gracePeriodFor(undefined, 10), 10, 'an orphan: what its annotation kept');
    assert.equal(gracePeriodFor(undefined, undefined), 30);
    assert.equal(gracePeriodFor(makePod('quick', ['app'], { grace: 0 }), undefined), 2);
  });
});

describe('pod kill path on the fake CRI', () => {
  it('a StopContainer that outlives its deadline is reported as DeadlineExceeded after the grace period + 120 s', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { grace: 10 });
    const st = await s.run(pod);
    s.cri.setLatency('stopContainer', Infinity);

    let settled = false;
    const kill = s.killer
      .killContainer({ pod, container: containerNamed(st, 'app'), reason: '' })
      .finally(() => (settled = true));
    kill.catch(() => undefined); // asserted below; keeps the rejection handled meanwhile
    await flush();
    assert.deepEqual(s.cri.callsTo('stopContainer'), [[containerNamed(st, 'app').id, 10]]);
    assert.equal(s.cri.calls.find((c) => c.method === 'stopContainer')?.opts?.timeoutMs, 130_000);

    s.advance(129_999);
    await flush();
    assert.equal(settled, false, 'the runtime gets the whole grace period and more');
    s.advance(1);
    await assert.rejects(kill, (err: unknown) => hasCode(err, 'DeadlineExceeded'));
    assert.deepEqual(
      s.recorder.events.filter((e) => e.reason === 'Killing').map((e) => e.message),
      ['Stopping container app'],
    );
  });

  it('killPod reports a container whose StopContainer timed out, after stopping the others and the sandbox', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app', 'proxy'], { grace: 5 });
    const st = await s.run(pod);
    s.steps();
    s.cri.injectError('stopContainer', 'DEADLINE_EXCEEDED', { once: true, message: 'stop timed out' });

    await assert.rejects(
      s.killer.killPod(pod, st),
      /^Error: failed to kill 1 container\(s\): CRI StopContainer: stop timed out/,
    );
    const after = await s.status(pod);
    assert.equal(
      Object.values(stateOf(after)).filter((x) => x === 'exited').length,
      2,
      'the sandbox stop kills the rest',
    );
    assert.equal(after.sandboxes[0]?.ready, false);
    assert.deepEqual(s.steps().slice(-1), ['stopPodSandbox sandbox:0']);
  });

  it('honours the deletion grace period: a process ignoring SIGTERM is SIGKILLed when it ends, not before', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { grace: 30 });
    const st = await s.run(pod);
    s.cri.ignoreSigterm.add('app');
    pod.metadata.deletionGracePeriodSeconds = 5;

    let done = false;
    const kill = s.killer.killPod(pod, st).then(() => (done = true));
    await flush();
    s.advance(4_999);
    await flush();
    assert.equal(done, false);
    assert.equal(s.cri.latestContainer('app')?.status.state, 'CONTAINER_RUNNING');
    s.advance(1);
    await kill;
    const app = containerNamed(await s.status(pod), 'app');
    assert.equal(app.exitCode, 137);
    assert.equal(app.finishedAt, START + 5_000);
  });

  it('runs the preStop hook once: a repeated kill after an abort goes straight to StopContainer', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { grace: 30 });
    pod.spec.containers[0]!.lifecycle = { preStop: { exec: { command: ['/bin/drain'] } } };
    const st = await s.run(pod);
    s.cri.setLatency('execSync', Infinity);
    const ctl = new AbortController();

    const first = s.killer.killPod(pod, st, undefined, ctl.signal);
    await flush();
    ctl.abort(new Error('a shorter grace period arrived'));
    await assert.rejects(first, /a shorter grace period arrived/);
    assert.equal(s.cri.latestContainer('app')?.status.state, 'CONTAINER_RUNNING');

    s.steps();
    await s.killer.killPod(pod, st, 3);
    assert.equal(s.cri.callsTo('execSync').length, 1);
    assert.deepEqual(s.steps(), ['stopContainer app:0 grace=3', 'stopPodSandbox sandbox:0']);
  });

  it('kills an orphan with the preStop hook and grace period its annotations kept, without events', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { grace: 40 });
    pod.spec.containers[0]!.lifecycle = { preStop: { exec: { command: ['/bin/drain'] } } };
    const st = await s.run(pod);
    s.steps();
    const events = s.recorder.events.length;

    await s.killer.killPod(undefined, st);
    assert.deepEqual(s.cri.callsTo('execSync')[0]?.slice(0, 2), [
      containerNamed(st, 'app').id,
      ['/bin/drain'],
    ]);
    assert.deepEqual(s.steps(), ['stopContainer app:0 grace=40', 'stopPodSandbox sandbox:0']);
    assert.equal(s.recorder.events.length, events, 'no pod to record events on');
  });

  it('prunes all but the two newest exited runs of an app container and the newest of an init container', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { init: ['init'] });
    // Newest first, as getPodStatus answers.
    const st = webStatus([
      run('app-4', 'app', 'running'),
      run('app-3', 'app', 'exited'),
      run('app-2', 'app', 'exited'),
      run('app-1', 'app', 'exited'),
      run('init-2', 'init', 'exited'),
      run('init-1', 'init', 'exited'),
    ]);
    await s.killer.pruneContainers(pod, st);
    assert.deepEqual(s.cri.callsTo('removeContainer'), [['app-2'], ['app-1'], ['init-1']]);
    assert.deepEqual(s.removed, ['app-2', 'app-1', 'init-1'], 'what the status reader remembers goes too');
  });

  it('a prune that fails is logged with the pod and the container, and does not fail the sync', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    s.cri.injectError('removeContainer', 'UNAVAILABLE', { message: 'runtime busy' });
    await s.killer.pruneContainers(
      pod,
      webStatus(['app-0', 'app-1', 'app-2'].map((id) => run(id, 'app', 'exited'))),
    );
    const line = s.logger.lines.find((e) => e.msg === 'failed to prune exited container');
    assert.deepEqual(
      [line?.level, line?.fields.pod, line?.fields.podUID, line?.fields.containerID],
      ['warn', 'ns/web', 'uid-web', 'app-2'],
    );
    assert.deepEqual(s.removed, []);
  });
});

describe('pod killer while the wall clock steps', () => {
  for (const stepMs of [-3_600_000, 7_200_000]) {
    it(`takes the preStop hook's real duration out of the grace period across a ${stepMs / 3_600_000} h step`, async (t) => {
      const s = await setup(t);
      const pod = makePod('web', ['app'], { grace: 30 });
      pod.spec.containers[0]!.lifecycle = { preStop: { exec: { command: ['/bin/drain'] } } };
      const st = await s.run(pod);
      s.cri.setLatency('execSync', 3_000);
      s.steps();
      const kill = s.killer.killPod(pod, st);
      await flush();
      s.stepWall(stepMs);
      t.mock.timers.tick(3_000);
      await kill;
      assert.deepEqual(s.steps(), ['stopContainer app:0 grace=27', 'stopPodSandbox sandbox:0']);
    });
  }
});
