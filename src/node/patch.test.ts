import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { initialNode } from './initial-node.ts';
import { setNodeStatus } from './node-status.ts';
import type { NodeStatusConfig } from './status-inputs.ts';
import { nodeStatusPatch, twoWayMergePatch } from './patch.ts';
import { applyStrategicMergePatch } from '../api/testing.ts';
import { fakeInputs, sampleMachine } from './testing.ts';
import type { Node } from './types.ts';

const T0 = Date.parse('2026-11-22T01:00:00Z');

const CFG: NodeStatusConfig = {
  nodeName: 'node-a',
  hostname: 'node-a',
  nodeIP: '10.0.0.5',
  maxPods: 110,
  kubeletVersion: 'v1.20.2',
  kubeletPort: 10250,
  reserved: {},
  evictionHard: {},
};

function registered(): Node {
  const { node } = initialNode(CFG, { labels: {}, taints: [] }, sampleMachine(), fakeInputs(), T0);
  node.metadata.uid = 'u1';
  node.metadata.resourceVersion = '7';
  return node;
}

describe('nodeStatusPatch (strategic merge patch for nodes/status)', () => {
  it('is empty when nothing changed', () => {
    const n = registered();
    assert.deepEqual(nodeStatusPatch(n, structuredClone(n)), {});
  });

  it('sends only the changed condition fields, keyed by type, with the element order', () => {
    const original = registered();
    const modified = structuredClone(original);
    setNodeStatus(modified, CFG, sampleMachine(), fakeInputs(), T0 + 10_000);
    const hb = '2026-11-22T01:00:10Z';
    assert.deepEqual(nodeStatusPatch(original, modified), {
      status: {
        '$setElementOrder/conditions': [
          { type: 'MemoryPressure' },
          { type: 'DiskPressure' },
          { type: 'PIDPressure' },
          { type: 'Ready' },
        ],
        conditions: [
          { type: 'MemoryPressure', lastHeartbeatTime: hb },
          { type: 'DiskPressure', lastHeartbeatTime: hb },
          { type: 'PIDPressure', lastHeartbeatTime: hb },
          { type: 'Ready', lastHeartbeatTime: hb },
        ],
      },
    });
  });

  it('never includes spec, and replaces a changed address list whole', () => {
    const original = registered();
    const modified = structuredClone(original);
    modified.spec = { unschedulable: true };
    modified.status!.addresses = [
      { type: 'InternalIP', address: '10.0.0.9' },
      { type: 'Hostname', address: 'node-a' },
    ];
    const patch = nodeStatusPatch(original, modified);
    assert.deepEqual(patch, {
      status: {
        addresses: [
          { type: 'InternalIP', address: '10.0.0.9' },
          { type: 'Hostname', address: 'node-a' },
          { $patch: 'replace' },
        ],
      },
    });
    const applied = applyStrategicMergePatch(original, patch) as Node;
    assert.deepEqual(applied.status?.addresses, modified.status?.addresses);
  });

  it('round-trips: applying the patch to the original gives the modified node', () => {
    const original = registered();
    original.status!.conditions!.unshift({ type: 'OutOfDisk', status: 'False' });
    original.status!.capacity!['example.com/old'] = '1';
    original.metadata.labels!['kubernetes.io/hostname'] = 'stale';
    const modified = structuredClone(original);
    modified.metadata.labels!['kubernetes.io/hostname'] = 'node-a';
    delete modified.status!.capacity!['example.com/old'];
    const inputs = fakeInputs();
    inputs.ready = { ok: false, message: 'runtime down' };
    setNodeStatus(modified, CFG, sampleMachine({ bootID: 'boot-2' }), inputs, T0 + 10_000);
    const patch = nodeStatusPatch(original, modified);
    assert.deepEqual(applyStrategicMergePatch(original, patch), modified);
    const conditions = (patch['status'] as { conditions: unknown[] }).conditions;
    assert.ok(conditions.some((c) => JSON.stringify(c) === '{"type":"OutOfDisk","$patch":"delete"}'));
    assert.equal(
      (patch['status'] as { capacity: Record<string, unknown> }).capacity['example.com/old'],
      null,
    );
  });
});

describe('nodeStatusPatch after a partition (the node lifecycle controller tainted the node)', () => {
  const unreachable = (effect: 'NoSchedule' | 'NoExecute') => ({
    key: 'node.kubernetes.io/unreachable',
    effect,
    timeAdded: '2026-11-22T01:01:00Z',
  });

  it('leaves spec out when the node has two taints of one key (NoSchedule and NoExecute)', () => {
    const original = registered();
    original.spec = { taints: [unreachable('NoSchedule'), unreachable('NoExecute')] };
    for (const c of original.status!.conditions!) c.status = 'Unknown';
    const modified = structuredClone(original);
    setNodeStatus(modified, CFG, sampleMachine(), fakeInputs(), T0 + 120_000);
    const patch = nodeStatusPatch(original, modified);
    assert.equal(patch['spec'], undefined);
    // The fake server refuses what the real one panics on ($setElementOrder of an atomic list).
    assert.deepEqual(applyStrategicMergePatch(original, patch), modified);
  });

  it('replaces a changed taint list whole, with no $setElementOrder (NodeSpec.taints has no merge key)', () => {
    const before = { spec: { taints: [unreachable('NoSchedule')] } };
    const after = { spec: { taints: [unreachable('NoSchedule'), unreachable('NoExecute')] } };
    assert.deepEqual(twoWayMergePatch(before, after), after);
  });

  it('compares a merge-keyed list with a repeated key whole: nothing when equal, a replace when not', () => {
    const original = registered();
    original.status!.addresses = [
      { type: 'InternalIP', address: '10.0.0.5' },
      { type: 'InternalIP', address: 'fd00::5' },
      { type: 'Hostname', address: 'node-a' },
    ];
    assert.deepEqual(nodeStatusPatch(original, structuredClone(original)), {});
    const changed = {
      status: {
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'Ready', status: 'False' },
        ],
      },
    };
    const patch = twoWayMergePatch({ status: { conditions: [{ type: 'Ready', status: 'True' }] } }, changed);
    assert.deepEqual(patch, {
      status: { conditions: [...changed.status.conditions, { $patch: 'replace' }] },
    });
  });
});

describe('twoWayMergePatch', () => {
  it('merges maps, deletes with null, replaces plain lists', () => {
    assert.deepEqual(
      twoWayMergePatch(
        { a: { x: 1, y: 2 }, l: [1, 2], gone: 'v' },
        { a: { x: 1, y: 3 }, l: [2], added: true },
      ),
      { a: { y: 3 }, l: [2], gone: null, added: true },
    );
  });
});
