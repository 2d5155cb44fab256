export { createNodeAgent, type NodeAgent } from './node-agent.ts';
export type { NodeAgentDeps } from './agent-context.ts';
export type { NodeStatusInputs } from './status-inputs.ts';
export { setNodeStatus, nodeStatusHasChanged } from './node-status.ts';
export { initialNode, reconcileExistingNode } from './initial-node.ts';
export { goArch } from './platform.ts';
export {
  readMachineInfo,
  readHugePages,
  readOnlineCPUs,
  parseMemTotal,
  parseOsRelease,
  type MachineInfo,
  type MachineReaders,
} from './machine-info.ts';
export { nodeStatusPatch } from './patch.ts';
export {
  allocatableReservation,
  formatResource,
  hugePagesCapacity,
  nodeReservations,
  subtractReservation,
  totalReserved,
  type NodeReservations,
  type ResourceAmounts,
} from './capacity.ts';
export type {
  Lease,
  Node,
  NodeAddress,
  NodeCondition,
  NodeEventRecorder,
  NodeObjectReference,
  NodeStatus,
  NodeSystemInfo,
  Taint,
  TaintEffect,
} from './types.ts';
