import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerStatus, PodCondition, PodStatus } from '../api/types.ts';
import { mergePodStatusForApi, podStatusPatch } from './status-patch.ts';
import { applyStrategicMergePatch } from '../api/testing.ts';

const T0 = '2026-03-01T10:00:00Z';
const T1 = '2026-03-01T10:01:00Z';

function c(
  type: string,
  status: PodCondition['status'],
  at = T0,
  extra: Partial<PodCondition> = {},
): PodCondition {
  return { type, status, lastProbeTime: null, lastTransitionTime: at, ...extra };
}

function container(name: string, ready: boolean): ContainerStatus {
  return {
    name,
    ready,
    started: true,
    restartCount: 0,
    image: 'busybox:1.29',
    imageID: 'sha256:1',
    state: { running: { startedAt: T0 } },
    lastState: {},
  };
}

const unready = (at = T0) =>
  c('Ready', 'False', at, { reason: 'ContainersNotReady', message: 'containers with unready status: [b]' });

function base(): PodStatus {
  return {
    phase: 'Running',
    conditions: [
      c('Initialized', 'True'),
      unready(),
      c('ContainersReady', 'False'),
      c('PodScheduled', 'True'),
    ],
    podIP: '10.0.0.5',
    podIPs: [{ ip: '10.0.0.5' }],
    containerStatuses: [container('a', true), container('b', false)],
    qosClass: 'BestEffort',
  };
}

/** Applying the patch to the base gives the new status: the patch says everything that changed. */
function roundTrip(from: PodStatus, to: PodStatus): void {
  const patch = podStatusPatch(from, to, 'uid-1');
  const applied = patch ? applyStrategicMergePatch(from, patch.status, 'status') : from;
  assert.deepEqual(applied, to);
}

describe('podStatusPatch (strategic merge patch of pods/status)', () => {
  it('is undefined when nothing changed', () => {
    assert.equal(podStatusPatch(base(), base(), 'uid-1'), undefined);
  });

  it('carries the pod UID as metadata.uid', () => {
    const next = { ...base(), phase: 'Failed' as const };
    assert.deepEqual(podStatusPatch(base(), next, 'uid-1'), {
      metadata: { uid: 'uid-1' },
      status: { phase: 'Failed' },
    });
  });

  it('sends a changed condition as its type and changed fields, with $setElementOrder/conditions', () => {
    const next = base();
    next.conditions![1] = c('Ready', 'True', T1);
    const patch = podStatusPatch(base(), next, 'uid-1');
    assert.deepEqual(patch?.status, {
      '$setElementOrder/conditions': [
        { type: 'Initialized' },
        { type: 'Ready' },
        { type: 'ContainersReady' },
        { type: 'PodScheduled' },
      ],
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: T1, reason: null, message: null }],
    });
    roundTrip(base(), next);
  });

  it('adds a new condition whole and deletes a removed one by type', () => {
    const next = base();
    next.conditions = [
      ...next.conditions!.filter((x) => x.type !== 'ContainersReady'),
      c('example.com/x', 'True'),
    ];
    const patch = podStatusPatch(base(), next, 'uid-1');
    assert.deepEqual(patch?.status['conditions'], [
      c('example.com/x', 'True'),
      { type: 'ContainersReady', $patch: 'delete' },
    ]);
    roundTrip(base(), next);
  });

  it('sends $setElementOrder alone when only the order of conditions changed', () => {
    const next = base();
    next.conditions = [...next.conditions!].reverse();
    const patch = podStatusPatch(base(), next, 'uid-1');
    assert.deepEqual(Object.keys(patch?.status ?? {}), ['$setElementOrder/conditions']);
    roundTrip(base(), next);
  });

  it('replaces containerStatuses whole: the list has no merge strategy upstream', () => {
    const next = base();
    next.containerStatuses![1] = container('b', true);
    const patch = podStatusPatch(base(), next, 'uid-1');
    assert.deepEqual(patch?.status, { containerStatuses: next.containerStatuses });
    roundTrip(base(), next);
  });

  it('merges podIPs by ip', () => {
    const next = base();
    next.podIP = '10.0.0.6';
    next.podIPs = [{ ip: '10.0.0.6' }];
    const patch = podStatusPatch(base(), next, 'uid-1');
    assert.deepEqual(patch?.status, {
      podIP: '10.0.0.6',
      '$setElementOrder/podIPs': [{ ip: '10.0.0.6' }],
      podIPs: [{ ip: '10.0.0.6' }, { ip: '10.0.0.5', $patch: 'delete' }],
    });
    roundTrip(base(), next);
  });

  it('writes every field against an empty base, merge-keyed lists with their order', () => {
    const patch = podStatusPatch(undefined, base(), 'uid-1');
    assert.deepEqual(patch?.status['conditions'], base().conditions);
    assert.deepEqual(patch?.status['$setElementOrder/conditions'], [
      { type: 'Initialized' },
      { type: 'Ready' },
      { type: 'ContainersReady' },
      { type: 'PodScheduled' },
    ]);
    roundTrip({}, base());
  });

  it('leaves alone a top-level field it does not write (someone else owns it)', () => {
    const server: PodStatus & { nominatedNodeName?: string } = { ...base(), nominatedNodeName: 'node-a' };
    assert.equal(podStatusPatch(server, base(), 'uid-1'), undefined);
  });
});

describe('mergePodStatusForApi (upstream mergePodStatus)', () => {
  it("keeps the API's conditions the kubelet does not own, first, and takes its own from ours", () => {
    const api: PodStatus = {
      conditions: [c('Ready', 'False'), c('example.com/lb', 'True'), c('DisruptionTarget', 'True')],
    };
    const ours: PodStatus = {
      phase: 'Running',
      conditions: [c('example.com/lb', 'False'), c('Initialized', 'True'), c('Ready', 'True', T1)],
    };
    assert.deepEqual(mergePodStatusForApi(api, ours), {
      phase: 'Running',
      conditions: [
        c('example.com/lb', 'True'),
        c('DisruptionTarget', 'True'),
        c('Initialized', 'True'),
        c('Ready', 'True', T1),
      ],
    });
  });

  it('leaves conditions out when ours has none (e.g. a pod rejected at admission)', () => {
    const ours: PodStatus = { phase: 'Failed', reason: 'OutOfcpu', message: 'no room' };
    assert.deepEqual(mergePodStatusForApi({ conditions: [c('x/y', 'True')] }, ours), ours);
  });

  it('never produces a patch touching a condition it does not own, even from a stale copy', () => {
    const server: PodStatus = { ...base(), conditions: [c('example.com/lb', 'True'), ...base().conditions!] };
    const ours: PodStatus = { ...base(), conditions: [c('example.com/lb', 'False'), ...base().conditions!] };
    ours.conditions![2] = c('Ready', 'True', T1);
    const patch = podStatusPatch(server, mergePodStatusForApi(server, ours), 'uid-1');
    const touched = (patch?.status['conditions'] as { type: string }[]).map((x) => x.type);
    assert.deepEqual(touched, ['Ready']);
  });
});
