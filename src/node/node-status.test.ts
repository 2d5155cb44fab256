import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  goArch,
  initialNode,
  nodeImages,
  nodeStatusHasChanged,
  reconcileExistingNode,
  setNodeStatus,
  type NodeImageInfo,
  type NodeStatusConfig,
} from './node-status.ts';
import { fakeInputs, sampleMachine } from './testing.ts';
import type { Node, NodeCondition } from './types.ts';

const T0 = Date.parse('2026-11-22T01:00:00.400Z');
const T1 = T0 + 10_000;
const T2 = T0 + 20_000;

function cfg(over: Partial<NodeStatusConfig> = {}): NodeStatusConfig {
  return {
    nodeName: 'node-a',
    hostname: 'node-a',
    nodeIP: '10.0.0.5',
    maxPods: 110,
    kubeletVersion: 'v1.20.2',
    kubeletPort: 10250,
    reserved: {},
    evictionHard: { memoryAvailable: '100Mi', nodefsAvailable: '10%' },
    ...over,
  };
}

function condition(node: Node, type: string): NodeCondition | undefined {
  return node.status?.conditions?.find((c) => c.type === type);
}

describe('initialNode (registration object)', () => {
  it('carries default and custom labels, the attach-detach annotation and the taints', () => {
    const { node, warnings } = initialNode(
      cfg(),
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
    const { node } = initialNode(cfg(), { labels: {}, taints: [] }, sampleMachine(), fakeInputs(), T0);
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
      cfg({ reserved: { cpu: '500m', memory: '1Gi' }, evictionHard: {} }),
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
      cfg(),
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
      cfg({ nodeIP: undefined }),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
    );
    assert.equal(node.status?.addresses, undefined);
    assert.match(warnings.join('\n'), /can't get ip address of node node-a/);
  });
});

describe('setNodeStatus (periodic update)', () => {
  it('reports Ready False with the runtime message, and moves lastTransitionTime only on transitions', () => {
    const inputs = fakeInputs();
    const { node } = initialNode(cfg(), { labels: {}, taints: [] }, sampleMachine(), inputs, T0);

    inputs.ready = { ok: false, message: 'container runtime is down' };
    const r1 = setNodeStatus(node, cfg(), sampleMachine(), inputs, T1);
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

    const r2 = setNodeStatus(node, cfg(), sampleMachine(), inputs, T2);
    assert.equal(condition(node, 'Ready')?.lastTransitionTime, '2026-11-22T01:00:10Z');
    assert.equal(condition(node, 'Ready')?.lastHeartbeatTime, '2026-11-22T01:00:20Z');
    assert.deepEqual(r2.events, []);

    inputs.ready = { ok: true, message: '' };
    const r3 = setNodeStatus(node, cfg(), sampleMachine(), inputs, T2 + 10_000);
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
      cfg(),
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
    const { node } = initialNode(cfg(), { labels: {}, taints: [] }, sampleMachine(), inputs, T0);
    inputs.pressures = { memory: true, disk: false, pid: false };
    const r = setNodeStatus(node, cfg(), sampleMachine(), inputs, T1);
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
    const { node } = initialNode(cfg(), { labels: {}, taints: [] }, sampleMachine(), fakeInputs(), T0);
    node.status?.conditions?.unshift({ type: 'OutOfDisk', status: 'False' });
    const r = setNodeStatus(node, cfg(), sampleMachine({ bootID: 'boot-2' }), fakeInputs(), T1);
    assert.deepEqual(r.events, [
      { type: 'Warning', reason: 'Rebooted', message: 'Node node-a has been rebooted, boot id: boot-2' },
    ]);
    assert.equal(node.status?.nodeInfo?.bootID, 'boot-2');
    assert.equal(condition(node, 'OutOfDisk'), undefined);
  });

  it('keeps capacities other components added (extended resources)', () => {
    const { node } = initialNode(cfg(), { labels: {}, taints: [] }, sampleMachine(), fakeInputs(), T0);
    node.status!.capacity!['example.com/dongle'] = '3';
    setNodeStatus(node, cfg(), sampleMachine(), fakeInputs(), T1);
    assert.equal(node.status?.capacity?.['example.com/dongle'], '3');
    assert.equal(node.status?.allocatable?.['example.com/dongle'], '3');
  });
});

describe('nodeStatusHasChanged', () => {
  it('ignores heartbeat times only', () => {
    const inputs = fakeInputs();
    const { node } = initialNode(cfg(), { labels: {}, taints: [] }, sampleMachine(), inputs, T0);
    const before = structuredClone(node.status);
    setNodeStatus(node, cfg(), sampleMachine(), inputs, T1);
    assert.equal(nodeStatusHasChanged(before, node.status), false);

    inputs.ready = { ok: false, message: 'down' };
    setNodeStatus(node, cfg(), sampleMachine(), inputs, T2);
    assert.equal(nodeStatusHasChanged(before, node.status), true);
  });

  it('compares quantities by value and notices other fields', () => {
    const { node } = initialNode(cfg(), { labels: {}, taints: [] }, sampleMachine(), fakeInputs(), T0);
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

describe('reconcileExistingNode (adopting a Node registered before)', () => {
  it('updates default labels, the attach-detach annotation and huge pages; keeps other labels', () => {
    const { node: initial } = initialNode(
      cfg(),
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
      cfg(),
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
      cfg(),
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

describe('node images (upstream Images setter)', () => {
  const img = (id: string, size: number, repoTags: string[] = [], repoDigests: string[] = []) =>
    ({ id, size, repoTags, repoDigests }) satisfies NodeImageInfo;

  it('lists images largest first, equal sizes by ID descending, names = digests then tags', () => {
    const images = [
      img('sha256:a', 10, ['pause:3.6']),
      img('sha256:b', 300, ['busybox:1.29', 'busybox:other'], ['busybox@sha256:d1']),
      img('sha256:c', 10, [], ['app@sha256:d2']),
    ];
    assert.deepEqual(nodeImages(images, 50), [
      { names: ['busybox@sha256:d1', 'busybox:1.29', 'busybox:other'], sizeBytes: 300 },
      { names: ['app@sha256:d2'], sizeBytes: 10 },
      { names: ['pause:3.6'], sizeBytes: 10 },
    ]);
  });

  it('reports at most 5 names per image', () => {
    const tags = ['t1', 't2', 't3', 't4'].map((t) => `app:${t}`);
    const [only] = nodeImages([img('sha256:x', 1, tags, ['app@sha256:1', 'app@sha256:2'])], 50);
    assert.deepEqual(only?.names, ['app@sha256:1', 'app@sha256:2', 'app:t1', 'app:t2', 'app:t3']);
  });

  it('keeps the largest nodeStatusMaxImages; -1 keeps all, 0 none', () => {
    const images = [1, 5, 3, 4, 2].map((n) => img(`sha256:${n}`, n, [`i:${n}`]));
    assert.deepEqual(
      nodeImages(images, 2).map((i) => i.sizeBytes),
      [5, 4],
    );
    assert.equal(nodeImages(images, -1).length, 5);
    assert.equal(nodeImages(images, 9).length, 5);
    assert.deepEqual(nodeImages(images, 0), []);
  });

  it('sets status.images from the list, with the configured cap', () => {
    const { node } = initialNode(
      cfg({ maxImages: 1 }),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
      {
        ok: true,
        images: [img('sha256:small', 1, ['small:1']), img('sha256:big', 9, ['big:1'])],
      },
    );
    assert.deepEqual(node.status?.images, [{ names: ['big:1'], sizeBytes: 9 }]);
  });

  it('drops the field for an empty list, as upstream reports none', () => {
    const { node } = initialNode(cfg(), { labels: {}, taints: [] }, sampleMachine(), fakeInputs(), T0, {
      ok: true,
      images: [img('sha256:a', 1, ['a:1'])],
    });
    setNodeStatus(node, cfg(), sampleMachine(), fakeInputs(), T1, { ok: true, images: [] });
    assert.equal(node.status?.images, undefined);
    assert.ok(!('images' in (node.status ?? {})));
  });

  it('keeps the last list (with a warning) when listing failed, and leaves it alone without a list', () => {
    const { node } = initialNode(cfg(), { labels: {}, taints: [] }, sampleMachine(), fakeInputs(), T0, {
      ok: true,
      images: [img('sha256:a', 7, ['a:1'])],
    });
    const r = setNodeStatus(node, cfg(), sampleMachine(), fakeInputs(), T1, {
      ok: false,
      error: 'CRI ListImages: unavailable',
    });
    assert.deepEqual(r.warnings, ['error getting image list: CRI ListImages: unavailable']);
    assert.deepEqual(node.status?.images, [{ names: ['a:1'], sizeBytes: 7 }]);
    setNodeStatus(node, cfg(), sampleMachine(), fakeInputs(), T2);
    assert.deepEqual(node.status?.images, [{ names: ['a:1'], sizeBytes: 7 }]);
  });

  it('counts a changed image list as a status change', () => {
    const { node } = initialNode(cfg(), { labels: {}, taints: [] }, sampleMachine(), fakeInputs(), T0, {
      ok: true,
      images: [img('sha256:a', 7, ['a:1'])],
    });
    const before = structuredClone(node.status);
    setNodeStatus(node, cfg(), sampleMachine(), fakeInputs(), T1, {
      ok: true,
      images: [img('sha256:a', 7, ['a:1']), img('sha256:b', 3, ['b:1'])],
    });
    assert.equal(nodeStatusHasChanged(before, node.status), true);
  });
});
