import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  generalPredicatesAdmitHandler,
  runAdmitHandlers,
  type NodeView,
  type PodAdmitHandler,
} from './admission.ts';

const node = (pods: number): NodeView => ({
  name: 'node1',
  labels: { 'kubernetes.io/hostname': 'node1', disk: 'ssd' },
  allocatable: { milliCPU: 2000, memory: 4 * 2 ** 30, pods },
});
const maxPodsAdmitHandler = (pods: number) => generalPredicatesAdmitHandler(() => node(pods));
import type { Pod } from '../api/types.ts';
import { buildPod } from '../../test/kit/pod.ts';

const pod = (name: string, spec: Partial<Pod['spec']> = {}): Pod =>
  buildPod(name, { uid: name, containers: [], spec });
const requesting = (name: string, cpu: string, memory: string): Pod =>
  pod(name, { containers: [{ name: 'c', resources: { requests: { cpu, memory } } }] });

describe('pod admission', () => {
  it('admits pods while the node has room for them (maxPods)', () => {
    const h = maxPodsAdmitHandler(2);
    assert.deepEqual(h.admit(pod('a'), []), { admit: true });
    assert.deepEqual(h.admit(pod('b'), [pod('a')]), { admit: true });
  });

  it('rejects with OutOfpods and the upstream message once maxPods are active', () => {
    const r = maxPodsAdmitHandler(2).admit(pod('c'), [pod('a'), pod('b')]);
    assert.equal(r.admit, false);
    assert.equal(r.reason, 'OutOfpods');
    assert.equal(r.message, "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2");
  });

  it('walks the handlers in order and reports the first refusal', () => {
    const calls: string[] = [];
    const yes: PodAdmitHandler = { name: 'yes', admit: () => (calls.push('yes'), { admit: true }) };
    const no: PodAdmitHandler = {
      name: 'no',
      admit: () => (calls.push('no'), { admit: false, reason: 'Nope', message: 'no' }),
    };
    const never: PodAdmitHandler = { name: 'never', admit: () => (calls.push('never'), { admit: true }) };
    assert.equal(runAdmitHandlers([yes, no, never], pod('a'), []).reason, 'Nope');
    assert.deepEqual(calls, ['yes', 'no']);
  });

  it('rejects with OutOfcpu / OutOfmemory when requests exceed what is left of allocatable', () => {
    const h = maxPodsAdmitHandler(110);
    const cpu = h.admit(requesting('big', '1500m', '1Gi'), [requesting('a', '1', '1Gi')]);
    assert.equal(cpu.reason, 'OutOfcpu');
    assert.equal(
      cpu.message,
      "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000",
    );
    const mem = h.admit(requesting('big', '100m', '3Gi'), [requesting('a', '100m', '2Gi')]);
    assert.equal(mem.reason, 'OutOfmemory');
    assert.deepEqual(h.admit(requesting('fits', '1', '2Gi'), [requesting('a', '1', '2Gi')]), { admit: true });
  });

  it('counts the largest init container when it exceeds the app containers (upstream pod request)', () => {
    const h = maxPodsAdmitHandler(110);
    const p = pod('init-heavy', {
      initContainers: [{ name: 'i', resources: { requests: { cpu: '2500m' } } }],
      containers: [{ name: 'c', resources: { requests: { cpu: '100m' } } }],
    });
    assert.equal(h.admit(p, []).reason, 'OutOfcpu');
  });

  it('adds spec.overhead (RuntimeClass podFixed) to the new pod’s request and to the active pods’ use', () => {
    const h = maxPodsAdmitHandler(110);
    const withOverhead = (name: string, cpu: string): Pod => ({
      ...requesting(name, cpu, '100Mi'),
      spec: { ...requesting(name, cpu, '100Mi').spec, overhead: { cpu: '250m', memory: '120Mi' } },
    });
    // 1000m + 250m requested, 500m + 250m used: exactly the 2000m allocatable.
    assert.deepEqual(h.admit(withOverhead('fits', '1'), [withOverhead('a', '500m')]), { admit: true });
    const r = h.admit(withOverhead('big', '1001m'), [withOverhead('a', '500m')]);
    assert.equal(r.reason, 'OutOfcpu');
    assert.equal(
      r.message,
      "Node didn't have enough resource: cpu, requested: 1251, used: 750, capacity: 2000",
    );
  });

  it('rejects a pod for another node, a taken host port, or a node selector that does not match', () => {
    const h = maxPodsAdmitHandler(110);
    assert.equal(h.admit(pod('x', { nodeName: 'other' }), []).reason, 'NodeName');
    const port = { containers: [{ name: 'c', ports: [{ containerPort: 80, hostPort: 8080 }] }] };
    assert.equal(h.admit(pod('p2', port), [pod('p1', port)]).reason, 'NodePorts');
    assert.deepEqual(h.admit(pod('p3', port), []), { admit: true });
    assert.equal(h.admit(pod('s', { nodeSelector: { disk: 'hdd' } }), []).reason, 'NodeAffinity');
    assert.deepEqual(h.admit(pod('s', { nodeSelector: { disk: 'ssd' } }), []), { admit: true });
    const affinity = (operator: 'In' | 'NotIn', values: string[]) =>
      pod('a', {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchExpressions: [{ key: 'disk', operator, values }] }],
            },
          },
        },
      });
    assert.deepEqual(h.admit(affinity('In', ['ssd', 'nvme']), []), { admit: true });
    assert.equal(h.admit(affinity('NotIn', ['ssd']), []).reason, 'NodeAffinity');
  });
});
