export { createNodeAgent, type NodeAgent, type NodeAgentDeps } from './node-agent.ts';
export type { NodeStatusInputs } from './node-status.ts';
export {
  setNodeStatus,
  initialNode,
  nodeStatusHasChanged,
  reconcileExistingNode,
  goArch,
} from './node-status.ts';
export {
  readMachineInfo,
  parseMemTotal,
  parseOsRelease,
  type MachineInfo,
  type MachineReaders,
} from './machine-info.ts';
export { nodeStatusPatch } from './patch.ts';
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
