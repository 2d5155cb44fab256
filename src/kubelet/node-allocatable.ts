/**
 * The node's reservations from the compiled config, resolved once per kubelet (upstream
 * cmd/kubelet/app/server.go run(): the reservedSystemCPUs override, parseResourceList, and the
 * hard eviction thresholds NodeConfig hands the container manager). Every consumer subtracts
 * them through src/node/capacity.ts: the Node's status.allocatable (node agent), standalone pod
 * admission (machineNodeView), and the container manager's kubepods and reserved cgroups.
 */
import type { NodeReservedOptions, NodeResources, ReservedResources } from '../cm/index.ts';
import type { KubeletConfig } from '../config/index.ts';
import { KubeletError } from '../util/errors.ts';
import {
  allocatableReservation,
  formatResource,
  nodeReservations,
  subtractReservation,
  totalReserved,
  type NodeReservations,
  type ResourceAmounts,
} from '../node/index.ts';

export interface NodeAllocatablePlan {
  readonly reservations: NodeReservations;
  /** systemReserved + kubeReserved per resource. */
  readonly reserved: ResourceAmounts;
  /** The hard eviction thresholds that reserve memory and nodefs (upstream hardEvictionReservation). */
  readonly evictionHard: { memoryAvailable?: string; nodefsAvailable?: string };
}

/** Throws InvalidArgument when reservedSystemCPUs names a CPU that is not online. */
export function nodeAllocatablePlan(
  config: KubeletConfig,
  onlineCPUs: readonly number[],
): NodeAllocatablePlan {
  const reservations = nodeReservations(config, onlineCPUs);
  const memory = config.evictionHard['memory.available'];
  const nodefs = config.evictionHard['nodefs.available'];
  return {
    reservations,
    reserved: totalReserved(reservations),
    evictionHard: {
      ...(memory !== undefined ? { memoryAvailable: memory } : {}),
      ...(nodefs !== undefined ? { nodefsAvailable: nodefs } : {}),
    },
  };
}

/**
 * The kubepods values when "pods" is enforced (upstream getNodeAllocatableInternalAbsolute):
 * capacity (with the node's task limit) − systemReserved − kubeReserved. The hard eviction
 * thresholds are not subtracted here, as upstream: eviction acts before the cgroup limit does.
 */
export function kubepodsAllocatable(plan: NodeAllocatablePlan, capacity: NodeResources): NodeResources {
  const a = subtractReservation(
    {
      cpu: capacity.milliCPU / 1000,
      memory: capacity.memory,
      ...(capacity.pids !== undefined ? { pid: capacity.pids } : {}),
    },
    plan.reserved,
  );
  return {
    milliCPU: Math.round((a['cpu'] ?? 0) * 1000),
    memory: a['memory'] ?? 0,
    ...(a['pid'] !== undefined ? { pids: a['pid'] } : {}),
  };
}

/** A reservation as the values of its cgroup (cpu in millicores, rounded up as MilliValue). */
export function reservedResources(r: ResourceAmounts): ReservedResources {
  const cpu = r['cpu'];
  const memory = r['memory'];
  const pid = r['pid'];
  return {
    ...(cpu !== undefined ? { milliCPU: Math.ceil(cpu * 1000 - 1e-9) } : {}),
    ...(memory !== undefined ? { memory } : {}),
    ...(pid !== undefined ? { pids: pid } : {}),
  };
}

/** The container manager's reserved-cgroup options: a reservation only when something is reserved. */
export function reservedCgroupOptions(config: KubeletConfig, plan: NodeAllocatablePlan): NodeReservedOptions {
  const { system, kube } = plan.reservations;
  return {
    ...(Object.keys(system).length > 0 ? { systemReserved: reservedResources(system) } : {}),
    ...(Object.keys(kube).length > 0 ? { kubeReserved: reservedResources(kube) } : {}),
    ...(config.systemReservedCgroup !== '' ? { systemReservedCgroup: config.systemReservedCgroup } : {}),
    ...(config.kubeReservedCgroup !== '' ? { kubeReservedCgroup: config.kubeReservedCgroup } : {}),
  };
}

/**
 * upstream validateNodeAllocatable (container manager start): the reservations and hard eviction
 * thresholds together may not exceed the machine's cpu or memory. Throws InvalidArgument.
 */
export function checkNodeAllocatable(
  plan: NodeAllocatablePlan,
  machine: { milliCPU: number; memory: number },
): void {
  const capacity = { cpu: machine.milliCPU / 1000, memory: machine.memory };
  const reservation = allocatableReservation(capacity, plan);
  const problems: string[] = [];
  for (const [k, cap] of Object.entries(capacity)) {
    const r = reservation[k] ?? 0;
    if (r > cap) {
      problems.push(
        `Resource ${JSON.stringify(k)} has a reservation of ${formatResource(k, r)}, more than its capacity ${formatResource(k, cap)}`,
      );
    }
  }
  if (problems.length > 0) {
    throw new KubeletError(
      'InvalidArgument',
      'check node allocatable',
      `invalid Node Allocatable configuration. ${problems.join(' ')}`,
    );
  }
}
