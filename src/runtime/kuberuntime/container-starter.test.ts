import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Container, KubeletPod } from '../../api/types.ts';
import { flush } from '../../util/testing.ts';
import type { ImageUser } from './container-config.ts';
import { createContainerSetup } from './container-setup.ts';
import { createContainerStarter, type ContainerStartFailure, type StartStep } from './container-starter.ts';
import { createPodKiller, type KillContainerRequest } from './pod-killer.ts';
import { createPodStatusReader } from './pod-status-reader.ts';
import { podIPs } from './runtime-pod.ts';
import { generateSandboxConfig } from './sandbox-config.ts';
import { containerOf, fakeRuntimeDeps, makePod } from '../testing.ts';
import type { Clock } from '../../util/clock.ts';
import { unpacedRuntime } from './pacer.ts';

/**
 * The start path alone on the fake CRI: the real image manager, container setup, hook runner and
 * kill path; the sandbox is made directly with RunPodSandbox.
 */
async function setup(t: TestContext, clock?: Clock) {
  const f = await fakeRuntimeDeps(t);
  const now = clock?.now ?? (() => Date.now());
  const monotonic = clock?.monotonic ?? (() => Date.now());
  const { hooks } = f.deps;
  const killer = createPodKiller({
    runtime: f.cri,
    recorder: f.recorder,
    logger: f.logger,
    hooks,
    monotonic,
  });
  const kills: KillContainerRequest[] = [];
  let imageUser: ImageUser | undefined;
  /** The containers as the volume manager was asked to mount them. */
  const mounted: Container[] = [];
  const start = createContainerStarter({
    runtime: f.cri,
    pacer: unpacedRuntime,
    images: f.deps.images,
    recorder: f.recorder,
    logger: f.logger,
    backoff: f.deps.backoff,
    hooks,
    setup: createContainerSetup({
      ...f.deps,
      imageUser: () => Promise.resolve(imageUser),
      mountsFor: (_pod, container) => {
        mounted.push(container);
        return Promise.resolve([]);
      },
    }),
    killContainer: (req) => {
      kills.push(req);
      return killer.killContainer(req);
    },
    now,
    monotonic,
  });
  const reader = createPodStatusReader({ runtime: f.cri, now });
  return {
    ...f,
    kills,
    mounted,
    setImageUser: (u: ImageUser) => {
      imageUser = u;
    },
    /** Makes the pod's sandbox; the answer starts one of its containers against the runtime's status. */
    async sandbox(pod: KubeletPod) {
      const sandboxConfig = generateSandboxConfig(pod, {
        podLogsDir: f.deps.podLogsDir,
        hostDNS: f.deps.hostDNS(),
        attempt: 0,
      });
      const sandboxId = await f.cri.runPodSandbox(sandboxConfig);
      const { uid = '', name = '', namespace = '' } = pod.metadata;
      return async (container: string, signal?: AbortSignal): Promise<StartStep<string>> => {
        const status = await reader.getPodStatus(uid, name, namespace);
        return start({
          pod,
          container: containerOf(pod, container),
          status,
          sandboxId,
          podIPs: pod.spec.hostNetwork ? [] : podIPs(status),
          sandboxConfig,
          ...(signal ? { signal } : {}),
        });
      };
    },
  };
}

function failureOf(step: StartStep<string>): ContainerStartFailure {
  if (step.ok) assert.fail(`expected a failure, the container started: ${step.value}`);
  return step.failure;
}

describe('container start path on the fake CRI', () => {
  it('pulls the image, creates and starts the container, and answers its ID', async (t) => {
    const s = await setup(t);
    const startIn = await s.sandbox(makePod('web', ['app']));

    const r = await startIn('app');
    assert.ok(r.ok);
    const created = s.cri.latestContainer('app');
    assert.equal(r.value, created?.status.id);
    assert.equal(created?.status.state, 'CONTAINER_RUNNING');
    assert.deepEqual(s.steps(), ['runPodSandbox sandbox', 'createContainer app:0', 'startContainer app:0']);
    assert.equal(s.images.callsTo('pullImage').length, 1);
    assert.deepEqual(
      s.reasons().filter((r) => r === 'Created' || r === 'Started'),
      ['Created', 'Started'],
    );
  });

  it('a PullImage error is ErrImagePull, and nothing is created', async (t) => {
    const s = await setup(t);
    const startIn = await s.sandbox(makePod('web', ['app']));
    s.images.injectError('pullImage', 'UNAVAILABLE', { once: true, message: 'registry down' });

    const f = failureOf(await startIn('app'));
    assert.equal(f.reason, 'ErrImagePull');
    assert.match(f.message, /registry down/);
    assert.deepEqual(s.cri.callsTo('createContainer'), []);
  });

  it('an ImageStatus error is ImageInspectError, and no pull is tried', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    pod.spec.containers[0]!.imagePullPolicy = 'IfNotPresent';
    const startIn = await s.sandbox(pod);
    s.images.injectError('imageStatus', 'UNAVAILABLE', { once: true, message: 'image store locked' });

    const f = failureOf(await startIn('app'));
    assert.equal(f.reason, 'ImageInspectError');
    assert.match(f.message, /^Failed to inspect image "busybox:1.29": .*image store locked/);
    assert.deepEqual(s.images.callsTo('pullImage'), []);
    assert.deepEqual(s.cri.callsTo('createContainer'), []);
  });

  it('a config the kubelet cannot make is CreateContainerConfigError, with a Failed event and no CreateContainer', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    pod.spec.securityContext = { runAsNonRoot: true };
    s.setImageUser({ uid: 0, username: '' });
    const startIn = await s.sandbox(pod);

    const f = failureOf(await startIn('app'));
    assert.equal(f.reason, 'CreateContainerConfigError');
    assert.match(f.message, /image will run as root/);
    assert.deepEqual(s.cri.callsTo('createContainer'), []);
    const failed = s.recorder.events.find((e) => e.reason === 'Failed');
    assert.equal(failed?.message, `Error: ${f.message}`);
  });

  it('a CreateContainer error is CreateContainerError, with a Failed event and no StartContainer', async (t) => {
    const s = await setup(t);
    const startIn = await s.sandbox(makePod('web', ['app']));
    s.cri.injectError('createContainer', 'UNKNOWN', { once: true, message: 'no space left on device' });

    const f = failureOf(await startIn('app'));
    assert.equal(f.reason, 'CreateContainerError');
    assert.match(f.message, /no space left on device/);
    assert.deepEqual(s.cri.callsTo('startContainer'), []);
    assert.equal(s.recorder.events.find((e) => e.reason === 'Failed')?.message, `Error: ${f.message}`);
    assert.ok(!s.reasons().includes('Created'));
  });

  it('a StartContainer error is RunContainerError, and the container stays created', async (t) => {
    const s = await setup(t);
    const startIn = await s.sandbox(makePod('web', ['app']));
    s.cri.injectError('startContainer', 'UNKNOWN', { once: true, message: 'exec: "sh": not found' });

    const f = failureOf(await startIn('app'));
    assert.equal(f.reason, 'RunContainerError');
    assert.match(f.message, /exec: "sh": not found/);
    assert.equal(s.cri.latestContainer('app')?.status.state, 'CONTAINER_CREATED');
    assert.deepEqual(
      s.reasons().filter((r) => r === 'Created' || r === 'Started' || r === 'Failed'),
      ['Created', 'Failed'],
    );
  });

  it('a failed postStart hook kills the container with the pod’s grace period and is PostStartHookError', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app'], { grace: 20 });
    pod.spec.containers[0]!.lifecycle = { postStart: { exec: { command: ['/bin/warm-up'] } } };
    s.cri.execResult = () => ({ stdout: Buffer.from(''), stderr: Buffer.from('cache cold'), exitCode: 2 });
    const startIn = await s.sandbox(pod);

    const f = failureOf(await startIn('app'));
    assert.equal(f.reason, 'PostStartHookError');
    assert.match(f.message, /cache cold/);
    const id = s.cri.latestContainer('app')?.status.id ?? '';
    assert.deepEqual(
      s.kills.map((k) => [k.container.id, k.reason]),
      [[id, 'FailedPostStartHook']],
    );
    assert.deepEqual(s.steps().slice(-1), ['stopContainer app:0 grace=20']);
    assert.equal(s.cri.latestContainer('app')?.status.state, 'CONTAINER_EXITED');
    const event = s.recorder.events.find((e) => e.reason === 'FailedPostStartHook');
    assert.ok(event && !event.message.includes(id), 'the event names the container, not its ID');
  });

  it('a postStart failure whose kill fails is still PostStartHookError, and the kill error is logged', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    pod.spec.containers[0]!.lifecycle = { postStart: { exec: { command: ['/bin/warm-up'] } } };
    s.cri.execResult = () => ({ stdout: Buffer.from(''), stderr: Buffer.from('boom'), exitCode: 1 });
    s.cri.injectError('stopContainer', 'UNAVAILABLE', { message: 'runtime gone' });
    const startIn = await s.sandbox(pod);

    assert.equal(failureOf(await startIn('app')).reason, 'PostStartHookError');
    const line = s.logger.lines.find(
      (e) => e.msg === 'failed to kill the container whose postStart hook failed',
    );
    assert.equal(line?.level, 'error');
    assert.equal(line?.fields.pod, 'ns/web');
    assert.equal(line?.fields.podUID, 'uid-web');
    assert.equal(line?.fields.container, 'app');
    assert.match(String(line?.fields.err), /runtime gone/);
  });

  it('an abort during the postStart hook rejects instead of reporting a failure', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    pod.spec.containers[0]!.lifecycle = { postStart: { exec: { command: ['/bin/warm-up'] } } };
    s.cri.setLatency('execSync', Infinity);
    const startIn = await s.sandbox(pod);
    const ctl = new AbortController();

    const starting = startIn('app', ctl.signal);
    // The steps before the hook touch the disk: wait in real time (the clock is mocked).
    const until = performance.now() + 5_000;
    while (s.cri.callsTo('execSync').length === 0 && performance.now() < until) await flush(1);
    assert.equal(s.cri.callsTo('execSync').length, 1, 'the hook runs');
    ctl.abort(new Error('pod deleted'));
    await assert.rejects(starting, /pod deleted/);
    assert.deepEqual(s.kills, [], 'the kill is the terminating pod’s job');
  });

  it('mounts a subPathExpr as the subPath it expands to from the container environment', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    const app = pod.spec.containers[0]!;
    app.env = [{ name: 'POD_NAME', value: 'web-0' }];
    app.volumeMounts = [{ name: 'logs', mountPath: '/logs', subPathExpr: 'pods/$(POD_NAME)' }];
    pod.spec.volumes = [{ name: 'logs', emptyDir: {} }];
    const startIn = await s.sandbox(pod);
    assert.ok((await startIn('app')).ok);
    assert.deepEqual(s.mounted[0]?.volumeMounts, [
      { name: 'logs', mountPath: '/logs', subPath: 'pods/web-0' },
    ]);
  });

  it('a subPathExpr naming a variable the container lacks is CreateContainerConfigError', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    pod.spec.containers[0]!.volumeMounts = [{ name: 'logs', mountPath: '/logs', subPathExpr: '$(POD_NAME)' }];
    pod.spec.volumes = [{ name: 'logs', emptyDir: {} }];
    const startIn = await s.sandbox(pod);
    const failure = failureOf(await startIn('app'));
    assert.equal(failure.reason, 'CreateContainerConfigError');
    assert.match(failure.message, /missing value for POD_NAME/);
    assert.equal(s.cri.callsTo('createContainer').length, 0);
  });

  it('an abort during CreateContainer rejects: no CreateContainerError, no Failed event', async (t) => {
    const s = await setup(t);
    const pod = makePod('web', ['app']);
    s.cri.setLatency('createContainer', Infinity);
    const startIn = await s.sandbox(pod);
    const ctl = new AbortController();
    const starting = startIn('app', ctl.signal);
    const until = performance.now() + 5_000;
    while (s.cri.callsTo('createContainer').length === 0 && performance.now() < until) await flush(1);
    assert.equal(s.cri.callsTo('createContainer').length, 1, 'the create was sent');
    ctl.abort(new Error('pod deleted'));
    await assert.rejects(starting, /pod deleted/);
    assert.ok(!s.recorder.events.some((e) => e.reason === 'Failed'), JSON.stringify(s.recorder.events));
  });

  it('inside the crash-loop back-off window: CrashLoopBackOff with the time left, and no CRI call', async (t) => {
    const s = await setup(t);
    const startIn = await s.sandbox(makePod('web', ['app']));
    const crash = () => s.cri.exitContainer(s.cri.latestContainer('app')!.status.id, 1);
    assert.ok((await startIn('app')).ok);
    crash();
    s.advance(1_000);
    assert.ok((await startIn('app')).ok, 'the first crash restarts at once');
    assert.equal(s.cri.latestContainer('app')?.config.metadata.attempt, 1);
    crash();
    s.advance(1_000);
    s.steps();

    const f = failureOf(await startIn('app'));
    assert.deepEqual(f, {
      reason: 'CrashLoopBackOff',
      message: 'back-off 10s restarting failed container=app pod=ns/web',
      retryAfterMs: 9_000,
    });
    assert.deepEqual(s.steps(), []);
    assert.ok(s.reasons().includes('BackOff'));

    s.advance(9_000);
    assert.ok((await startIn('app')).ok, 'started at the end of the window');
    assert.equal(s.cri.latestContainer('app')?.config.metadata.attempt, 2);
  });
});

describe('crash-loop back-off while the wall clock steps', () => {
  /**
   * A container that crashed twice (the second crash 1 s ago): the wall clock is node:test's mocked
   * Date (the fake CRI stamps the finish with it), monotonic time a counter both move with `advance`.
   */
  async function crashedTwice(t: TestContext, stepBeforeFirstLook = 0) {
    let mono = 1_000_000;
    const s = await setup(t, { now: () => Date.now(), monotonic: () => mono });
    const advance = (ms: number) => {
      s.advance(ms);
      mono += ms;
    };
    const stepWall = (ms: number) => t.mock.timers.setTime(Date.now() + ms);
    const startIn = await s.sandbox(makePod('web', ['app']));
    const crash = () => s.cri.exitContainer(s.cri.latestContainer('app')!.status.id, 1);
    assert.ok((await startIn('app')).ok);
    crash();
    advance(1_000);
    assert.ok((await startIn('app')).ok, 'the first crash restarts at once');
    crash();
    stepWall(stepBeforeFirstLook);
    advance(1_000);
    return { s, startIn, advance, stepWall };
  }

  /** The time left in the crash-loop window (fails the test if the answer is anything else). */
  function retryAfter(step: StartStep<string>): number {
    const f = failureOf(step);
    if (f.reason !== 'CrashLoopBackOff') assert.fail(`expected CrashLoopBackOff, got ${f.reason}`);
    return f.retryAfterMs;
  }

  for (const stepMs of [-3_600_000, 7_200_000]) {
    it(`ends the window 10 s after the crash when the wall clock steps ${stepMs / 3_600_000} h inside it`, async (t) => {
      const { startIn, advance, stepWall } = await crashedTwice(t);
      assert.equal(retryAfter(await startIn('app')), 9_000);
      stepWall(stepMs);
      assert.equal(retryAfter(await startIn('app')), 9_000, 'the step moved nothing');
      advance(8_999);
      assert.equal(failureOf(await startIn('app')).reason, 'CrashLoopBackOff');
      advance(1);
      assert.ok((await startIn('app')).ok, 'started 10 s after the crash');
    });
  }

  it('counts a crash stamped after the wall clock stepped back as just now: at most one window late', async (t) => {
    const { startIn, advance } = await crashedTwice(t, -3_600_000);
    const left = retryAfter(await startIn('app'));
    assert.ok(left <= 10_000, `retry after ${left} ms`);
    advance(10_000);
    assert.ok((await startIn('app')).ok);
  });
});
