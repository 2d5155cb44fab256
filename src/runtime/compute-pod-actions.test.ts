import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, Pod, RestartPolicy } from '../api/types.ts';
import {
  computePodActions,
  podSandboxChanged,
  type PodActions,
  type ProbeVerdicts,
} from './compute-pod-actions.ts';
import { hashContainer } from './hash.ts';
import {
  shouldContainerBeRestarted,
  type RuntimeContainerState,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
  type RuntimeSandboxStatus,
} from './runtime-pod.ts';

// Fixtures modelled on the shape of upstream's makeBasePodAndStatus: three app containers, one ready
// sandbox with an IP, every container running with the hash of its spec.

function container(name: string, image = 'busybox:1.29'): Container {
  return { name, image };
}

function basePod(policy?: RestartPolicy): Pod {
  const pod: Pod = {
    metadata: { name: 'foo', namespace: 'foo-ns', uid: '12345678' },
    spec: { containers: [container('foo1'), container('foo2'), container('foo3')] },
  };
  if (policy) pod.spec.restartPolicy = policy;
  return pod;
}

function sandbox(overrides: Partial<RuntimeSandboxStatus> = {}): RuntimeSandboxStatus {
  return {
    id: 'sandbox1',
    ready: true,
    createdAt: 1_000,
    attempt: 0,
    ip: '10.0.0.1',
    ips: [],
    hostNetwork: false,
    ...overrides,
  };
}

function cstatus(
  spec: Container,
  state: RuntimeContainerState,
  overrides: Partial<RuntimeContainerStatus> = {},
): RuntimeContainerStatus {
  return {
    id: `id-${spec.name}`,
    name: spec.name,
    state,
    createdAt: 2_000,
    startedAt: state === 'created' ? 0 : 2_100,
    finishedAt: state === 'exited' ? 2_200 : 0,
    exitCode: 0,
    reason: '',
    message: '',
    image: spec.image ?? '',
    imageRef: 'sha256:abc',
    hash: hashContainer(spec),
    restartCount: 0,
    podSandboxId: 'sandbox1',
    attempt: 0,
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    terminationGracePeriodSeconds: undefined,
    ...overrides,
  };
}

function baseStatus(pod: Pod): RuntimePodStatus {
  return {
    uid: pod.metadata.uid ?? '',
    name: pod.metadata.name ?? '',
    namespace: pod.metadata.namespace ?? '',
    sandboxes: [sandbox()],
    containers: pod.spec.containers.map((c) => cstatus(c, 'running')),
    timestamp: 3_000,
  };
}

/** Upstream makeBasePodAndStatusWithInitContainers: three init containers, all exited 0, no app containers yet. */
function basePodWithInits(policy?: RestartPolicy): { pod: Pod; status: RuntimePodStatus } {
  const pod = basePod(policy);
  pod.spec.initContainers = [
    container('init1', 'bar:1'),
    container('init2', 'bar:1'),
    container('init3', 'bar:1'),
  ];
  const status = baseStatus(pod);
  status.containers = pod.spec.initContainers.map((c) => cstatus(c, 'exited'));
  return { pod, status };
}

function byName(status: RuntimePodStatus, name: string): RuntimeContainerStatus {
  const c = status.containers.find((x) => x.name === name);
  assert.ok(c, `fixture has no container ${name}`);
  return c;
}

function expectActions(actual: PodActions, expected: Partial<PodActions>): void {
  const full: PodActions = {
    killPod: false,
    createSandbox: false,
    sandboxId: 'sandbox1',
    attempt: 0,
    initContainersToStart: [],
    containersToStart: [],
    containersToKill: [],
    ...expected,
  };
  // Kill reasons are free text (upstream's test clears them too); compare what is killed.
  const strip = (a: PodActions) => ({
    ...a,
    containersToKill: a.containersToKill.map(({ id, name }) => ({ id, name })),
  });
  assert.deepEqual(strip(actual), strip(full));
}

const kill = (name: string) => ({ id: `id-${name}`, name, reason: '' });

describe('computePodActions for app containers', () => {
  it('does nothing when everything runs with the current spec', () => {
    const pod = basePod();
    expectActions(computePodActions(pod, baseStatus(pod)), {});
  });

  it('creates a sandbox and starts every container for a pod the runtime has never seen', () => {
    const pod = basePod();
    const status = baseStatus(pod);
    status.sandboxes = [];
    status.containers = [];
    expectActions(computePodActions(pod, status), {
      killPod: true,
      createSandbox: true,
      sandboxId: '',
      attempt: 0,
      containersToStart: [0, 1, 2],
    });
  });

  it('restarts exited containers, successful or not, when restartPolicy is Always', () => {
    const pod = basePod('Always');
    const status = baseStatus(pod);
    byName(status, 'foo1').state = 'exited';
    Object.assign(byName(status, 'foo2'), { state: 'exited', exitCode: 111 });
    expectActions(computePodActions(pod, status), { containersToStart: [0, 1] });
  });

  it('treats a missing restartPolicy as Always', () => {
    const pod = basePod();
    const status = baseStatus(pod);
    byName(status, 'foo1').state = 'exited';
    expectActions(computePodActions(pod, status), { containersToStart: [0] });
  });

  it('restarts only failed containers when restartPolicy is OnFailure', () => {
    const pod = basePod('OnFailure');
    const status = baseStatus(pod);
    byName(status, 'foo1').state = 'exited';
    Object.assign(byName(status, 'foo2'), { state: 'exited', exitCode: 111 });
    expectActions(computePodActions(pod, status), { containersToStart: [1] });
  });

  it('restarts nothing when restartPolicy is Never, and keeps the pod while one container runs', () => {
    const pod = basePod('Never');
    const status = baseStatus(pod);
    byName(status, 'foo1').state = 'exited';
    Object.assign(byName(status, 'foo2'), { state: 'exited', exitCode: 111 });
    expectActions(computePodActions(pod, status), {});
  });

  it('kills the pod once every container exited and restartPolicy is Never', () => {
    const pod = basePod('Never');
    const status = baseStatus(pod);
    for (const c of status.containers) Object.assign(c, { state: 'exited', exitCode: 1 });
    expectActions(computePodActions(pod, status), { killPod: true });
  });

  it('kills the pod once every container succeeded and restartPolicy is OnFailure', () => {
    const pod = basePod('OnFailure');
    const status = baseStatus(pod);
    for (const c of status.containers) c.state = 'exited';
    expectActions(computePodActions(pod, status), { killPod: true });
  });

  it('kills and restarts a running container whose spec hash changed', () => {
    const pod = basePod('Always');
    const status = baseStatus(pod);
    byName(status, 'foo2').hash = 'deadbeef';
    expectActions(computePodActions(pod, status), {
      containersToStart: [1],
      containersToKill: [kill('foo2')],
    });
  });

  it('restarts a container whose spec changed even when restartPolicy is Never', () => {
    const pod = basePod('Never');
    const status = baseStatus(pod);
    pod.spec.containers[1] = container('foo2', 'busybox:1.30');
    expectActions(computePodActions(pod, status), {
      containersToStart: [1],
      containersToKill: [kill('foo2')],
    });
  });

  it('keeps a running container that carries no recorded hash (adopted, not created by us)', () => {
    const pod = basePod();
    const status = baseStatus(pod);
    byName(status, 'foo2').hash = '';
    expectActions(computePodActions(pod, status), {});
  });

  it('kills a container in unknown state before starting it again, even with restartPolicy Never', () => {
    const pod = basePod('Never');
    const status = baseStatus(pod);
    byName(status, 'foo2').state = 'unknown';
    expectActions(computePodActions(pod, status), {
      containersToStart: [1],
      containersToKill: [kill('foo2')],
    });
  });

  it('starts a container left in created state without killing it', () => {
    const pod = basePod('Never');
    const status = baseStatus(pod);
    byName(status, 'foo2').state = 'created';
    expectActions(computePodActions(pod, status), { containersToStart: [1] });
  });

  it('starts a container that has no status at all', () => {
    const pod = basePod('Never');
    const status = baseStatus(pod);
    status.containers = status.containers.filter((c) => c.name !== 'foo3');
    expectActions(computePodActions(pod, status), { containersToStart: [2] });
  });

  it('restarts nothing once the pod is being deleted', () => {
    const pod = basePod('Always');
    pod.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    const status = baseStatus(pod);
    byName(status, 'foo1').state = 'exited';
    expectActions(computePodActions(pod, status), {});
  });
});

describe('computePodActions when the sandbox must be replaced', () => {
  it('kills the pod and recreates everything on a new attempt when the sandbox is not ready (Always)', () => {
    const pod = basePod('Always');
    const status = baseStatus(pod);
    status.sandboxes[0]!.ready = false;
    expectActions(computePodActions(pod, status), {
      killPod: true,
      createSandbox: true,
      attempt: 1,
      containersToStart: [0, 1, 2],
    });
  });

  it('recreates everything but the succeeded containers when the sandbox died (OnFailure)', () => {
    const pod = basePod('OnFailure');
    const status = baseStatus(pod);
    status.sandboxes[0]!.ready = false;
    byName(status, 'foo2').state = 'exited';
    expectActions(computePodActions(pod, status), {
      killPod: true,
      createSandbox: true,
      attempt: 1,
      containersToStart: [0, 2],
    });
  });

  it('recreates the sandbox when it has no IP', () => {
    const pod = basePod();
    const status = baseStatus(pod);
    status.sandboxes[0]!.ip = '';
    expectActions(computePodActions(pod, status), {
      killPod: true,
      createSandbox: true,
      attempt: 1,
      containersToStart: [0, 1, 2],
    });
  });

  it('does not ask for an IP from a host-network sandbox', () => {
    const pod = basePod();
    pod.spec.hostNetwork = true;
    const status = baseStatus(pod);
    Object.assign(status.sandboxes[0]!, { ip: '', hostNetwork: true });
    expectActions(computePodActions(pod, status), {});
  });

  it('recreates the sandbox when the pod moved to or from the host network', () => {
    const pod = basePod();
    pod.spec.hostNetwork = true;
    const status = baseStatus(pod);
    const actions = computePodActions(pod, status);
    assert.equal(actions.createSandbox, true);
    assert.equal(actions.killPod, true);
    assert.equal(actions.attempt, 1);
  });

  it('reconciles more than one ready sandbox by starting over', () => {
    const pod = basePod();
    const status = baseStatus(pod);
    status.sandboxes = [sandbox({ id: 'sandbox2', attempt: 1 }), sandbox({ id: 'sandbox1', attempt: 0 })];
    const actions = computePodActions(pod, status);
    assert.equal(actions.createSandbox, true);
    assert.equal(actions.killPod, true);
    assert.equal(actions.attempt, 2);
    assert.equal(actions.sandboxId, 'sandbox2');
  });

  it('does not create a sandbox for a Never pod whose containers all exited', () => {
    const pod = basePod('Never');
    const status = baseStatus(pod);
    Object.assign(status.sandboxes[0]!, { ready: false, attempt: 1 });
    for (const c of status.containers) c.state = 'exited';
    expectActions(computePodActions(pod, status), { killPod: true, createSandbox: false, attempt: 2 });
  });

  it('does not create a sandbox for an OnFailure pod whose containers all succeeded', () => {
    const pod = basePod('OnFailure');
    const status = baseStatus(pod);
    Object.assign(status.sandboxes[0]!, { ready: false, attempt: 1 });
    for (const c of status.containers) c.state = 'exited';
    expectActions(computePodActions(pod, status), { killPod: true, createSandbox: false, attempt: 2 });
  });

  it('retries the sandbox of a Never pod when no container was ever created', () => {
    const pod = basePod('Never');
    const status = baseStatus(pod);
    Object.assign(status.sandboxes[0]!, { ready: false, attempt: 2 });
    status.containers = [];
    expectActions(computePodActions(pod, status), {
      killPod: true,
      createSandbox: true,
      attempt: 3,
      containersToStart: [0, 1, 2],
    });
  });
});

describe('computePodActions with init containers', () => {
  it('starts every app container once initialization completed', () => {
    const { pod, status } = basePodWithInits();
    expectActions(computePodActions(pod, status), { containersToStart: [0, 1, 2] });
  });

  it('starts the first init container when none has run', () => {
    const { pod, status } = basePodWithInits();
    status.containers = [];
    expectActions(computePodActions(pod, status), { initContainersToStart: [0] });
  });

  it('starts the next init container after the previous one succeeded', () => {
    const { pod, status } = basePodWithInits();
    status.containers = [cstatus(pod.spec.initContainers![0]!, 'exited')];
    expectActions(computePodActions(pod, status), { initContainersToStart: [1] });
  });

  it('waits while an init container runs', () => {
    const { pod, status } = basePodWithInits('Always');
    byName(status, 'init3').state = 'running';
    expectActions(computePodActions(pod, status), {});
  });

  it('does not re-run earlier init containers whose statuses are gone while the last one runs', () => {
    const { pod, status } = basePodWithInits('Always');
    byName(status, 'init3').state = 'running';
    status.containers = status.containers.filter((c) => c.name === 'init3');
    expectActions(computePodActions(pod, status), {});
  });

  it('kills the pod and restarts from the first init container when the sandbox died', () => {
    const { pod, status } = basePodWithInits('Always');
    status.sandboxes[0]!.ready = false;
    expectActions(computePodActions(pod, status), {
      killPod: true,
      createSandbox: true,
      attempt: 1,
      initContainersToStart: [0],
    });
  });

  for (const policy of ['Always', 'OnFailure'] as const) {
    it(`restarts the same failed init container when restartPolicy is ${policy}`, () => {
      const { pod, status } = basePodWithInits(policy);
      byName(status, 'init3').exitCode = 137;
      expectActions(computePodActions(pod, status), { initContainersToStart: [2] });
    });

    it(`kills an init container in unknown state and starts it again when restartPolicy is ${policy}`, () => {
      const { pod, status } = basePodWithInits(policy);
      byName(status, 'init3').state = 'unknown';
      expectActions(computePodActions(pod, status), {
        initContainersToStart: [2],
        containersToKill: [kill('init3')],
      });
    });
  }

  it('kills the pod when an init container failed and restartPolicy is Never', () => {
    const { pod, status } = basePodWithInits('Never');
    byName(status, 'init3').exitCode = 137;
    expectActions(computePodActions(pod, status), { killPod: true });
  });

  it('kills the pod when an init container is in unknown state and restartPolicy is Never', () => {
    const { pod, status } = basePodWithInits('Never');
    byName(status, 'init3').state = 'unknown';
    expectActions(computePodActions(pod, status), { killPod: true });
  });

  it('treats an OOM-killed init container as failed even with exit code 0', () => {
    const { pod, status } = basePodWithInits('Never');
    byName(status, 'init3').reason = 'OOMKilled';
    expectActions(computePodActions(pod, status), { killPod: true });
  });

  it('only kills the pod when its sandbox died and restartPolicy is Never after init containers ran', () => {
    const { pod, status } = basePodWithInits('Never');
    status.sandboxes[0]!.ready = false;
    expectActions(computePodActions(pod, status), { killPod: true, createSandbox: false, attempt: 1 });
  });

  it('creates a new sandbox for a Never pod whose init containers never became visible', () => {
    const { pod, status } = basePodWithInits('Never');
    status.sandboxes[0]!.ready = false;
    status.containers = [];
    expectActions(computePodActions(pod, status), {
      killPod: true,
      createSandbox: true,
      attempt: 1,
      initContainersToStart: [0],
    });
  });

  it('creates a new sandbox and restarts initialization when an init container failed (OnFailure)', () => {
    const { pod, status } = basePodWithInits('OnFailure');
    status.sandboxes[0]!.ready = false;
    byName(status, 'init3').exitCode = 137;
    expectActions(computePodActions(pod, status), {
      killPod: true,
      createSandbox: true,
      attempt: 1,
      initContainersToStart: [0],
    });
  });

  // Upstream computePodActions, createPodSandbox branch: when no app container is left to start and the
  // pod has initialized, CreateSandbox is set to false and the init containers are not re-run.
  it('does not re-run init containers on a new sandbox when every app container of an OnFailure pod succeeded', () => {
    const { pod, status } = basePodWithInits('OnFailure');
    Object.assign(status.sandboxes[0]!, { ready: false, attempt: 1 });
    status.containers.unshift(...pod.spec.containers.map((c) => cstatus(c, 'exited', { createdAt: 5_000 })));
    expectActions(computePodActions(pod, status), { killPod: true, createSandbox: false, attempt: 2 });
  });

  it('goes straight to app containers when one is running, even if init statuses were removed', () => {
    const { pod, status } = basePodWithInits('Always');
    status.containers = [cstatus(pod.spec.containers[0]!, 'running')];
    expectActions(computePodActions(pod, status), { containersToStart: [1, 2] });
  });
});

/**
 * Sidecar init containers (restartPolicy Always), upstream computeInitContainerActions: init1
 * (regular), sidecar (with a startup probe), init2 (regular), then the three app containers.
 */
function basePodWithSidecar(policy?: RestartPolicy): {
  pod: Pod;
  status: RuntimePodStatus;
  sidecar: Container;
} {
  const pod = basePod(policy);
  const sidecar: Container = {
    ...container('sidecar', 'proxy:1'),
    restartPolicy: 'Always',
    startupProbe: { exec: { command: ['true'] } },
  };
  pod.spec.initContainers = [container('init1', 'bar:1'), sidecar, container('init2', 'bar:1')];
  const status = baseStatus(pod);
  status.containers = [cstatus(pod.spec.initContainers[0]!, 'exited'), cstatus(sidecar, 'running')];
  return { pod, status, sidecar };
}

type Verdict = { message: string; probe?: 'liveness' | 'startup'; terminationGracePeriodSeconds?: number };

function verdicts(started: Record<string, boolean>, failed: Record<string, Verdict> = {}): ProbeVerdicts {
  return {
    isStarted: (name) => started[name] ?? true,
    restartReason: (name) => failed[name],
  };
}

describe('computePodActions with sidecar init containers', () => {
  it('waits for a running sidecar to start before the next init container', () => {
    const { pod, status } = basePodWithSidecar();
    expectActions(computePodActions(pod, status, verdicts({ sidecar: false })), {});
  });

  it('starts the next init container once the sidecar has started', () => {
    const { pod, status } = basePodWithSidecar();
    expectActions(computePodActions(pod, status, verdicts({ sidecar: true })), {
      initContainersToStart: [2],
    });
  });

  it('restarts a sidecar whose startup probe failed, and still holds back the next init container', () => {
    const { pod, status } = basePodWithSidecar();
    const actions = computePodActions(
      pod,
      status,
      verdicts(
        { sidecar: false },
        { sidecar: { message: 'x', probe: 'startup', terminationGracePeriodSeconds: 3 } },
      ),
    );
    expectActions(actions, { initContainersToStart: [1], containersToKill: [kill('sidecar')] });
    assert.equal(actions.containersToKill[0]?.reason, 'Init container sidecar failed startup probe');
    assert.equal(actions.containersToKill[0]?.gracePeriodSeconds, 3);
  });

  it('starts the app containers once every regular init container succeeded and the sidecar started', () => {
    const { pod, status, sidecar } = basePodWithSidecar();
    status.containers = [
      cstatus(pod.spec.initContainers![2]!, 'exited'),
      cstatus(sidecar, 'running'),
      cstatus(pod.spec.initContainers![0]!, 'exited'),
    ];
    expectActions(computePodActions(pod, status, verdicts({})), { containersToStart: [0, 1, 2] });
  });

  it('starts the app containers when the last init container is a started sidecar', () => {
    const { pod, status } = basePodWithSidecar();
    pod.spec.initContainers = pod.spec.initContainers!.slice(0, 2);
    expectActions(computePodActions(pod, status, verdicts({})), { containersToStart: [0, 1, 2] });
    expectActions(computePodActions(pod, status, verdicts({ sidecar: false })), {});
  });

  it('restarts a sidecar that exited once the pod is initialized, even under restartPolicy Never', () => {
    const { pod, status, sidecar } = basePodWithSidecar('Never');
    status.containers = [
      ...pod.spec.containers.map((c) => cstatus(c, 'running')),
      cstatus(sidecar, 'exited', { exitCode: 1 }),
    ];
    expectActions(computePodActions(pod, status, verdicts({})), { initContainersToStart: [1] });
  });

  it('starts a sidecar again when its status is gone once the pod is initialized', () => {
    const { pod, status } = basePodWithSidecar();
    status.containers = pod.spec.containers.map((c) => cstatus(c, 'running'));
    expectActions(computePodActions(pod, status, verdicts({})), { initContainersToStart: [1] });
  });

  it('restarts a sidecar whose liveness probe failed and keeps the app containers running', () => {
    const { pod, status, sidecar } = basePodWithSidecar();
    status.containers = [
      ...pod.spec.containers.map((c) => cstatus(c, 'running')),
      cstatus(sidecar, 'running'),
    ];
    const actions = computePodActions(
      pod,
      status,
      verdicts({}, { sidecar: { message: 'Container sidecar failed liveness probe', probe: 'liveness' } }),
    );
    expectActions(actions, { initContainersToStart: [1], containersToKill: [kill('sidecar')] });
    assert.equal(actions.containersToKill[0]?.reason, 'Init container sidecar failed liveness probe');
  });

  it('restarts a running sidecar whose definition changed', () => {
    const { pod, status, sidecar } = basePodWithSidecar();
    status.containers = [
      ...pod.spec.containers.map((c) => cstatus(c, 'running')),
      cstatus(sidecar, 'running', { hash: 'old-hash' }),
    ];
    expectActions(computePodActions(pod, status, verdicts({})), {
      initContainersToStart: [1],
      containersToKill: [kill('sidecar')],
    });
  });

  it('kills and restarts a sidecar in unknown state, even under restartPolicy Never', () => {
    const { pod, status, sidecar } = basePodWithSidecar('Never');
    status.containers = [
      ...pod.spec.containers.map((c) => cstatus(c, 'running')),
      cstatus(sidecar, 'unknown'),
    ];
    expectActions(computePodActions(pod, status, verdicts({})), {
      initContainersToStart: [1],
      containersToKill: [kill('sidecar')],
    });
  });

  it('completes the pod, sidecar included, when every regular container is done', () => {
    const { pod, status, sidecar } = basePodWithSidecar('Never');
    status.containers = [
      ...pod.spec.containers.map((c) => cstatus(c, 'exited')),
      cstatus(sidecar, 'running'),
      cstatus(pod.spec.initContainers![2]!, 'exited'),
    ];
    expectActions(computePodActions(pod, status, verdicts({})), { killPod: true });
  });

  it('treats every running sidecar as started when no prober verdicts are given', () => {
    const { pod, status } = basePodWithSidecar();
    expectActions(computePodActions(pod, status), { initContainersToStart: [2] });
  });
});

describe('shouldContainerBeRestarted', () => {
  const cases: [string, RestartPolicy, RuntimeContainerState | 'none', number, boolean][] = [
    ['never started', 'Never', 'none', 0, true],
    ['running', 'Always', 'running', 0, false],
    ['created but not started', 'Never', 'created', 0, true],
    ['unknown', 'Never', 'unknown', 0, true],
    ['exited 0, Always', 'Always', 'exited', 0, true],
    ['exited 1, Always', 'Always', 'exited', 1, true],
    ['exited 0, OnFailure', 'OnFailure', 'exited', 0, false],
    ['exited 1, OnFailure', 'OnFailure', 'exited', 1, true],
    ['exited 0, Never', 'Never', 'exited', 0, false],
    ['exited 1, Never', 'Never', 'exited', 1, false],
  ];
  for (const [desc, policy, state, exitCode, want] of cases) {
    it(`${want ? 'restarts' : 'does not restart'} a container ${desc}`, () => {
      const pod = basePod(policy);
      const status = baseStatus(pod);
      status.containers = state === 'none' ? [] : [cstatus(pod.spec.containers[0]!, state, { exitCode })];
      assert.equal(shouldContainerBeRestarted(pod.spec.containers[0]!, pod, status), want);
    });
  }

  it('restarts an exited sidecar init container whatever the pod restart policy', () => {
    const pod = basePod('Never');
    const sidecar: Container = { ...container('sidecar'), restartPolicy: 'Always' };
    pod.spec.initContainers = [sidecar];
    const status = baseStatus(pod);
    status.containers = [cstatus(sidecar, 'exited', { exitCode: 0 })];
    assert.equal(shouldContainerBeRestarted(sidecar, pod, status), true);
  });

  it('never restarts a container of a pod being deleted', () => {
    const pod = basePod('Always');
    pod.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    const status = baseStatus(pod);
    status.containers = [];
    assert.equal(shouldContainerBeRestarted(pod.spec.containers[0]!, pod, status), false);
  });

  it('looks at the newest status of the container only', () => {
    const pod = basePod('OnFailure');
    const status = baseStatus(pod);
    const spec = pod.spec.containers[0]!;
    status.containers = [cstatus(spec, 'exited', { exitCode: 0 }), cstatus(spec, 'exited', { exitCode: 1 })];
    assert.equal(shouldContainerBeRestarted(spec, pod, status), false);
  });
});

describe('podSandboxChanged', () => {
  it('asks for attempt 0 when there is no sandbox', () => {
    const pod = basePod();
    const status = baseStatus(pod);
    status.sandboxes = [];
    assert.deepEqual(podSandboxChanged(pod, status), { create: true, attempt: 0, sandboxId: '' });
  });

  it('keeps a ready sandbox with an IP', () => {
    const pod = basePod();
    const status = baseStatus(pod);
    status.sandboxes[0]!.attempt = 4;
    assert.deepEqual(podSandboxChanged(pod, status), { create: false, attempt: 4, sandboxId: 'sandbox1' });
  });

  it('asks for the next attempt when the newest sandbox is not ready, even if an older one is', () => {
    const pod = basePod();
    const status = baseStatus(pod);
    status.sandboxes = [sandbox({ id: 'new', ready: false, attempt: 3 }), sandbox({ id: 'old', attempt: 2 })];
    assert.deepEqual(podSandboxChanged(pod, status), { create: true, attempt: 4, sandboxId: 'new' });
  });
});
