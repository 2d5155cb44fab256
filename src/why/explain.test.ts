import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Container, ContainerStatus, KubeletPod, PodStatus } from '../api/types.ts';
import { explainPod, NOTHING_HOLDS } from './explain.ts';
import type { WhyFinding, WhySnapshot } from './types.ts';

const NOW = Date.parse('2026-11-24T20:01:30.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

function pod(containers: Partial<Container>[] = [{}], extra: Partial<KubeletPod['spec']> = {}): KubeletPod {
  return {
    metadata: { namespace: 'default', name: 'web', uid: 'uid-1' },
    spec: {
      containers: containers.map((c, i) => ({
        name: i === 0 ? 'main' : `c${i}`,
        image: 'busybox:1.29',
        ...c,
      })),
      ...extra,
    },
  };
}

function running(name = 'main', ready = true, startedAt = NOW - 60_000): ContainerStatus {
  return {
    name,
    state: { running: { startedAt: iso(startedAt) } },
    lastState: {},
    ready,
    restartCount: 0,
    image: 'busybox:1.29',
    imageID: '',
    started: true,
  };
}

function waiting(name: string, reason: string, message = '', restartCount = 0): ContainerStatus {
  return {
    name,
    state: { waiting: { reason, message } },
    lastState: {},
    ready: false,
    restartCount,
    image: 'busybox:1.29',
    imageID: '',
  };
}

function status(
  phase: PodStatus['phase'],
  ready: boolean,
  containers: ContainerStatus[],
  inits?: ContainerStatus[],
) {
  return {
    phase,
    conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    containerStatuses: containers,
    ...(inits ? { initContainerStatuses: inits } : {}),
  } as PodStatus;
}

function snap(over: Partial<WhySnapshot> = {}): WhySnapshot {
  return {
    now: NOW,
    pod: pod(),
    status: status('Running', true, [running()]),
    synced: true,
    worker: 'syncing',
    waiting: {},
    crashLoop: {},
    imagePulls: [],
    probes: [],
    logTails: {},
    ...over,
  };
}

function only(s: WhySnapshot): WhyFinding {
  const why = explainPod(s);
  assert.equal(why.findings.length, 1, JSON.stringify(why.findings, null, 1));
  const f = why.findings[0];
  assert.ok(f);
  return f;
}

describe('explainPod: why a pod is not running or not ready', () => {
  it('finds nothing for a Running and Ready pod and says so', () => {
    const why = explainPod(snap());
    assert.deepEqual(why.findings, []);
    assert.equal(why.summary, NOTHING_HOLDS);
    assert.equal(why.apiVersion, 'tskubelet.io/v1alpha1');
    assert.equal(why.kind, 'PodWhy');
    assert.deepEqual(
      [why.namespace, why.name, why.uid, why.phase, why.ready],
      ['default', 'web', 'uid-1', 'Running', true],
    );
  });

  it('names the admission predicate and the numbers: requests 2 CPU, 0.5 allocatable left', () => {
    const message = "Node didn't have enough resource: cpu, requested: 2000, used: 1500, capacity: 2000";
    const f = only(
      snap({
        status: { phase: 'Failed', reason: 'OutOfcpu', message },
        admission: { reason: 'OutOfcpu', message },
        synced: false,
        worker: undefined,
      }),
    );
    assert.equal(f.reason, 'AdmissionRejected');
    assert.match(f.message, /requests 2 CPU, 0\.5 CPU allocatable left/);
    assert.deepEqual(f.evidence, {
      predicate: 'OutOfcpu',
      resource: 'cpu',
      unit: 'cores',
      requested: 2,
      used: 1.5,
      allocatable: 2,
      allocatableLeft: 0.5,
    });
  });

  it('reports an admission predicate without numbers (NodeAffinity) by its message', () => {
    const a = { reason: 'NodeAffinity', message: 'Predicate NodeAffinity failed' };
    const why = explainPod(snap({ status: { phase: 'Failed', ...a }, admission: a }));
    assert.equal(why.findings[0]?.reason, 'AdmissionRejected');
    assert.equal(why.findings[0]?.evidence.predicate, 'NodeAffinity');
    assert.match(why.summary, /^Rejected at admission \(NodeAffinity\): predicate NodeAffinity failed\.$/);
  });

  it('reports ErrImagePull with the pull error and the back-off left', () => {
    const err = 'rpc error: code = NotFound desc = failed to pull and unpack image "no/such:1"';
    const f = only(
      snap({
        pod: pod([{ image: 'no/such:1' }]),
        status: status('Pending', false, [waiting('main', 'ErrImagePull', err)]),
        imagePulls: [
          { image: 'no/such:1', container: 'main', backOffLeftMs: 8_200, backOffMs: 10_000, lastError: err },
        ],
      }),
    );
    assert.equal(f.reason, 'ErrImagePull');
    assert.equal(f.container, 'main');
    assert.match(f.message, /Pulling image "no\/such:1" failed: rpc error: code = NotFound/);
    assert.match(f.message, /the next pull is in 9 s/);
    assert.deepEqual(f.evidence, {
      image: 'no/such:1',
      error: err,
      backOffLeftSeconds: 9,
      backOffSeconds: 10,
    });
  });

  it('reports ImagePullBackOff with the last pull error kept by the image manager and the back-off left', () => {
    const why = explainPod(
      snap({
        pod: pod([{ image: 'no/such:1' }]),
        status: status('Pending', false, [
          waiting('main', 'ImagePullBackOff', 'Back-off pulling image "no/such:1"'),
        ]),
        imagePulls: [
          {
            image: 'no/such:1',
            container: 'main',
            backOffLeftMs: 19_000,
            backOffMs: 20_000,
            lastError: 'not found',
          },
        ],
      }),
    );
    const f = why.findings[0];
    assert.equal(f?.reason, 'ImagePullBackOff');
    assert.equal(f?.evidence.backOffLeftSeconds, 19);
    assert.equal(f?.evidence.error, 'not found');
    assert.equal(
      why.summary,
      'Container main is waiting for image "no/such:1": the last pull failed, the next pull is in 19 s.',
    );
  });

  it('reports an image still pulling, for how long, and that its bytes so far are unknown', () => {
    const f = only(
      snap({
        status: status('Pending', false, [waiting('main', 'ContainerCreating')]),
        imagePulls: [{ image: 'busybox:1.29', container: 'main', pullingSince: NOW - 12_000 }],
        synced: false,
      }),
    );
    assert.equal(f.reason, 'PullingImage');
    assert.equal(f.evidence.pullingForSeconds, 12);
    assert.match(f.message, /pulling for 12 s \(the runtime reports no progress/);
    assert.equal(f.since, iso(NOW - 12_000));
  });

  it('reports the bytes pulled so far when they are known', () => {
    const f = only(
      snap({
        status: status('Pending', false, [waiting('main', 'ContainerCreating')]),
        imagePulls: [
          { image: 'busybox:1.29', container: 'main', pullingSince: NOW - 3_000, bytes: 3 * 1024 * 1024 },
        ],
      }),
    );
    assert.equal(f.evidence.bytes, 3 * 1024 * 1024);
    assert.match(f.message, /3Mi so far/);
  });

  it('reports crash-loop back-off with exit code, restarts, last termination, next try and last log lines', () => {
    const finished = Date.parse('2026-11-24T20:01:02.000Z');
    const cs: ContainerStatus = {
      ...waiting(
        'main',
        'CrashLoopBackOff',
        'back-off 40s restarting failed container=main pod=default/web',
        3,
      ),
      lastState: {
        terminated: {
          exitCode: 1,
          reason: 'Error',
          startedAt: iso(finished - 400),
          finishedAt: iso(finished),
        },
      },
    };
    const why = explainPod(
      snap({
        status: status('Running', false, [cs]),
        crashLoop: { main: { delayMs: 40_000, nextRetryAt: finished + 40_000 } },
        logTails: { main: ['starting', 'boom'] },
      }),
    );
    const f = why.findings[0];
    assert.equal(why.findings.length, 1);
    assert.equal(f?.reason, 'CrashLoopBackOff');
    assert.equal(f?.container, 'main');
    assert.equal(
      f?.message,
      'It exited with code 1 at 20:01:02 after running 0.4 s; it has been restarted 3 times and the next restart is in 12 s. Its last log line: "boom".',
    );
    assert.deepEqual(f?.evidence, {
      exitCode: 1,
      terminationReason: 'Error',
      finishedAt: iso(finished),
      restartCount: 3,
      backOffSeconds: 40,
      nextRetryInSeconds: 12,
      lastLogLines: ['starting', 'boom'],
    });
    assert.equal(f?.since, iso(finished));
    assert.equal(
      why.summary,
      'Container main is in crash-loop back-off: it exited with code 1 and is restarted in 12 s.',
    );
  });

  it('falls back to the back-off in the waiting message when the next try is not known', () => {
    const cs: ContainerStatus = {
      ...waiting(
        'main',
        'CrashLoopBackOff',
        'back-off 20s restarting failed container=main pod=default/web',
        2,
      ),
      lastState: { terminated: { exitCode: 137, reason: 'OOMKilled' } },
    };
    const f = only(snap({ status: status('Running', false, [cs]) }));
    assert.match(f.message, /code 137 \(OOMKilled\).*next restart is after its 20s back-off/);
    assert.equal(f.evidence.terminationReason, 'OOMKilled');
  });

  it('reports a failing readiness probe with its output and failures in a row against the threshold', () => {
    const f = only(
      snap({
        status: status('Running', false, [running('main', false)]),
        probes: [
          {
            container: 'main',
            probe: 'readiness',
            result: 'failure',
            consecutiveFailures: 4,
            failureThreshold: 3,
            lastResult: 'failure',
            lastOutput: 'HTTP probe failed with statuscode: 503\n',
            lastAt: NOW - 1_000,
          },
        ],
      }),
    );
    assert.equal(f.reason, 'ProbeFailing');
    assert.equal(f.container, 'main');
    assert.match(
      f.message,
      /readiness probe fails \(4 in a row, threshold 3\): HTTP probe failed with statuscode: 503; it is not Ready/,
    );
    assert.equal(f.evidence.probe, 'readiness');
    assert.equal(f.evidence.consecutiveFailures, 4);
    assert.equal(f.evidence.failureThreshold, 3);
    assert.equal(f.evidence.lastOutput, 'HTTP probe failed with statuscode: 503\n');
    assert.equal(f.evidence.lastProbeAt, iso(NOW - 1_000));
  });

  it('warns of a liveness probe failing below its threshold before it restarts the container', () => {
    const f = only(
      snap({
        probes: [
          {
            container: 'main',
            probe: 'liveness',
            result: 'success',
            consecutiveFailures: 2,
            failureThreshold: 3,
            lastResult: 'failure',
            lastOutput: 'cat: /tmp/healthy: No such file',
          },
        ],
      }),
    );
    assert.equal(f.reason, 'ProbeFailing');
    assert.match(
      f.message,
      /liveness probe fails \(2 in a row, threshold 3\).*at 3 failures in a row the container is restarted/,
    );
  });

  it('ignores probes that pass', () => {
    const why = explainPod(
      snap({
        probes: [
          {
            container: 'main',
            probe: 'readiness',
            result: 'success',
            consecutiveFailures: 0,
            failureThreshold: 3,
            lastResult: 'success',
            lastOutput: '',
          },
        ],
      }),
    );
    assert.deepEqual(why.findings, []);
  });

  it('reports a volume that does not mount with its error', () => {
    const err = 'configmap "settings" not found';
    const f = only(
      snap({
        status: status('Pending', false, [waiting('main', 'ContainerCreating')]),
        syncError: { step: 'volumes', message: err, at: NOW - 5_000 },
      }),
    );
    assert.equal(f.reason, 'VolumeNotReady');
    assert.match(f.message, /volumes are not set up, so no container starts: configmap "settings" not found/);
    assert.deepEqual(f.evidence, { error: err });
    assert.equal(f.since, iso(NOW - 5_000));
  });

  it('reports a sandbox that cannot be created, and when the network plugin is at fault', () => {
    const err =
      'Failed to create pod sandbox: rpc error: failed to setup network for sandbox: plugin type="bridge" failed (add): cni0 busy';
    const f = only(
      snap({
        status: status('Pending', false, [waiting('main', 'ContainerCreating')]),
        syncError: { step: 'sandbox', message: err, at: NOW - 2_000 },
      }),
    );
    assert.equal(f.reason, 'SandboxFailed');
    assert.match(f.message, /\(the network plugin failed\): Failed to create pod sandbox/);
    assert.deepEqual(f.evidence, { error: err, network: true });
  });

  it('reports an init container still running, for how long, and holds back the app containers', () => {
    const p = pod([{}], { initContainers: [{ name: 'setup', image: 'busybox:1.29' }] });
    const f = only(
      snap({
        pod: p,
        status: status(
          'Pending',
          false,
          [waiting('main', 'PodInitializing')],
          [running('setup', false, NOW - 15_000)],
        ),
        logTails: { setup: ['waiting for db'] },
      }),
    );
    assert.equal(f.reason, 'InitContainerRunning');
    assert.equal(f.container, 'setup');
    assert.equal(f.evidence.runningForSeconds, 15);
    assert.deepEqual(f.evidence.lastLogLines, ['waiting for db']);
    assert.match(f.message, /running for 15 s; the app containers start once it exits with code 0/);
  });

  it('reports an init container that fails, with its exit code and next restart', () => {
    const p = pod([{}], { initContainers: [{ name: 'setup', image: 'busybox:1.29' }] });
    const cs: ContainerStatus = {
      ...waiting(
        'setup',
        'CrashLoopBackOff',
        'back-off 10s restarting failed container=setup pod=default/web',
        1,
      ),
      lastState: { terminated: { exitCode: 2, reason: 'Error', finishedAt: iso(NOW - 4_000) } },
    };
    const why = explainPod(
      snap({
        pod: p,
        status: status('Pending', false, [waiting('main', 'PodInitializing')], [cs]),
        crashLoop: { setup: { delayMs: 10_000, nextRetryAt: NOW + 6_000 } },
        logTails: { setup: ['config missing'] },
      }),
    );
    assert.equal(why.findings.length, 1);
    const f = why.findings[0];
    assert.equal(f?.reason, 'InitContainerFailing');
    assert.equal(f?.evidence.exitCode, 2);
    assert.equal(f?.evidence.nextRetryInSeconds, 6);
    assert.equal(why.summary, 'Init container setup fails: it exited with code 2 and is restarted in 6 s.');
  });

  it('reports a terminating pod with the grace period left and the preStop hook running', () => {
    const f = only(
      snap({
        worker: 'terminating',
        termination: {
          startedAt: NOW - 8_000,
          gracePeriodSeconds: 30,
          preStopRunning: [{ container: 'main', since: NOW - 7_500 }],
        },
      }),
    );
    assert.equal(f.reason, 'Terminating');
    assert.deepEqual(f.evidence, { gracePeriodSeconds: 30, graceLeftSeconds: 22, preStopRunning: ['main'] });
    assert.match(
      f.message,
      /22 s of its 30 s grace period are left; the preStop hook of main is running \(for 7\.5 s\)/,
    );
  });

  it('reports an evicted pod with the eviction reason and message', () => {
    const message = 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi.';
    const why = explainPod(
      snap({
        worker: 'terminated',
        status: { phase: 'Failed', reason: 'Evicted', message },
        stoppedBy: { reason: 'Evicted', message },
      }),
    );
    assert.equal(why.findings.length, 1);
    assert.equal(why.findings[0]?.reason, 'Evicted');
    assert.deepEqual(why.findings[0]?.evidence, { statusReason: 'Evicted', statusMessage: message });
    assert.equal(why.summary, `Evicted: ${message}`);
  });

  it('reports a pod the kubelet has not synced yet', () => {
    const f = only(snap({ status: undefined, synced: false, worker: undefined }));
    assert.equal(f.reason, 'NotYetSynced');
    assert.deepEqual(f.evidence, { worker: 'none' });
  });

  it('reports a container config error (CreateContainerConfigError) with its message', () => {
    const f = only(
      snap({
        status: status('Pending', false, [
          waiting('main', 'CreateContainerConfigError', 'secret "db" not found'),
        ]),
      }),
    );
    assert.equal(f.reason, 'CreateContainerConfigError');
    assert.match(f.message, /could not be created: secret "db" not found/);
  });

  it('reports a container that exited and is not restarted under restartPolicy Never', () => {
    const cs: ContainerStatus = {
      ...running(),
      state: { terminated: { exitCode: 3, reason: 'Error', finishedAt: iso(NOW - 1_000) } },
      ready: false,
    };
    const f = only(
      snap({
        pod: pod([{}], { restartPolicy: 'Never' }),
        status: status('Failed', false, [cs]),
        logTails: { main: ['fatal: bad input'] },
      }),
    );
    assert.equal(f.reason, 'Error');
    assert.equal(f.evidence.exitCode, 3);
    assert.match(f.message, /not restarted \(restartPolicy Never\)\. Its last log line: "fatal: bad input"/);
  });

  it('says a container is being created only when nothing else explains the wait', () => {
    const f = only(snap({ status: status('Pending', false, [waiting('main', 'ContainerCreating')]) }));
    assert.equal(f.reason, 'ContainerCreating');
    assert.equal(f.container, 'main');
  });

  it('orders findings most blocking first: volume > sandbox > image > crash loop > probe > terminating', () => {
    const crash: ContainerStatus = {
      ...waiting('c2', 'CrashLoopBackOff', 'back-off 10s restarting failed container=c2 pod=default/web', 1),
      lastState: { terminated: { exitCode: 1 } },
    };
    const why = explainPod(
      snap({
        pod: pod([{}, { image: 'no/such:1' }, {}]),
        worker: 'terminating',
        termination: { gracePeriodSeconds: 30, preStopRunning: [] },
        status: status('Running', false, [
          running('main', false),
          waiting('c1', 'ErrImagePull', 'not found'),
          crash,
        ]),
        syncError: { step: 'sandbox', message: 'boom', at: NOW },
        probes: [
          {
            container: 'main',
            probe: 'liveness',
            result: 'success',
            consecutiveFailures: 1,
            failureThreshold: 3,
          },
        ],
      }),
    );
    assert.deepEqual(
      why.findings.map((f) => f.reason),
      ['SandboxFailed', 'ErrImagePull', 'CrashLoopBackOff', 'Terminating'],
    );
    assert.match(why.summary, /^Its sandbox cannot be created/);
    const withVolume = explainPod(
      snap({
        syncError: { step: 'volumes', message: 'x', at: NOW },
        probes: [
          {
            container: 'main',
            probe: 'readiness',
            result: 'failure',
            consecutiveFailures: 3,
            failureThreshold: 3,
          },
        ],
      }),
    );
    assert.deepEqual(
      withVolume.findings.map((f) => f.reason),
      ['VolumeNotReady', 'ProbeFailing'],
    );
  });

  it('puts admission first and reports nothing else for a rejected pod', () => {
    const a = {
      reason: 'OutOfmemory',
      message:
        "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824",
    };
    const why = explainPod(
      snap({
        admission: a,
        status: { phase: 'Failed', ...a },
        syncError: { step: 'volumes', message: 'x', at: NOW },
      }),
    );
    assert.deepEqual(
      why.findings.map((f) => f.reason),
      ['AdmissionRejected'],
    );
    assert.match(why.summary, /requests 2Gi, 1Gi allocatable left/);
  });
});
