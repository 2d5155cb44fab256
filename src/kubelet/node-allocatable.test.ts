// The node's reservations as the kubelet resolves them (node-allocatable.ts, node-view.ts). Upstream
// counterparts: cmd/kubelet/app/server.go run() and pkg/kubelet/cm/node_container_manager_linux.go.
import assert from 'node:assert/strict';
import { totalmem } from 'node:os';
import { describe, it } from 'node:test';
import { testKubeletConfig } from '../config/testing.ts';
import { hasCode } from '../util/errors.ts';
import {
  checkNodeAllocatable,
  kubepodsAllocatable,
  nodeAllocatablePlan,
  reservedCgroupOptions,
} from './node-allocatable.ts';
import { machineNodeView } from './node-view.ts';

const GI = 2 ** 30;
const MI = 2 ** 20;
const CPUS = [0, 1, 2, 3];

const config = testKubeletConfig({
  systemReserved: { cpu: '500m', memory: '1Gi', pid: '1000' },
  kubeReserved: { cpu: '250m', memory: '512Mi', 'ephemeral-storage': '1Gi' },
  systemReservedCgroup: '/system.slice',
  evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' },
});

describe('node allocatable plan', () => {
  it('sums the reservations and keeps the hard memory and nodefs thresholds', () => {
    const plan = nodeAllocatablePlan(config, CPUS);
    assert.deepEqual(plan.reserved, { cpu: 0.75, memory: GI + 512 * MI, pid: 1000, 'ephemeral-storage': GI });
    assert.deepEqual(plan.evictionHard, { memoryAvailable: '100Mi', nodefsAvailable: '10%' });
  });

  it('sizes kubepods as capacity − system − kube reserved, without the eviction thresholds (upstream)', () => {
    const plan = nodeAllocatablePlan(config, CPUS);
    assert.deepEqual(kubepodsAllocatable(plan, { milliCPU: 4000, memory: 8 * GI, pids: 32_768 }), {
      milliCPU: 3250,
      memory: 8 * GI - GI - 512 * MI,
      pids: 31_768,
    });
  });

  it('hands the container manager each reservation with its cgroup', () => {
    assert.deepEqual(reservedCgroupOptions(config, nodeAllocatablePlan(config, CPUS)), {
      systemReserved: { milliCPU: 500, memory: GI, pids: 1000 },
      kubeReserved: { milliCPU: 250, memory: 512 * MI },
      systemReservedCgroup: '/system.slice',
    });
  });

  it('reserves the reserved CPUs in place of the configured cpu', () => {
    const plan = nodeAllocatablePlan({ ...config, reservedSystemCPUs: '3', systemReservedCgroup: '' }, CPUS);
    assert.equal(plan.reserved['cpu'], 1);
    assert.throws(
      () => nodeAllocatablePlan({ ...config, reservedSystemCPUs: '4-5' }, CPUS),
      (err: unknown) => hasCode(err, 'InvalidArgument'),
    );
  });

  it('refuses reservations beyond the machine (upstream validateNodeAllocatable)', () => {
    const plan = nodeAllocatablePlan(config, CPUS);
    checkNodeAllocatable(plan, { milliCPU: 4000, memory: 8 * GI });
    assert.throws(
      () => checkNodeAllocatable(plan, { milliCPU: 500, memory: 8 * GI }),
      /invalid Node Allocatable configuration. Resource "cpu" has a reservation of 750m, more than its capacity 500m/,
    );
  });

  it('admits standalone pods against the machine minus reservations and hard eviction', () => {
    const view = machineNodeView('node-a', 110, nodeAllocatablePlan(config, CPUS));
    assert.equal(view.allocatable.memory, totalmem() - GI - 512 * MI - 100 * MI);
    assert.equal(view.allocatable.pods, 110);
    assert.equal(machineNodeView('node-a', 110).allocatable.memory, totalmem());
  });
});
