import { availableParallelism, totalmem } from 'node:os';
import type { NodeView } from './admission.ts';
import { parseQuantity, milliCPU } from '../api/quantity.ts';
import {
  allocatableReservation,
  hugePagesCapacity,
  readHugePages,
  subtractReservation,
} from '../node/index.ts';
import type { Logger } from '../util/logger.ts';
import type { NodeAllocatablePlan } from './node-allocatable.ts';

/** Go's GOARCH names for Node's process.arch. */
export function goArch(arch: string = process.arch): string {
  const map: Record<string, string> = {
    x64: 'amd64',
    arm64: 'arm64',
    arm: 'arm',
    ia32: '386',
    ppc64: 'ppc64le',
    s390x: 's390x',
  };
  return map[arch] ?? arch;
}

/** The default node labels upstream sets (kubelet_node_status.go initialNode). */
export function defaultNodeLabels(nodeName: string): Record<string, string> {
  return {
    'kubernetes.io/hostname': nodeName,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': goArch(),
    'beta.kubernetes.io/os': 'linux',
    'beta.kubernetes.io/arch': goArch(),
  };
}

/** The machine's cpu (millicores) and memory (bytes), as the container manager sizes kubepods from. */
export function machineResources(): { milliCPU: number; memory: number } {
  return { milliCPU: availableParallelism() * 1000, memory: totalmem() };
}

/** The machine's huge pages in bytes by resource name (`hugepages-2Mi`), for the kubepods hugetlb limits. */
export async function machineHugePages(logger?: Logger): Promise<Record<string, number>> {
  return hugePagesCapacity(await readHugePages(undefined, logger));
}

/**
 * Standalone: the node as upstream's initial node sees it: the machine minus the reservations
 * and the hard eviction thresholds (`plan`; none when absent).
 */
export function machineNodeView(nodeName: string, maxPods: number, plan?: NodeAllocatablePlan): NodeView {
  const m = machineResources();
  const capacity = { cpu: m.milliCPU / 1000, memory: m.memory, pods: maxPods };
  const a = plan ? subtractReservation(capacity, allocatableReservation(capacity, plan)) : capacity;
  return {
    name: nodeName,
    labels: defaultNodeLabels(nodeName),
    allocatable: {
      milliCPU: Math.round((a['cpu'] ?? 0) * 1000),
      memory: a['memory'] ?? 0,
      pods: a['pods'] ?? maxPods,
    },
  };
}

/** A NodeView from a Node object's labels and status.allocatable (quantities as strings). */
export function nodeViewFromNode(node: {
  metadata: { name?: string; labels?: Record<string, string> };
  status?: { allocatable?: Record<string, string> };
}): NodeView {
  const a = node.status?.allocatable ?? {};
  return {
    name: node.metadata.name ?? '',
    labels: node.metadata.labels ?? {},
    allocatable: {
      milliCPU: a.cpu !== undefined ? milliCPU(a.cpu, 'status.allocatable.cpu') : 0,
      memory: a.memory !== undefined ? parseQuantity(a.memory, 'status.allocatable.memory') : 0,
      pods: a.pods !== undefined ? parseQuantity(a.pods, 'status.allocatable.pods') : 0,
    },
  };
}
