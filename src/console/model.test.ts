import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { buildPod } from '../../test/kit/pod.ts';
import { consolePod, usageFromSummary } from './model.ts';
import { clusterNodeView, standaloneNodeView } from './node-info.ts';

const pod: KubeletPod = buildPod('web', {
  namespace: 'ns',
  uid: 'u',
  annotations: { 'kubernetes.io/config.source': 'file' },
  initContainers: ['init'],
  containers: ['a', 'b'],
});

void describe('console model', () => {
  void it('lists a pod the kubelet has not synced yet as Pending, NotYetSynced, containers unknown', () => {
    const p = consolePod(pod, undefined);
    assert.equal(p.phase, 'Pending');
    assert.equal(p.reason, 'NotYetSynced');
    assert.equal(p.source, 'file');
    assert.deepEqual(
      p.containers.map((c) => [c.name, c.state, c.restartCount]),
      [
        ['a', 'unknown', 0],
        ['b', 'unknown', 0],
      ],
    );
  });

  void it('reduces statuses to state, reason, exit codes and restarts summed over all containers', () => {
    const p = consolePod(pod, {
      phase: 'Running',
      podIP: '10.88.0.4',
      conditions: [{ type: 'Ready', status: 'False' }],
      initContainerStatuses: [
        {
          name: 'init',
          state: { terminated: { exitCode: 0, reason: 'Completed' } },
          lastState: {},
          ready: true,
          restartCount: 1,
          image: 'busybox:1.29',
          imageID: '',
        },
      ],
      containerStatuses: [
        {
          name: 'a',
          state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 20s' } },
          lastState: { terminated: { exitCode: 2, reason: 'Error', finishedAt: '2026-11-24T20:00:00Z' } },
          ready: false,
          restartCount: 3,
          image: 'busybox:1.29',
          imageID: '',
        },
        {
          name: 'b',
          state: { running: { startedAt: '2026-11-24T19:59:00Z' } },
          lastState: {},
          ready: true,
          restartCount: 0,
          image: 'busybox:1.29',
          imageID: '',
        },
      ],
    });
    assert.equal(p.ready, false);
    assert.equal(p.restarts, 4);
    assert.equal(p.podIP, '10.88.0.4');
    assert.deepEqual(p.initContainers[0], {
      name: 'init',
      image: 'busybox:1.29',
      state: 'terminated',
      exitCode: 0,
      reason: 'Completed',
      ready: true,
      restartCount: 1,
    });
    assert.equal(p.containers[0]?.reason, 'CrashLoopBackOff');
    assert.deepEqual(p.containers[0]?.last, {
      exitCode: 2,
      reason: 'Error',
      finishedAt: '2026-11-24T20:00:00Z',
    });
    assert.equal(p.containers[1]?.state, 'running');
    assert.equal(p.containers[1]?.startedAt, '2026-11-24T19:59:00Z');
  });

  void it('takes node usage from a Summary, ignoring what is missing or not a number', () => {
    assert.deepEqual(
      usageFromSummary({
        node: {
          cpu: { usageNanoCores: 5e8 },
          memory: { workingSetBytes: 1024, availableBytes: 'x' },
          fs: { usedBytes: 1, capacityBytes: 2 },
          runtime: { imageFs: { usedBytes: 3 } },
        },
      }),
      {
        cpuNanoCores: 5e8,
        memoryWorkingSetBytes: 1024,
        fsUsedBytes: 1,
        fsCapacityBytes: 2,
        imageFsUsedBytes: 3,
      },
    );
    assert.equal(usageFromSummary(null), undefined);
    assert.equal(usageFromSummary({}), undefined);
  });

  void it("shows a standalone node's conditions with upstream's reasons", () => {
    const n = standaloneNodeView({
      name: 'n',
      runtimeReady: { ok: false, message: 'container runtime is down' },
      pressure: { memory: true, disk: false, pid: false },
      milliCPU: 2500,
      memoryBytes: 1024,
      pods: 110,
      info: {},
    });
    assert.deepEqual(
      n.conditions.map((c) => [c.type, c.status, c.reason]),
      [
        ['Ready', 'False', 'KubeletNotReady'],
        ['MemoryPressure', 'True', 'KubeletHasInsufficientMemory'],
        ['DiskPressure', 'False', 'KubeletHasNoDiskPressure'],
        ['PIDPressure', 'False', 'KubeletHasSufficientPID'],
      ],
    );
    assert.equal(n.conditions[0]?.message, 'container runtime is down');
    assert.deepEqual(n.capacity, { cpu: '2500m', memory: '1024', pods: '110' });
  });

  void it('shows a cluster node as its Node object says', () => {
    const n = clusterNodeView({
      metadata: { name: 'node-1' },
      status: {
        capacity: { cpu: '2', memory: '24Gi', pods: '110' },
        allocatable: { cpu: '2', memory: '23Gi', pods: '110' },
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
      },
    });
    assert.equal(n.mode, 'cluster');
    assert.equal(n.allocatable.memory, '23Gi');
    assert.deepEqual(n.conditions, [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }]);
  });
});
