import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { initialNode, reconcileExistingNode } from './initial-node.ts';
import { goArch } from './platform.ts';
import { fakeInputs, sampleMachine, statusConfig } from './testing.ts';
import type { Node } from './types.ts';

const T0 = Date.parse('2026-11-22T01:00:00.400Z');

describe('initialNode (registration object)', () => {
  it('carries default and custom labels, the attach-detach annotation and the taints', () => {
    const { node, warnings } = initialNode(
      statusConfig(),
      {
        labels: { 'example.com/role': '', 'kubernetes.io/hostname': 'custom' },
        taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
      },
      sampleMachine(),
      fakeInputs(),
      T0,
    );
    assert.deepEqual(node.metadata.labels, {
      'kubernetes.io/hostname': 'custom',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': goArch(),
      'beta.kubernetes.io/os': 'linux',
      'beta.kubernetes.io/arch': goArch(),
      'example.com/role': '',
    });
    assert.deepEqual(node.metadata.annotations, {
      'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
    });
    assert.deepEqual(node.spec, { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] });
    assert.deepEqual(warnings, [
      'the node label kubernetes.io/hostname=custom will overwrite default setting node-a',
    ]);
  });

  it('reports capacity, allocatable minus the hard eviction thresholds, addresses and system info', () => {
    const { node } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
    );
    assert.deepEqual(node.status?.capacity, {
      cpu: '2',
      memory: '24000Mi',
      'hugepages-1Gi': '0',
      'hugepages-2Mi': '0',
      pods: '110',
      'ephemeral-storage': '264212084Ki',
    });
    assert.deepEqual(node.status?.allocatable, {
      cpu: '2',
      memory: '23900Mi', // 100Mi memory.available
      'hugepages-1Gi': '0',
      'hugepages-2Mi': '0',
      pods: '110',
      'ephemeral-storage': '243497856212', // 10% nodefs.available, float32 as upstream
    });
    assert.deepEqual(node.status?.addresses, [
      { type: 'InternalIP', address: '10.0.0.5' },
      { type: 'Hostname', address: 'node-a' },
    ]);
    assert.deepEqual(node.status?.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
    assert.deepEqual(node.status?.nodeInfo, {
      machineID: 'm-123',
      systemUUID: 'sys-uuid',
      bootID: 'boot-1',
      kernelVersion: '6.1.0-test-amd64',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      containerRuntimeVersion: 'containerd://1.6.20~ds1',
      kubeletVersion: 'v1.20.2',
      kubeProxyVersion: 'v1.20.2',
      operatingSystem: 'linux',
      architecture: goArch(),
    });
  });

  it('subtracts reserved resources and huge pages from allocatable', () => {
    const { node } = initialNode(
      statusConfig({ reserved: { cpu: 0.5, memory: 2 ** 30 }, evictionHard: {} }),
      { labels: {}, taints: [] },
      sampleMachine({ hugePages: [{ pageSizeKiB: 2048, numPages: 512 }] }),
      fakeInputs(),
      T0,
    );
    assert.equal(node.status?.capacity?.['hugepages-2Mi'], '1Gi');
    assert.equal(node.status?.allocatable?.['cpu'], '1500m');
    assert.equal(node.status?.allocatable?.['memory'], '21952Mi'); // 24000Mi - 1Gi reserved - 1Gi huge pages
  });

  it('sets the three pressure conditions False and Ready True, with events for the pressure ones', () => {
    const { node, events } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
    );
    const at = '2026-11-22T01:00:00Z';
    assert.deepEqual(node.status?.conditions, [
      {
        type: 'MemoryPressure',
        status: 'False',
        reason: 'KubeletHasSufficientMemory',
        message: 'kubelet has sufficient memory available',
        lastHeartbeatTime: at,
        lastTransitionTime: at,
      },
      {
        type: 'DiskPressure',
        status: 'False',
        reason: 'KubeletHasNoDiskPressure',
        message: 'kubelet has no disk pressure',
        lastHeartbeatTime: at,
        lastTransitionTime: at,
      },
      {
        type: 'PIDPressure',
        status: 'False',
        reason: 'KubeletHasSufficientPID',
        message: 'kubelet has sufficient PID available',
        lastHeartbeatTime: at,
        lastTransitionTime: at,
      },
      {
        type: 'Ready',
        status: 'True',
        reason: 'KubeletReady',
        message: 'kubelet is posting ready status',
        lastHeartbeatTime: at,
        lastTransitionTime: at,
      },
    ]);
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.reason}: ${e.message}`),
      [
        'Normal NodeHasSufficientMemory: Node node-a status is now: NodeHasSufficientMemory',
        'Normal NodeHasNoDiskPressure: Node node-a status is now: NodeHasNoDiskPressure',
        'Normal NodeHasSufficientPID: Node node-a status is now: NodeHasSufficientPID',
      ],
    );
  });

  it('leaves addresses out (with a warning) when no node IP is known', () => {
    const { node, warnings } = initialNode(
      statusConfig({ nodeIP: undefined }),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
    );
    assert.equal(node.status?.addresses, undefined);
    assert.match(warnings.join('\n'), /can't get ip address of node node-a/);
  });
});

describe('reconcileExistingNode (adopting a Node registered before)', () => {
  it('updates default labels, the attach-detach annotation and huge pages; keeps other labels', () => {
    const { node: initial } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
    );
    const existing: Node = {
      metadata: {
        name: 'node-a',
        uid: 'u1',
        labels: { 'kubernetes.io/hostname': 'old-name', 'kubernetes.io/os': 'linux', team: 'x' },
      },
      status: {
        capacity: { cpu: '2', 'hugepages-16Gi': '0' },
        allocatable: { cpu: '2', 'hugepages-16Gi': '0' },
      },
    };
    assert.equal(reconcileExistingNode(initial, existing), true);
    assert.deepEqual(existing.metadata.labels, {
      'kubernetes.io/hostname': 'node-a',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': goArch(),
      'beta.kubernetes.io/os': 'linux',
      'beta.kubernetes.io/arch': goArch(),
      team: 'x',
    });
    assert.equal(
      existing.metadata.annotations?.['volumes.kubernetes.io/controller-managed-attach-detach'],
      'true',
    );
    assert.deepEqual(existing.status?.capacity, { cpu: '2', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0' });
    assert.deepEqual(existing.status?.allocatable, { cpu: '2', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0' });
  });

  it('reports no change for a node that already matches', () => {
    const { node: initial } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
    );
    const existing = structuredClone(initial);
    assert.equal(reconcileExistingNode(initial, existing), false);
  });

  it('copies capacity and allocatable to a node that has none', () => {
    const { node: initial } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
    );
    const existing: Node = { metadata: { name: 'node-a', labels: structuredClone(initial.metadata.labels) } };
    existing.metadata.annotations = structuredClone(initial.metadata.annotations);
    assert.equal(reconcileExistingNode(initial, existing), true);
    assert.deepEqual(existing.status?.capacity, initial.status?.capacity);
    assert.deepEqual(existing.status?.allocatable, initial.status?.allocatable);
  });
});
