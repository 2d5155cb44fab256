import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { initialNode } from './initial-node.ts';
import { nodeStatusHasChanged, setNodeStatus } from './node-status.ts';
import { fakeInputs, sampleMachine, statusConfig } from './testing.ts';
import type { Node, NodeCondition } from './types.ts';

const T0 = Date.parse('2026-11-22T01:00:00.400Z');
const T1 = T0 + 10_000;
const T2 = T0 + 20_000;

function condition(node: Node, type: string): NodeCondition | undefined {
  return node.status?.conditions?.find((c) => c.type === type);
}

describe('setNodeStatus (periodic update)', () => {
  it('reports Ready False with the runtime message, and moves lastTransitionTime only on transitions', () => {
    const inputs = fakeInputs();
    const { node } = initialNode(statusConfig(), { labels: {}, taints: [] }, sampleMachine(), inputs, T0);

    inputs.ready = { ok: false, message: 'container runtime is down' };
    const r1 = setNodeStatus(node, statusConfig(), sampleMachine(), inputs, T1);
    assert.deepEqual(condition(node, 'Ready'), {
      type: 'Ready',
      status: 'False',
      reason: 'KubeletNotReady',
      message: 'container runtime is down',
      lastHeartbeatTime: '2026-11-22T01:00:10Z',
      lastTransitionTime: '2026-11-22T01:00:10Z',
    });
    assert.deepEqual(
      r1.events.map((e) => e.reason),
      ['NodeNotReady'],
    );
    // Pressure conditions keep their transition time; only the heartbeat moves.
    assert.equal(condition(node, 'MemoryPressure')?.lastTransitionTime, '2026-11-22T01:00:00Z');
    assert.equal(condition(node, 'MemoryPressure')?.lastHeartbeatTime, '2026-11-22T01:00:10Z');

    const r2 = setNodeStatus(node, statusConfig(), sampleMachine(), inputs, T2);
    assert.equal(condition(node, 'Ready')?.lastTransitionTime, '2026-11-22T01:00:10Z');
    assert.equal(condition(node, 'Ready')?.lastHeartbeatTime, '2026-11-22T01:00:20Z');
    assert.deepEqual(r2.events, []);

    inputs.ready = { ok: true, message: '' };
    const r3 = setNodeStatus(node, statusConfig(), sampleMachine(), inputs, T2 + 10_000);
    assert.equal(condition(node, 'Ready')?.status, 'True');
    assert.equal(condition(node, 'Ready')?.lastTransitionTime, '2026-11-22T01:00:30Z');
    assert.deepEqual(
      r3.events.map((e) => e.reason),
      ['NodeReady'],
    );
    // Ready stays the last condition (upstream keeps it last for old API clients).
    assert.equal(node.status?.conditions?.at(-1)?.type, 'Ready');
  });

  it('is NotReady when a required capacity is missing, aggregating messages as upstream', () => {
    const inputs = fakeInputs();
    inputs.ready = { ok: false, message: 'PLEG is not healthy' };
    const { node } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine({ rootfsCapacityBytes: undefined }),
      inputs,
      T0,
    );
    assert.equal(
      condition(node, 'Ready')?.message,
      '[PLEG is not healthy, Missing node capacity for resources: ephemeral-storage]',
    );
  });

  it('turns a pressure condition True with its event', () => {
    const inputs = fakeInputs();
    const { node } = initialNode(statusConfig(), { labels: {}, taints: [] }, sampleMachine(), inputs, T0);
    inputs.pressures = { memory: true, disk: false, pid: false };
    const r = setNodeStatus(node, statusConfig(), sampleMachine(), inputs, T1);
    assert.deepEqual(condition(node, 'MemoryPressure'), {
      type: 'MemoryPressure',
      status: 'True',
      reason: 'KubeletHasInsufficientMemory',
      message: 'kubelet has insufficient memory available',
      lastHeartbeatTime: '2026-11-22T01:00:10Z',
      lastTransitionTime: '2026-11-22T01:00:10Z',
    });
    assert.deepEqual(
      r.events.map((e) => e.reason),
      ['NodeHasInsufficientMemory'],
    );
  });

  it('records Rebooted when the boot ID changed, and drops the obsolete OutOfDisk condition', () => {
    const { node } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
    );
    node.status?.conditions?.unshift({ type: 'OutOfDisk', status: 'False' });
    const r = setNodeStatus(node, statusConfig(), sampleMachine({ bootID: 'boot-2' }), fakeInputs(), T1);
    assert.deepEqual(r.events, [
      { type: 'Warning', reason: 'Rebooted', message: 'Node node-a has been rebooted, boot id: boot-2' },
    ]);
    assert.equal(node.status?.nodeInfo?.bootID, 'boot-2');
    assert.equal(condition(node, 'OutOfDisk'), undefined);
  });

  it('keeps capacities other components added (extended resources)', () => {
    const { node } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
    );
    node.status!.capacity!['example.com/dongle'] = '3';
    setNodeStatus(node, statusConfig(), sampleMachine(), fakeInputs(), T1);
    assert.equal(node.status?.capacity?.['example.com/dongle'], '3');
    assert.equal(node.status?.allocatable?.['example.com/dongle'], '3');
  });
});

describe('nodeStatusHasChanged', () => {
  it('ignores heartbeat times only', () => {
    const inputs = fakeInputs();
    const { node } = initialNode(statusConfig(), { labels: {}, taints: [] }, sampleMachine(), inputs, T0);
    const before = structuredClone(node.status);
    setNodeStatus(node, statusConfig(), sampleMachine(), inputs, T1);
    assert.equal(nodeStatusHasChanged(before, node.status), false);

    inputs.ready = { ok: false, message: 'down' };
    setNodeStatus(node, statusConfig(), sampleMachine(), inputs, T2);
    assert.equal(nodeStatusHasChanged(before, node.status), true);
  });

  it('compares quantities by value and notices other fields', () => {
    const { node } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
    );
    const same = structuredClone(node.status!);
    same.capacity!['memory'] = `${24576000}Ki`;
    assert.equal(nodeStatusHasChanged(node.status, same), false);
    const other = structuredClone(node.status!);
    other.nodeInfo!.containerRuntimeVersion = 'containerd://1.7.0';
    assert.equal(nodeStatusHasChanged(node.status, other), true);
    const fewer = structuredClone(node.status!);
    fewer.conditions = fewer.conditions!.slice(1);
    assert.equal(nodeStatusHasChanged(node.status, fewer), true);
  });
});
