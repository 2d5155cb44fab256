import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ContainerStatus } from '../api/types.ts';
import { explainPod, NOTHING_HOLDS } from './explain.ts';
import { NOW, iso, only, pod, running, snap, status, waiting } from './testing.ts';

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
