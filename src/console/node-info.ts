/**
 * The node as the console shows it: in cluster mode the Node object the kubelet last wrote (its
 * conditions, capacity, allocatable, system info); standalone, the same fields computed from what
 * the kubelet knows (runtime readiness, eviction pressure, the machine's size).
 */
import type { Node } from '../node/index.ts';
import type { ConsoleCondition, ConsoleNode } from './model.ts';

export type NodeWithoutUsage = Omit<ConsoleNode, 'usage'>;

export function clusterNodeView(node: Node): NodeWithoutUsage {
  const info = node.status?.nodeInfo;
  return {
    name: node.metadata.name ?? '',
    mode: 'cluster',
    conditions: (node.status?.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      ...(c.reason ? { reason: c.reason } : {}),
      ...(c.message ? { message: c.message } : {}),
      ...(c.lastTransitionTime ? { lastTransitionTime: c.lastTransitionTime } : {}),
    })),
    capacity: { ...node.status?.capacity },
    allocatable: { ...node.status?.allocatable },
    info: info
      ? {
          kubeletVersion: info.kubeletVersion,
          containerRuntimeVersion: info.containerRuntimeVersion,
          osImage: info.osImage,
          kernelVersion: info.kernelVersion,
          architecture: info.architecture,
        }
      : {},
  };
}

export interface StandaloneNodeInputs {
  name: string;
  runtimeReady: { ok: boolean; message: string };
  pressure: { memory: boolean; disk: boolean; pid: boolean };
  milliCPU: number;
  memoryBytes: number;
  pods: number;
  info: Record<string, string>;
}

/** Upstream's reasons and messages (kubelet_node_status setters). */
const PRESSURE: Record<string, { on: string; off: string; onMsg: string; offMsg: string }> = {
  MemoryPressure: {
    on: 'KubeletHasInsufficientMemory',
    off: 'KubeletHasSufficientMemory',
    onMsg: 'kubelet has insufficient memory available',
    offMsg: 'kubelet has sufficient memory available',
  },
  DiskPressure: {
    on: 'KubeletHasDiskPressure',
    off: 'KubeletHasNoDiskPressure',
    onMsg: 'kubelet has disk pressure',
    offMsg: 'kubelet has no disk pressure',
  },
  PIDPressure: {
    on: 'KubeletHasInsufficientPID',
    off: 'KubeletHasSufficientPID',
    onMsg: 'kubelet has insufficient PID available',
    offMsg: 'kubelet has sufficient PID available',
  },
};

function pressure(type: keyof typeof PRESSURE, on: boolean): ConsoleCondition {
  const p = PRESSURE[type];
  if (!p) return { type, status: 'Unknown' };
  return on
    ? { type, status: 'True', reason: p.on, message: p.onMsg }
    : { type, status: 'False', reason: p.off, message: p.offMsg };
}

/** Standalone: the conditions upstream would report, from the kubelet's own checks. */
export function standaloneNodeView(i: StandaloneNodeInputs): NodeWithoutUsage {
  const cpu = i.milliCPU % 1000 === 0 ? String(i.milliCPU / 1000) : `${i.milliCPU}m`;
  const size = { cpu, memory: String(i.memoryBytes), pods: String(i.pods) };
  return {
    name: i.name,
    mode: 'standalone',
    conditions: [
      i.runtimeReady.ok
        ? {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'kubelet is posting ready status',
          }
        : { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: i.runtimeReady.message },
      pressure('MemoryPressure', i.pressure.memory),
      pressure('DiskPressure', i.pressure.disk),
      pressure('PIDPressure', i.pressure.pid),
    ],
    capacity: size,
    allocatable: { ...size },
    info: { ...i.info },
  };
}
