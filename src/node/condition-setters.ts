/**
 * The node condition setters (upstream pkg/kubelet/nodestatus setters.go: MemoryPressureCondition,
 * DiskPressureCondition, PIDPressureCondition, ReadyCondition, RemoveOutOfDiskCondition). A
 * condition's lastTransitionTime moves, and an event is asked for, only when its status changes.
 */
import type { ConditionStatus } from '../api/types.ts';
import { nodeStatusEvent, type NodeStatusEvent, type NodeStatusInputs } from './status-inputs.ts';
import type { Node, NodeCondition } from './types.ts';

/** upstream Memory/Disk/PIDPressureCondition: one shape, three sets of words. */
const PRESSURE = {
  MemoryPressure: {
    on: [
      'KubeletHasInsufficientMemory',
      'kubelet has insufficient memory available',
      'NodeHasInsufficientMemory',
    ],
    off: ['KubeletHasSufficientMemory', 'kubelet has sufficient memory available', 'NodeHasSufficientMemory'],
  },
  DiskPressure: {
    on: ['KubeletHasDiskPressure', 'kubelet has disk pressure', 'NodeHasDiskPressure'],
    off: ['KubeletHasNoDiskPressure', 'kubelet has no disk pressure', 'NodeHasNoDiskPressure'],
  },
  PIDPressure: {
    on: ['KubeletHasInsufficientPID', 'kubelet has insufficient PID available', 'NodeHasInsufficientPID'],
    off: ['KubeletHasSufficientPID', 'kubelet has sufficient PID available', 'NodeHasSufficientPID'],
  },
} as const;

export function setPressureCondition(
  node: Node,
  type: keyof typeof PRESSURE,
  underPressure: boolean,
  now: string,
  nodeName: string,
  events: NodeStatusEvent[],
): void {
  const conditions = ((node.status ??= {}).conditions ??= []);
  let condition = conditions.find((c) => c.type === type);
  if (!condition) {
    condition = { type, status: 'Unknown' };
    conditions.push(condition);
  }
  condition.lastHeartbeatTime = now;
  const want: ConditionStatus = underPressure ? 'True' : 'False';
  if (condition.status !== want) {
    const [reason, message, event] = underPressure ? PRESSURE[type].on : PRESSURE[type].off;
    condition.status = want;
    condition.reason = reason;
    condition.message = message;
    condition.lastTransitionTime = now;
    events.push(nodeStatusEvent(nodeName, event));
  }
}

const REQUIRED_CAPACITIES = ['cpu', 'memory', 'pods', 'ephemeral-storage'];

/** upstream ReadyCondition. */
export function setReadyCondition(
  node: Node,
  inputs: NodeStatusInputs,
  now: string,
  nodeName: string,
  events: NodeStatusEvent[],
): void {
  const status = (node.status ??= {});
  const errs: string[] = [];
  const runtime = inputs.runtimeReady();
  if (!runtime.ok) errs.push(runtime.message || 'container runtime is not ready');
  const shutdownError = inputs.nodeShutdownError?.();
  if (shutdownError) errs.push(shutdownError);
  const missing = REQUIRED_CAPACITIES.filter((r) => status.capacity?.[r] === undefined);
  if (missing.length > 0) errs.push(`Missing node capacity for resources: ${missing.join(', ')}`);

  const ready: NodeCondition =
    errs.length === 0
      ? {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'kubelet is posting ready status',
          lastHeartbeatTime: now,
        }
      : {
          type: 'Ready',
          status: 'False',
          reason: 'KubeletNotReady',
          // utilerrors.NewAggregate: one error as is, several as `[a, b]`
          message: errs.length === 1 ? (errs[0] ?? '') : `[${errs.join(', ')}]`,
          lastHeartbeatTime: now,
        };

  const conditions = (status.conditions ??= []);
  const i = conditions.findIndex((c) => c.type === 'Ready');
  const existing = i >= 0 ? conditions[i] : undefined;
  if (existing === undefined) {
    ready.lastTransitionTime = now;
    conditions.push(ready);
    return;
  }
  if (existing.status === ready.status) {
    if (existing.lastTransitionTime !== undefined) ready.lastTransitionTime = existing.lastTransitionTime;
  } else {
    ready.lastTransitionTime = now;
    events.push(nodeStatusEvent(nodeName, ready.status === 'True' ? 'NodeReady' : 'NodeNotReady'));
  }
  conditions[i] = ready;
}

/** upstream RemoveOutOfDiskCondition: a condition the kubelet stopped setting in 1.12. */
export function removeOutOfDiskCondition(node: Node): void {
  const status = node.status;
  if (status?.conditions?.some((c) => c.type === 'OutOfDisk')) {
    status.conditions = status.conditions.filter((c) => c.type !== 'OutOfDisk');
  }
}
