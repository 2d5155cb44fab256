import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type {
  Container,
  ContainerState,
  ContainerStatus,
  Pod,
  PodCondition,
  PodSpec,
  PodStatus,
  RestartPolicy,
} from '../api/types.ts';
import type {
  RuntimeContainerState,
  RuntimeContainerStatus,
  RuntimePodStatus,
} from '../runtime/kuberuntime/runtime-pod.ts';
import {
  computePodStatus,
  containerID,
  isTerminalPhase,
  podPhase,
  type StatusInputs,
  type WaitingReason,
} from './pod-status.ts';

// ---- podPhase (upstream getPhase) ----

const running: ContainerState = { running: { startedAt: '2026-01-01T00:00:00Z' } };
const waiting: ContainerState = { waiting: { reason: 'ContainerCreating' } };
const succeeded: ContainerState = { terminated: { exitCode: 0, reason: 'Completed' } };
const failed: ContainerState = { terminated: { exitCode: 1, reason: 'Error' } };

function apiStatus(name: string, state: ContainerState, lastState: ContainerState = {}): ContainerStatus {
  return { name, state, lastState, ready: false, restartCount: 0, image: 'busybox:1.29', imageID: '' };
}

function spec(policy: RestartPolicy | undefined, apps: string[], inits: string[] = []): PodSpec {
  const s: PodSpec = { containers: apps.map((name) => ({ name })) };
  if (inits.length > 0) s.initContainers = inits.map((name) => ({ name }));
  if (policy) s.restartPolicy = policy;
  return s;
}

describe('podPhase', () => {
  const ab = ['a', 'b'];
  const cases: {
    desc: string;
    policy?: RestartPolicy;
    app: ContainerStatus[];
    want: PodStatus['phase'];
  }[] = [
    {
      desc: 'all containers running',
      app: [apiStatus('a', running), apiStatus('b', running)],
      want: 'Running',
    },
    {
      desc: 'all containers waiting',
      app: [apiStatus('a', waiting), apiStatus('b', waiting)],
      want: 'Pending',
    },
    {
      desc: 'one running, one waiting',
      app: [apiStatus('a', running), apiStatus('b', waiting)],
      want: 'Pending',
    },
    { desc: 'one running, one without a status', app: [apiStatus('a', running)], want: 'Pending' },
    {
      desc: 'all running but one waiting to restart after a termination',
      app: [apiStatus('a', running), apiStatus('b', waiting, failed)],
      want: 'Running',
    },
    {
      desc: 'all stopped with restartPolicy Always',
      policy: 'Always',
      app: [apiStatus('a', succeeded), apiStatus('b', failed)],
      want: 'Running',
    },
    {
      desc: 'one running, one stopped with restartPolicy Never',
      policy: 'Never',
      app: [apiStatus('a', running), apiStatus('b', failed)],
      want: 'Running',
    },
    {
      desc: 'all succeeded with restartPolicy Never',
      policy: 'Never',
      app: [apiStatus('a', succeeded), apiStatus('b', succeeded)],
      want: 'Succeeded',
    },
    {
      desc: 'one failed with restartPolicy Never',
      policy: 'Never',
      app: [apiStatus('a', succeeded), apiStatus('b', failed)],
      want: 'Failed',
    },
    {
      desc: 'all succeeded with restartPolicy OnFailure',
      policy: 'OnFailure',
      app: [apiStatus('a', succeeded), apiStatus('b', succeeded)],
      want: 'Succeeded',
    },
    {
      desc: 'one failed with restartPolicy OnFailure (it will restart)',
      policy: 'OnFailure',
      app: [apiStatus('a', succeeded), apiStatus('b', failed)],
      want: 'Running',
    },
    {
      desc: 'one waiting to restart after a failure with restartPolicy OnFailure',
      policy: 'OnFailure',
      app: [apiStatus('a', succeeded), apiStatus('b', { waiting: { reason: 'CrashLoopBackOff' } }, failed)],
      want: 'Running',
    },
    { desc: 'no container statuses at all', app: [], want: 'Pending' },
  ];
  for (const c of cases) {
    it(`is ${c.want} when ${c.desc}`, () => {
      assert.equal(podPhase(spec(c.policy, ab), [], c.app), c.want);
    });
  }

  const initCases: {
    desc: string;
    policy: RestartPolicy;
    init: ContainerStatus[];
    app: ContainerStatus[];
    want: PodStatus['phase'];
  }[] = [
    {
      desc: 'an init container runs',
      policy: 'Always',
      init: [apiStatus('i', running)],
      app: [apiStatus('a', waiting)],
      want: 'Pending',
    },
    {
      desc: 'an init container has no status yet',
      policy: 'Always',
      init: [],
      app: [apiStatus('a', waiting)],
      want: 'Pending',
    },
    {
      desc: 'an init container waits without a previous termination',
      policy: 'Always',
      init: [apiStatus('i', waiting)],
      app: [apiStatus('a', waiting)],
      want: 'Pending',
    },
    {
      desc: 'an init container failed and restartPolicy is Never',
      policy: 'Never',
      init: [apiStatus('i', failed)],
      app: [apiStatus('a', waiting)],
      want: 'Failed',
    },
    {
      desc: 'an init container waits to restart after a failure and restartPolicy is Never',
      policy: 'Never',
      init: [apiStatus('i', waiting, failed)],
      app: [apiStatus('a', waiting)],
      want: 'Failed',
    },
    {
      desc: 'an init container failed and restartPolicy is OnFailure',
      policy: 'OnFailure',
      init: [apiStatus('i', waiting, failed)],
      app: [apiStatus('a', waiting)],
      want: 'Pending',
    },
    {
      desc: 'init succeeded and the app container runs',
      policy: 'Always',
      init: [apiStatus('i', succeeded)],
      app: [apiStatus('a', running)],
      want: 'Running',
    },
    {
      desc: 'init succeeded and the app container is still being created',
      policy: 'Always',
      init: [apiStatus('i', succeeded)],
      app: [apiStatus('a', waiting)],
      want: 'Pending',
    },
  ];
  for (const c of initCases) {
    it(`is ${c.want} when ${c.desc}`, () => {
      assert.equal(podPhase(spec(c.policy, ['a'], ['i']), c.init, c.app), c.want);
    });
  }
});

describe('isTerminalPhase', () => {
  it('is true only for Succeeded and Failed', () => {
    assert.deepEqual(
      (['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown', undefined] as const).map(isTerminalPhase),
      [false, false, true, true, false, false],
    );
  });
});

// ---- computePodStatus ----

const T0 = Date.parse('2026-03-01T10:00:00Z');
const T1 = T0 + 60_000;
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function makePod(
  policy?: RestartPolicy,
  containers: Container[] = [{ name: 'app', image: 'busybox:1.29' }],
): Pod {
  const pod: Pod = {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
    spec: { containers },
  };
  if (policy) pod.spec.restartPolicy = policy;
  return pod;
}

let seq = 0;
function rc(
  name: string,
  state: RuntimeContainerState,
  overrides: Partial<RuntimeContainerStatus> = {},
): RuntimeContainerStatus {
  seq++;
  return {
    id: `c${seq}`,
    name,
    state,
    createdAt: T0,
    startedAt: state === 'created' ? 0 : T0 + 1_000,
    finishedAt: state === 'exited' ? T0 + 2_000 : 0,
    exitCode: 0,
    reason: '',
    message: '',
    image: 'docker.io/library/busybox:1.29',
    imageRef: 'sha256:1234',
    hash: 'abcd',
    restartCount: 0,
    podSandboxId: 's1',
    attempt: 0,
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    terminationGracePeriodSeconds: undefined,
    ...overrides,
  };
}

function runtimeOf(containers: RuntimeContainerStatus[], ip = '10.88.0.5'): RuntimePodStatus {
  return {
    uid: 'uid-1',
    name: 'web',
    namespace: 'default',
    sandboxes: [{ id: 's1', ready: true, createdAt: T0, attempt: 0, ip, ips: [], hostNetwork: false }],
    containers,
    timestamp: T0 + 5_000,
  };
}

function inputs(pod: Pod, runtime: RuntimePodStatus, over: Partial<StatusInputs> = {}): StatusInputs {
  return {
    pod,
    runtime,
    previous: undefined,
    waiting: new Map<string, WaitingReason>(),
    hostIP: '192.168.1.10',
    now: () => T0,
    ...over,
  };
}

function cond(status: PodStatus, type: string): PodCondition {
  const c = status.conditions?.find((x) => x.type === type);
  assert.ok(c, `no ${type} condition`);
  return c;
}

function app(status: PodStatus, name = 'app'): ContainerStatus {
  const c = status.containerStatuses?.find((x) => x.name === name);
  assert.ok(c, `no status for ${name}`);
  return c;
}

describe('computePodStatus', () => {
  it('reports containers as ContainerCreating before anything started', () => {
    const pod = makePod();
    const runtime = runtimeOf([]);
    runtime.sandboxes = [];
    const s = computePodStatus(inputs(pod, runtime));
    assert.equal(s.phase, 'Pending');
    assert.deepEqual(app(s).state, { waiting: { reason: 'ContainerCreating' } });
    assert.equal(app(s).ready, false);
    assert.equal(app(s).restartCount, 0);
    assert.equal(s.startTime, iso(T0));
    assert.equal(s.hostIP, '192.168.1.10');
    assert.equal(s.podIP, undefined);
    assert.equal(s.initContainerStatuses, undefined);
    assert.equal(cond(s, 'Ready').status, 'False');
    assert.equal(cond(s, 'Ready').reason, 'ContainersNotReady');
    assert.equal(cond(s, 'Ready').message, 'containers with unready status: [app]');
    assert.equal(cond(s, 'PodScheduled').status, 'True');
    assert.equal(cond(s, 'Initialized').status, 'True');
  });

  it('reports PodInitializing while init containers are pending', () => {
    const pod = makePod();
    pod.spec.initContainers = [
      { name: 'init1', image: 'busybox:1.29' },
      { name: 'init2', image: 'busybox:1.29' },
    ];
    const s = computePodStatus(inputs(pod, runtimeOf([rc('init1', 'running')])));
    assert.equal(s.phase, 'Pending');
    assert.deepEqual(
      s.initContainerStatuses?.map((c) => [c.name, Object.keys(c.state)[0]]),
      [
        ['init1', 'running'],
        ['init2', 'waiting'],
      ],
    );
    assert.deepEqual(s.initContainerStatuses?.[1]?.state, { waiting: { reason: 'PodInitializing' } });
    assert.deepEqual(app(s).state, { waiting: { reason: 'PodInitializing' } });
    const init = cond(s, 'Initialized');
    assert.equal(init.status, 'False');
    assert.equal(init.reason, 'ContainersNotInitialized');
    assert.equal(init.message, 'containers with incomplete status: [init1 init2]');
  });

  it('marks the pod Initialized once every init container exited 0', () => {
    const pod = makePod();
    pod.spec.initContainers = [{ name: 'init1', image: 'busybox:1.29' }];
    const s = computePodStatus(inputs(pod, runtimeOf([rc('app', 'running'), rc('init1', 'exited')])));
    assert.equal(cond(s, 'Initialized').status, 'True');
    assert.equal(s.initContainerStatuses?.[0]?.state.terminated?.reason, 'Completed');
    assert.equal(s.phase, 'Running');
  });

  it('reports a running container as ready and the pod Running and Ready', () => {
    const pod = makePod();
    const c = rc('app', 'running', { restartCount: 0 });
    const s = computePodStatus(inputs(pod, runtimeOf([c])));
    assert.equal(s.phase, 'Running');
    const st = app(s);
    assert.deepEqual(st.state, { running: { startedAt: iso(T0 + 1_000) } });
    assert.equal(st.ready, true);
    assert.equal(st.started, true);
    assert.equal(st.containerID, containerID(c.id));
    assert.equal(st.containerID, `containerd://${c.id}`);
    assert.equal(st.imageID, 'sha256:1234');
    assert.equal(st.image, 'docker.io/library/busybox:1.29');
    assert.equal(cond(s, 'Ready').status, 'True');
    assert.equal(cond(s, 'Ready').reason, undefined);
    assert.equal(cond(s, 'ContainersReady').status, 'True');
  });

  it('reports CrashLoopBackOff as waiting, with the last termination as lastState', () => {
    const pod = makePod('Always');
    const newest = rc('app', 'exited', { exitCode: 1, restartCount: 3 });
    const older = rc('app', 'exited', { exitCode: 1, restartCount: 2, createdAt: T0 - 10_000 });
    const waitingReasons = new Map([
      ['app', { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container' }],
    ]);
    const s = computePodStatus(inputs(pod, runtimeOf([newest, older]), { waiting: waitingReasons }));
    const st = app(s);
    assert.deepEqual(st.state, {
      waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container' },
    });
    assert.equal(st.lastState.terminated?.exitCode, 1);
    assert.equal(st.lastState.terminated?.containerID, containerID(newest.id));
    assert.equal(st.restartCount, 3);
    assert.equal(st.ready, false);
    assert.equal(s.phase, 'Running');
  });

  it('ignores a waiting reason for a container that will not be restarted', () => {
    const pod = makePod('Never');
    const waitingReasons = new Map([['app', { reason: 'CrashLoopBackOff', message: 'x' }]]);
    const s = computePodStatus(
      inputs(pod, runtimeOf([rc('app', 'exited', { exitCode: 1 })]), { waiting: waitingReasons }),
    );
    assert.equal(app(s).state.terminated?.exitCode, 1);
    assert.equal(s.phase, 'Failed');
  });

  it('reports a start failure reason (ErrImagePull) for a container that never ran', () => {
    const pod = makePod();
    const waitingReasons = new Map([['app', { reason: 'ErrImagePull', message: 'not found' }]]);
    const s = computePodStatus(inputs(pod, runtimeOf([]), { waiting: waitingReasons }));
    assert.deepEqual(app(s).state, { waiting: { reason: 'ErrImagePull', message: 'not found' } });
    assert.deepEqual(app(s).lastState, {});
    assert.equal(s.phase, 'Pending');
  });

  it('names an exit 0 without a runtime reason Completed, and the pod Succeeded under Never', () => {
    const pod = makePod('Never');
    const s = computePodStatus(inputs(pod, runtimeOf([rc('app', 'exited', { exitCode: 0 })])));
    const t = app(s).state.terminated;
    assert.equal(t?.reason, 'Completed');
    assert.equal(t?.exitCode, 0);
    assert.equal(t?.startedAt, iso(T0 + 1_000));
    assert.equal(t?.finishedAt, iso(T0 + 2_000));
    assert.equal(s.phase, 'Succeeded');
    assert.equal(cond(s, 'Ready').status, 'False');
    assert.equal(cond(s, 'Ready').reason, 'PodCompleted');
    assert.equal(cond(s, 'Ready').message, undefined);
  });

  it('names a non-zero exit without a runtime reason Error, and the pod Failed under Never', () => {
    const pod = makePod('Never');
    const s = computePodStatus(inputs(pod, runtimeOf([rc('app', 'exited', { exitCode: 1 })])));
    assert.equal(app(s).state.terminated?.reason, 'Error');
    assert.equal(s.phase, 'Failed');
  });

  it('keeps the runtime reason and message (OOMKilled)', () => {
    const pod = makePod('Never');
    const c = rc('app', 'exited', { exitCode: 137, reason: 'OOMKilled', message: 'out of memory' });
    const s = computePodStatus(inputs(pod, runtimeOf([c])));
    assert.equal(app(s).state.terminated?.reason, 'OOMKilled');
    assert.equal(app(s).state.terminated?.message, 'out of memory');
  });

  it('takes restartCount from the newest container and lastState from the second newest', () => {
    const pod = makePod();
    const newest = rc('app', 'running', { restartCount: 2 });
    const second = rc('app', 'exited', { exitCode: 137, restartCount: 1 });
    const third = rc('app', 'exited', { exitCode: 2, restartCount: 0 });
    const s = computePodStatus(inputs(pod, runtimeOf([newest, second, third])));
    const st = app(s);
    assert.equal(st.restartCount, 2);
    assert.ok(st.state.running);
    assert.equal(st.lastState.terminated?.exitCode, 137);
    assert.equal(st.lastState.terminated?.containerID, containerID(second.id));
  });

  it('keeps restartCount and lastState of the previous status while no container exists', () => {
    const pod = makePod();
    const prev = computePodStatus(
      inputs(
        pod,
        runtimeOf([rc('app', 'running', { restartCount: 4 }), rc('app', 'exited', { exitCode: 3 })]),
      ),
    );
    const s = computePodStatus(inputs(pod, runtimeOf([]), { previous: prev, now: () => T1 }));
    assert.equal(app(s).restartCount, 4);
    assert.equal(app(s).lastState.terminated?.exitCode, 3);
  });

  it('keeps lastTransitionTime while a condition does not change, and moves it when it does', () => {
    const pod = makePod();
    const first = computePodStatus(inputs(pod, runtimeOf([rc('app', 'running')]), { now: () => T0 }));
    const same = computePodStatus(
      inputs(pod, runtimeOf([rc('app', 'running')]), { previous: first, now: () => T1 }),
    );
    assert.equal(cond(same, 'Ready').lastTransitionTime, iso(T0));
    assert.equal(cond(same, 'PodScheduled').lastTransitionTime, iso(T0));
    assert.equal(same.startTime, iso(T0));

    const changed = computePodStatus(
      inputs(pod, runtimeOf([rc('app', 'exited', { exitCode: 1 })]), { previous: first, now: () => T1 }),
    );
    assert.equal(cond(changed, 'Ready').status, 'False');
    assert.equal(cond(changed, 'Ready').lastTransitionTime, iso(T1));
    assert.equal(cond(changed, 'PodScheduled').lastTransitionTime, iso(T0));
  });

  it('never moves a pod out of a terminal phase', () => {
    const pod = makePod('Never');
    const done = computePodStatus(inputs(pod, runtimeOf([rc('app', 'exited', { exitCode: 0 })])));
    assert.equal(done.phase, 'Succeeded');
    const later = computePodStatus(
      inputs(pod, runtimeOf([rc('app', 'running')]), { previous: done, now: () => T1 }),
    );
    assert.equal(later.phase, 'Succeeded');
    const failedPrev: PodStatus = { ...done, phase: 'Failed' };
    const afterFail = computePodStatus(inputs(pod, runtimeOf([]), { previous: failedPrev, now: () => T1 }));
    assert.equal(afterFail.phase, 'Failed');
  });

  it('takes the pod IP from the sandbox', () => {
    const pod = makePod();
    const runtime = runtimeOf([rc('app', 'running')], '10.88.0.7');
    runtime.sandboxes[0]!.ips = ['fd00::7'];
    const s = computePodStatus(inputs(pod, runtime));
    assert.equal(s.podIP, '10.88.0.7');
    assert.deepEqual(s.podIPs, [{ ip: '10.88.0.7' }, { ip: 'fd00::7' }]);
  });

  it('gives a host-network pod the host IP', () => {
    const pod = makePod();
    pod.spec.hostNetwork = true;
    const runtime = runtimeOf([rc('app', 'running')], '');
    runtime.sandboxes[0]!.hostNetwork = true;
    const s = computePodStatus(inputs(pod, runtime));
    assert.equal(s.podIP, '192.168.1.10');
    assert.deepEqual(s.podIPs, [{ ip: '192.168.1.10' }]);
  });

  it('keeps the previous pod IP once the sandbox is gone', () => {
    const pod = makePod('Never');
    const prev = computePodStatus(inputs(pod, runtimeOf([rc('app', 'running')], '10.88.0.9')));
    const runtime = runtimeOf([rc('app', 'exited')]);
    runtime.sandboxes = [];
    const s = computePodStatus(inputs(pod, runtime, { previous: prev, now: () => T1 }));
    assert.equal(s.podIP, '10.88.0.9');
    assert.deepEqual(s.podIPs, [{ ip: '10.88.0.9' }]);
  });

  it('reports the QoS class of the pod', () => {
    const best = computePodStatus(inputs(makePod(), runtimeOf([])));
    assert.equal(best.qosClass, 'BestEffort');
    const guaranteed = makePod('Always', [
      {
        name: 'app',
        image: 'busybox:1.29',
        resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } },
      },
    ]);
    assert.equal(computePodStatus(inputs(guaranteed, runtimeOf([]))).qosClass, 'Guaranteed');
  });

  // Upstream convertToAPIContainerStatuses: a container in the created state is "waiting to be running"
  // (State.Waiting with no reason); it is not terminated and must not count as a success.
  it('reports a created but never started container as waiting, not as a completed one', () => {
    const pod = makePod('Never');
    const s = computePodStatus(inputs(pod, runtimeOf([rc('app', 'created')])));
    assert.ok(app(s).state.waiting, `expected waiting, got ${JSON.stringify(app(s).state)}`);
    assert.equal(app(s).state.terminated, undefined);
    assert.equal(s.phase, 'Pending');
  });
});

describe('computePodStatus with readiness gates', () => {
  function gated(): Pod {
    const pod = makePod();
    (pod.spec as PodSpec & { readinessGates: { conditionType: string }[] }).readinessGates = [
      { conditionType: 'example.com/lb' },
    ];
    return pod;
  }

  it('keeps Ready False with ReadinessGatesNotReady while containers are ready and the gate is missing', () => {
    const s = computePodStatus(inputs(gated(), runtimeOf([rc('app', 'running')])));
    assert.equal(cond(s, 'ContainersReady').status, 'True');
    assert.deepEqual(
      { ...cond(s, 'Ready'), lastTransitionTime: undefined },
      {
        type: 'Ready',
        status: 'False',
        reason: 'ReadinessGatesNotReady',
        message: 'corresponding condition of pod readiness gate "example.com/lb" does not exist.',
        lastProbeTime: null,
        lastTransitionTime: undefined,
      },
    );
  });

  it("turns Ready True once the API's pod carries the gate condition True, and keeps that condition first", () => {
    const pod = gated();
    const gate: PodCondition = {
      type: 'example.com/lb',
      status: 'True',
      lastProbeTime: null,
      lastTransitionTime: '2026-03-01T09:00:00Z',
    };
    // The API's status also has kubelet-owned conditions: ours replace them, never duplicate them.
    pod.status = {
      conditions: [{ type: 'Ready', status: 'False' }, gate, { type: 'PodScheduled', status: 'True' }],
    };
    const s = computePodStatus(inputs(pod, runtimeOf([rc('app', 'running')])));
    assert.deepEqual(
      s.conditions?.map((c) => c.type),
      ['example.com/lb', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'],
    );
    assert.deepEqual(cond(s, 'example.com/lb'), gate);
    assert.equal(cond(s, 'Ready').status, 'True');
  });

  it('names the status of a gate condition that is not True', () => {
    const pod = gated();
    pod.status = { conditions: [{ type: 'example.com/lb', status: 'False' }] };
    const s = computePodStatus(inputs(pod, runtimeOf([rc('app', 'running')])));
    assert.equal(
      cond(s, 'Ready').message,
      'the status of pod readiness gate "example.com/lb" is not "True", but False',
    );
  });

  it('takes conditions it does not own from the API pod, not from its own previous status', () => {
    const pod = gated();
    const prev = computePodStatus(
      inputs(
        { ...pod, status: { conditions: [{ type: 'example.com/lb', status: 'True' }] } },
        runtimeOf([rc('app', 'running')]),
      ),
    );
    pod.status = { conditions: [{ type: 'example.com/lb', status: 'False' }] };
    const s = computePodStatus(
      inputs(pod, runtimeOf([rc('app', 'running')]), { previous: prev, now: () => T1 }),
    );
    assert.equal(cond(s, 'example.com/lb').status, 'False');
    assert.equal(cond(s, 'Ready').status, 'False');
    assert.equal(cond(s, 'Ready').lastTransitionTime, iso(T1));
  });

  it('reports PodFailed (no message) on ContainersReady and Ready of a Failed pod', () => {
    const s = computePodStatus(inputs(makePod('Never'), runtimeOf([rc('app', 'exited', { exitCode: 1 })])));
    assert.equal(s.phase, 'Failed');
    for (const type of ['Ready', 'ContainersReady']) {
      assert.equal(cond(s, type).reason, 'PodFailed');
      assert.equal(cond(s, type).message, undefined);
    }
  });

  it('keeps a terminal phase the API already shows', () => {
    const pod = makePod('Always');
    pod.status = { phase: 'Failed' };
    const s = computePodStatus(inputs(pod, runtimeOf([rc('app', 'running')])));
    assert.equal(s.phase, 'Failed');
  });
});

describe('computePodStatus with sidecar init containers', () => {
  function withSidecar(): Pod {
    const pod = makePod();
    pod.spec.initContainers = [
      { name: 'setup', image: 'busybox:1.29' },
      { name: 'proxy', image: 'busybox:1.29', restartPolicy: 'Always' },
    ];
    return pod;
  }
  const probes = (started: boolean, ready: boolean) => ({
    isStarted: (name: string) => (name === 'proxy' ? started : true),
    isReady: (name: string) => (name === 'proxy' ? ready : true),
  });

  it('keeps the pod Pending and not Initialized until the sidecar started', () => {
    const rt = runtimeOf([rc('proxy', 'running'), rc('setup', 'exited')]);
    const s = computePodStatus(inputs(withSidecar(), rt, { probes: probes(false, false) }));
    const proxy = s.initContainerStatuses?.find((c) => c.name === 'proxy');
    assert.equal(proxy?.started, false);
    assert.equal(proxy?.ready, false);
    assert.equal(s.phase, 'Pending');
    assert.equal(cond(s, 'Initialized').status, 'False');
    assert.equal(cond(s, 'Initialized').message, 'containers with incomplete status: [proxy]');
  });

  it('reports the sidecar started and ready from its probes, and counts it in ContainersReady', () => {
    const rt = runtimeOf([rc('app', 'running'), rc('proxy', 'running'), rc('setup', 'exited')]);
    const unready = computePodStatus(inputs(withSidecar(), rt, { probes: probes(true, false) }));
    const proxy = unready.initContainerStatuses?.find((c) => c.name === 'proxy');
    assert.equal(proxy?.started, true);
    assert.equal(proxy?.ready, false);
    assert.equal(unready.phase, 'Running');
    assert.equal(cond(unready, 'Initialized').status, 'True');
    assert.equal(cond(unready, 'ContainersReady').message, 'containers with unready status: [proxy]');
    assert.equal(cond(unready, 'Ready').status, 'False');

    const ready = computePodStatus(inputs(withSidecar(), rt, { probes: probes(true, true) }));
    assert.equal(ready.initContainerStatuses?.find((c) => c.name === 'proxy')?.ready, true);
    assert.equal(cond(ready, 'Ready').status, 'True');
  });

  it('stays Running while the sidecar restarts after the app container started', () => {
    const rt = runtimeOf([
      rc('app', 'running'),
      rc('proxy', 'exited', { exitCode: 1 }),
      rc('setup', 'exited'),
    ]);
    const waitingReasons = new Map([['proxy', { reason: 'CrashLoopBackOff', message: 'back-off' }]]);
    const s = computePodStatus(inputs(withSidecar(), rt, { waiting: waitingReasons }));
    const proxy = s.initContainerStatuses?.find((c) => c.name === 'proxy');
    assert.equal(proxy?.state.waiting?.reason, 'CrashLoopBackOff');
    assert.equal(s.phase, 'Running');
    assert.equal(cond(s, 'Initialized').status, 'True');
  });
});

describe('podPhase with sidecar init containers', () => {
  const sidecarSpec: PodSpec = {
    initContainers: [{ name: 'proxy', restartPolicy: 'Always' }],
    containers: [{ name: 'a' }],
    restartPolicy: 'Never',
  };
  const proxy = (state: ContainerState, started: boolean, lastState: ContainerState = {}) => ({
    ...apiStatus('proxy', state, lastState),
    started,
  });

  it('is Pending while a running sidecar has not started', () => {
    assert.equal(podPhase(sidecarSpec, [proxy(running, false)], [apiStatus('a', waiting)]), 'Pending');
  });

  it('is Running with a started sidecar and a running container', () => {
    assert.equal(podPhase(sidecarSpec, [proxy(running, true)], [apiStatus('a', running)]), 'Running');
  });

  it('ignores a stopped sidecar once the regular containers finished', () => {
    assert.equal(podPhase(sidecarSpec, [proxy(failed, false)], [apiStatus('a', succeeded)]), 'Succeeded');
  });

  it('is Running while the regular container finished but the sidecar still runs', () => {
    assert.equal(podPhase(sidecarSpec, [proxy(running, true)], [apiStatus('a', succeeded)]), 'Running');
  });
});
