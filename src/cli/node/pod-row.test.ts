import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerStatus, Pod, PodStatus } from '../../api/types.ts';
import { humanDuration, podRow } from './pod-row.ts';
import { buildPod } from '../../../test/kit/pod.ts';

const NOW = Date.parse('2026-11-24T20:00:00Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();

function cs(name: string, over: Partial<ContainerStatus> = {}): ContainerStatus {
  return {
    name,
    state: { running: { startedAt: ago(60_000) } },
    lastState: {},
    ready: true,
    restartCount: 0,
    image: 'busybox:1.29',
    imageID: '',
    ...over,
  };
}

function pod(status: PodStatus, over: Partial<Pod> = {}, containers = ['main'], inits: string[] = []): Pod {
  return {
    ...buildPod('web', {
      uid: 'u1',
      creationTimestamp: ago(5 * 60_000),
      containers,
      ...(inits.length ? { initContainers: inits } : {}),
      nodeName: 'node-1',
      status,
    }),
    ...over,
  };
}

const ready = { type: 'Ready', status: 'True' as const };

describe('humanDuration (apimachinery HumanDuration)', () => {
  const cases: [number, string][] = [
    [-5_000, '<invalid>'],
    [-1_500, '0s'],
    [0, '0s'],
    [59_000, '59s'],
    [119_000, '119s'],
    [120_000, '2m'],
    [150_000, '2m30s'],
    [9 * 60_000 + 59_000, '9m59s'],
    [10 * 60_000 + 30_000, '10m'],
    [179 * 60_000, '179m'],
    [3 * 3600_000, '3h'],
    [3 * 3600_000 + 20 * 60_000, '3h20m'],
    [8 * 3600_000 + 20 * 60_000, '8h'],
    [47 * 3600_000, '47h'],
    [48 * 3600_000, '2d'],
    [50 * 3600_000, '2d2h'],
    [8 * 24 * 3600_000, '8d'],
    [800 * 24 * 3600_000, '2y70d'],
    [3000 * 24 * 3600_000, '8y'],
  ];
  for (const [ms, want] of cases) {
    it(`prints ${ms} ms as ${want}`, () => assert.equal(humanDuration(ms), want));
  }
});

describe('get pods STATUS, READY, RESTARTS, AGE (kubectl printPod rules)', () => {
  it('a running ready pod: Running, 1/1, 0, its age', () => {
    const r = podRow(pod({ phase: 'Running', containerStatuses: [cs('main')], conditions: [ready] }), NOW);
    assert.deepEqual([r.status, r.ready, r.restarts, r.age], ['Running', '1/1', '0', '5m']);
  });

  it('a pending pod with no statuses shows its phase and 0/N', () => {
    const r = podRow(pod({ phase: 'Pending' }, {}, ['a', 'b']), NOW);
    assert.deepEqual([r.status, r.ready], ['Pending', '0/2']);
  });

  it('a waiting container shows its reason (ContainerCreating, ErrImagePull, ImagePullBackOff)', () => {
    for (const reason of [
      'ContainerCreating',
      'ErrImagePull',
      'ImagePullBackOff',
      'CreateContainerConfigError',
    ]) {
      const st = cs('main', { ready: false, state: { waiting: { reason } } });
      assert.equal(podRow(pod({ phase: 'Pending', containerStatuses: [st] }), NOW).status, reason);
    }
  });

  it('crash-loop back-off: CrashLoopBackOff with restarts and the age of the last restart', () => {
    const st = cs('main', {
      ready: false,
      restartCount: 4,
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: ago(10_000) } },
    });
    const r = podRow(pod({ phase: 'Running', containerStatuses: [st] }), NOW);
    assert.deepEqual([r.status, r.ready, r.restarts], ['CrashLoopBackOff', '0/1', '4 (10s ago)']);
  });

  it('restarts without a last termination time print the count alone', () => {
    const r = podRow(pod({ phase: 'Running', containerStatuses: [cs('main', { restartCount: 2 })] }), NOW);
    assert.equal(r.restarts, '2');
  });

  it('a completed pod: Completed; a terminated container without reason: ExitCode:N or Signal:N', () => {
    const done = cs('main', { ready: false, state: { terminated: { exitCode: 0, reason: 'Completed' } } });
    assert.equal(podRow(pod({ phase: 'Succeeded', containerStatuses: [done] }), NOW).status, 'Completed');
    const code = cs('main', { ready: false, state: { terminated: { exitCode: 3 } } });
    assert.equal(podRow(pod({ phase: 'Failed', containerStatuses: [code] }), NOW).status, 'ExitCode:3');
    const sig = cs('main', { ready: false, state: { terminated: { exitCode: 137, signal: 9 } } });
    assert.equal(podRow(pod({ phase: 'Failed', containerStatuses: [sig] }), NOW).status, 'Signal:9');
  });

  it('the first container wins over later ones (kubectl walks them from the last)', () => {
    const a = cs('a', { ready: false, state: { waiting: { reason: 'ErrImagePull' } } });
    const b = cs('b', { ready: false, state: { waiting: { reason: 'ContainerCreating' } } });
    assert.equal(
      podRow(pod({ phase: 'Pending', containerStatuses: [a, b] }, {}, ['a', 'b']), NOW).status,
      'ErrImagePull',
    );
  });

  it('Completed with another container running and ready: Running if the pod is Ready, else NotReady', () => {
    const a = cs('a', { ready: false, state: { terminated: { exitCode: 0, reason: 'Completed' } } });
    const b = cs('b');
    const statuses = [b, a];
    assert.equal(
      podRow(pod({ phase: 'Running', containerStatuses: statuses, conditions: [ready] }, {}, ['b', 'a']), NOW)
        .status,
      'Running',
    );
    assert.equal(
      podRow(pod({ phase: 'Running', containerStatuses: statuses }, {}, ['b', 'a']), NOW).status,
      'NotReady',
    );
  });

  it('init containers: Init:N/M while one runs, Init:<reason> while one waits, Init:ExitCode:N when one failed', () => {
    const done = cs('i1', { ready: false, state: { terminated: { exitCode: 0, reason: 'Completed' } } });
    const running = cs('i2', { ready: false });
    const base = (inits: ContainerStatus[]) =>
      pod(
        {
          phase: 'Pending',
          initContainerStatuses: inits,
          containerStatuses: [
            cs('main', { ready: false, state: { waiting: { reason: 'PodInitializing' } } }),
          ],
        },
        {},
        ['main'],
        ['i1', 'i2'],
      );
    assert.equal(podRow(base([done, running]), NOW).status, 'Init:1/2');
    const waiting = cs('i2', { ready: false, state: { waiting: { reason: 'ImagePullBackOff' } } });
    assert.equal(podRow(base([done, waiting]), NOW).status, 'Init:ImagePullBackOff');
    const podInit = cs('i1', { ready: false, state: { waiting: { reason: 'PodInitializing' } } });
    assert.equal(podRow(base([podInit]), NOW).status, 'Init:0/2');
    const failed = cs('i2', { ready: false, restartCount: 1, state: { terminated: { exitCode: 2 } } });
    assert.equal(podRow(base([done, failed]), NOW).status, 'Init:ExitCode:2');
    const crash = cs('i2', { ready: false, state: { terminated: { exitCode: 1, reason: 'Error' } } });
    assert.equal(podRow(base([done, crash]), NOW).status, 'Init:Error');
    assert.equal(podRow(base([done, failed]), NOW).restarts, '1', 'init restarts count while initializing');
  });

  it('sidecars (restartable init containers) count in READY and their restarts stay in RESTARTS', () => {
    const p = pod(
      {
        phase: 'Running',
        conditions: [ready, { type: 'Initialized', status: 'True' }],
        initContainerStatuses: [cs('side', { started: true, restartCount: 1 })],
        containerStatuses: [cs('main', { restartCount: 2 })],
      },
      {},
      ['main'],
    );
    p.spec.initContainers = [{ name: 'side', image: 'busybox:1.29', restartPolicy: 'Always' }];
    const r = podRow(p, NOW);
    assert.deepEqual([r.status, r.ready, r.restarts], ['Running', '2/2', '3']);
  });

  it('a pod being deleted is Terminating, unless its phase is terminal; NodeLost shows Unknown', () => {
    const del = { metadata: { name: 'web', namespace: 'default', deletionTimestamp: ago(1_000) } };
    assert.equal(
      podRow(pod({ phase: 'Running', containerStatuses: [cs('main')] }, del), NOW).status,
      'Terminating',
    );
    const done = cs('main', { ready: false, state: { terminated: { exitCode: 0, reason: 'Completed' } } });
    assert.equal(
      podRow(pod({ phase: 'Succeeded', containerStatuses: [done] }, del), NOW).status,
      'Completed',
    );
    assert.equal(podRow(pod({ phase: 'Running', reason: 'NodeLost' }, del), NOW).status, 'Unknown');
  });

  it('the pod reason replaces the phase (Evicted, UnexpectedAdmissionError) and SchedulingGated wins', () => {
    assert.equal(podRow(pod({ phase: 'Failed', reason: 'Evicted' }), NOW).status, 'Evicted');
    const gated = {
      phase: 'Pending' as const,
      conditions: [{ type: 'PodScheduled', status: 'False' as const, reason: 'SchedulingGated' }],
    };
    assert.equal(podRow(pod(gated), NOW).status, 'SchedulingGated');
  });

  it('wide columns: first pod IP, node, <none> for a missing nominated node; readiness gates as true/total', () => {
    const p = pod({
      phase: 'Running',
      podIP: '10.88.0.5',
      podIPs: [{ ip: '10.88.0.5' }, { ip: 'fd00::5' }],
      conditions: [ready, { type: 'example.com/gate', status: 'False' }],
    });
    p.spec.readinessGates = [{ conditionType: 'example.com/gate' }];
    const r = podRow(p, NOW);
    assert.deepEqual(
      [r.ip, r.node, r.nominatedNode, r.readinessGates],
      ['10.88.0.5', 'node-1', '<none>', '0/1'],
    );
    const bare = podRow(pod({ phase: 'Pending' }, { spec: { containers: [] } }), NOW);
    assert.deepEqual(
      [bare.ip, bare.node, bare.readinessGates, bare.ready],
      ['<none>', '<none>', '<none>', '0/0'],
    );
  });

  it('AGE: from creationTimestamp; a static pod without one uses its start time; else <unknown>', () => {
    assert.equal(
      podRow(
        pod(
          { phase: 'Running', startTime: ago(3_600_000) },
          { metadata: { name: 'x', namespace: 'default' } },
        ),
        NOW,
      ).age,
      '60m',
    );
    assert.equal(podRow(pod({ phase: 'Pending' }, { metadata: { name: 'x' } }), NOW).age, '<unknown>');
  });
});
