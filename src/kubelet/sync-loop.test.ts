import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMemoryRecorder } from '../api/events.ts';
import type { KubeletPod, PodStatus } from '../api/types.ts';
import { AsyncQueue } from '../util/async-queue.ts';
import { nullLogger } from '../util/logger.ts';
import { generalPredicatesAdmitHandler } from './admission.ts';
import { createPodState } from './pod-state.ts';
import type { PodWorkers } from './pod-workers.ts';
import { createSyncLoop, type LoopEvent, type SyncLoopDeps } from './sync-loop.ts';
import { buildPod } from '../../test/kit/pod.ts';

function pod(i: number): KubeletPod {
  return buildPod(`p${i}`, { namespace: 'ns', uid: `uid-${i}`, creationTimestamp: '2026-11-24T00:00:00Z' });
}

describe('sync loop: pod additions', () => {
  it('admits a large ADD against the active pods without walking every desired pod per pod (10,000 manifests stalled the loop)', async () => {
    const n = 3_000;
    const statuses = new Map<string, PodStatus>();
    let phaseCalls = 0;
    const started: string[] = [];
    const workers = {
      phase: () => {
        phaseCalls++;
        return undefined;
      },
      update: (w: { type: string; pod?: KubeletPod }) => {
        if (w.pod) started.push(w.pod.metadata.uid);
      },
    } as unknown as PodWorkers;
    const queue = new AsyncQueue<LoopEvent>(10);
    const deps = {
      queue,
      state: createPodState(),
      workers,
      statuses: {
        get: (uid: string) => statuses.get(uid),
        set: (uid: string, s: PodStatus) => void statuses.set(uid, s),
      },
      admitHandlers: [
        generalPredicatesAdmitHandler(() => ({
          name: 'n',
          labels: {},
          allocatable: { milliCPU: 4000, memory: 2 ** 33, pods: 110 },
        })),
      ],
      qos: { update: () => Promise.resolve() },
      recorder: createMemoryRecorder(),
      logger: nullLogger,
      monotonic: () => 0,
    } as unknown as SyncLoopDeps;
    const loop = createSyncLoop(deps);
    const running = loop.run();
    queue.push({
      kind: 'config',
      update: { op: 'ADD', source: 'file', pods: Array.from({ length: n }, (_, i) => pod(i)) },
    });
    queue.close();
    await running;
    assert.equal(started.length, 110, 'up to maxPods admitted');
    assert.equal([...statuses.values()].filter((s) => s.reason === 'OutOfpods').length, n - 110);
    // Linear in the pods added: once per pod, plus the one listing of the pods already active.
    // Listing the active pods anew for each pod asked ~330,000 times here (quadratic in n).
    assert.ok(phaseCalls <= 2 * n, `workers.phase asked ${phaseCalls} times for ${n} pods`);
  });
});
