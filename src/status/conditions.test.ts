import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerState, ContainerStatus, Pod, PodCondition, PodSpec } from '../api/types.ts';
import {
  generateContainersReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  isKubeletOwnedCondition,
  needToReconcilePodReadiness,
  readinessGatesOf,
} from './conditions.ts';

const running: ContainerState = { running: { startedAt: '2026-01-01T00:00:00Z' } };
const done: ContainerState = { terminated: { exitCode: 0, reason: 'Completed' } };

function cs(
  name: string,
  ready: boolean,
  state: ContainerState = running,
  started?: boolean,
): ContainerStatus {
  const s: ContainerStatus = { name, state, lastState: {}, ready, restartCount: 0, image: 'i', imageID: '' };
  if (started !== undefined) s.started = started;
  return s;
}

function withGates(spec: PodSpec, ...types: string[]): PodSpec {
  return { ...spec, readinessGates: types.map((conditionType) => ({ conditionType })) };
}

const twoApps: PodSpec = { containers: [{ name: 'a' }, { name: 'b' }] };
const gate = (type: string, status: PodCondition['status']): PodCondition => ({ type, status });

describe('readinessGatesOf', () => {
  it('reads spec.readinessGates and ignores malformed entries', () => {
    const spec = {
      containers: [],
      readinessGates: [{ conditionType: 'x/a' }, {}, null, { conditionType: 3 }],
    };
    assert.deepEqual(readinessGatesOf(spec as unknown as PodSpec), [{ conditionType: 'x/a' }]);
    assert.deepEqual(readinessGatesOf(twoApps), []);
  });
});

describe('isKubeletOwnedCondition', () => {
  it('owns PodScheduled, Ready, Initialized and ContainersReady only', () => {
    assert.deepEqual(
      ['PodScheduled', 'Ready', 'Initialized', 'ContainersReady', 'DisruptionTarget', 'example.com/gate'].map(
        isKubeletOwnedCondition,
      ),
      [true, true, true, true, false, false],
    );
  });
});

describe('generatePodReadyCondition (readiness gates)', () => {
  const ready = [cs('a', true), cs('b', true)];

  it('is True when containers are ready and there are no gates', () => {
    assert.deepEqual(generatePodReadyCondition(twoApps, [], ready, 'Running'), {
      type: 'Ready',
      status: 'True',
    });
  });

  it('is False with ReadinessGatesNotReady when a gate has no condition', () => {
    const spec = withGates(twoApps, 'example.com/lb');
    assert.deepEqual(generatePodReadyCondition(spec, [], ready, 'Running'), {
      type: 'Ready',
      status: 'False',
      reason: 'ReadinessGatesNotReady',
      message: 'corresponding condition of pod readiness gate "example.com/lb" does not exist.',
    });
  });

  it('is False naming the status of a gate condition that is not True', () => {
    const spec = withGates(twoApps, 'example.com/lb');
    const c = generatePodReadyCondition(spec, [gate('example.com/lb', 'Unknown')], ready, 'Running');
    assert.equal(c.reason, 'ReadinessGatesNotReady');
    assert.equal(c.message, 'the status of pod readiness gate "example.com/lb" is not "True", but Unknown');
  });

  it('joins the messages of several unready gates in spec order', () => {
    const spec = withGates(twoApps, 'x/one', 'x/two', 'x/three');
    const c = generatePodReadyCondition(
      spec,
      [gate('x/two', 'False'), gate('x/three', 'True')],
      ready,
      'Running',
    );
    assert.equal(
      c.message,
      'corresponding condition of pod readiness gate "x/one" does not exist., ' +
        'the status of pod readiness gate "x/two" is not "True", but False',
    );
  });

  it('is True once every gate condition is True', () => {
    const spec = withGates(twoApps, 'x/one', 'x/two');
    const c = generatePodReadyCondition(
      spec,
      [gate('x/one', 'True'), gate('x/two', 'True')],
      ready,
      'Running',
    );
    assert.deepEqual(c, { type: 'Ready', status: 'True' });
  });

  it('reports unready containers, as ContainersReady does, before looking at gates', () => {
    const spec = withGates(twoApps, 'x/one');
    assert.deepEqual(generatePodReadyCondition(spec, [], [cs('a', true), cs('b', false)], 'Running'), {
      type: 'Ready',
      status: 'False',
      reason: 'ContainersNotReady',
      message: 'containers with unready status: [b]',
    });
  });
});

describe('generateContainersReadyCondition', () => {
  it('lists unknown, then unready containers', () => {
    assert.deepEqual(generateContainersReadyCondition(twoApps, [cs('a', false)], 'Pending'), {
      type: 'ContainersReady',
      status: 'False',
      reason: 'ContainersNotReady',
      message: 'containers with unknown status: [b], containers with unready status: [a]',
    });
  });

  it('counts sidecar init containers (first) but not regular init containers', () => {
    const spec: PodSpec = {
      initContainers: [{ name: 'setup' }, { name: 'proxy', restartPolicy: 'Always' }],
      containers: [{ name: 'a' }],
    };
    const c = generateContainersReadyCondition(
      spec,
      [cs('setup', true, done), cs('proxy', false), cs('a', false)],
      'Running',
    );
    assert.equal(c.message, 'containers with unready status: [proxy a]');
  });

  it('is False with PodCompleted for a Succeeded pod and PodFailed for a Failed one, without a message', () => {
    assert.deepEqual(
      generateContainersReadyCondition(twoApps, [cs('a', false), cs('b', false)], 'Succeeded'),
      {
        type: 'ContainersReady',
        status: 'False',
        reason: 'PodCompleted',
      },
    );
    assert.deepEqual(generateContainersReadyCondition(twoApps, [cs('a', true)], 'Failed'), {
      type: 'ContainersReady',
      status: 'False',
      reason: 'PodFailed',
    });
  });
});

describe('generatePodInitializedCondition', () => {
  const spec: PodSpec = {
    initContainers: [{ name: 'setup' }, { name: 'proxy', restartPolicy: 'Always' }],
    containers: [{ name: 'a' }],
  };

  it('needs regular init containers ready and sidecars started', () => {
    const waiting: ContainerState = { waiting: { reason: 'PodInitializing' } };
    const c = generatePodInitializedCondition(
      spec,
      [cs('setup', true, done), cs('proxy', false, running, false), cs('a', false, waiting)],
      'Pending',
    );
    assert.equal(c.status, 'False');
    assert.equal(c.reason, 'ContainersNotInitialized');
    assert.equal(c.message, 'containers with incomplete status: [proxy]');
    const started = generatePodInitializedCondition(
      spec,
      [cs('setup', true, done), cs('proxy', false, running, true), cs('a', false, waiting)],
      'Pending',
    );
    assert.deepEqual(started, { type: 'Initialized', status: 'True' });
  });

  it('stays True once a regular container ran, even while a sidecar restarts', () => {
    const c = generatePodInitializedCondition(
      spec,
      [
        cs('setup', true, done),
        cs('proxy', false, { waiting: { reason: 'CrashLoopBackOff' } }),
        cs('a', true),
      ],
      'Running',
    );
    assert.deepEqual(c, { type: 'Initialized', status: 'True' });
  });

  it('is True with PodCompleted for a Succeeded pod', () => {
    const c = generatePodInitializedCondition(
      spec,
      [cs('setup', true, done), cs('proxy', false, done), cs('a', false, done)],
      'Succeeded',
    );
    assert.deepEqual(c, { type: 'Initialized', status: 'True', reason: 'PodCompleted' });
  });
});

describe('needToReconcilePodReadiness', () => {
  function pod(conditions: PodCondition[], gates: string[] = ['x/lb']): Pod {
    return {
      metadata: { name: 'p', namespace: 'default', uid: 'u' },
      spec: withGates({ containers: [{ name: 'a' }] }, ...gates),
      status: { phase: 'Running', conditions, containerStatuses: [cs('a', true)] },
    };
  }
  const notReady = {
    type: 'Ready',
    status: 'False',
    reason: 'ReadinessGatesNotReady',
    message: 'corresponding condition of pod readiness gate "x/lb" does not exist.',
  } as const;

  it('is true when a gate condition appeared that the Ready condition does not reflect yet', () => {
    assert.equal(needToReconcilePodReadiness(pod([notReady, gate('x/lb', 'True')])), true);
  });

  it('is false when Ready already agrees with the gates', () => {
    assert.equal(needToReconcilePodReadiness(pod([notReady])), false);
    assert.equal(
      needToReconcilePodReadiness(pod([{ type: 'Ready', status: 'True' }, gate('x/lb', 'True')])),
      false,
    );
  });

  it('is false without readiness gates or without a Ready condition', () => {
    assert.equal(needToReconcilePodReadiness(pod([notReady], [])), false);
    assert.equal(needToReconcilePodReadiness(pod([gate('x/lb', 'True')])), false);
  });
});
