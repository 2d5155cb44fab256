/**
 * The core/v1 Node and coordination.k8s.io/v1 Lease objects as they travel on the wire: plain JSON,
 * timestamps as RFC 3339 strings, quantities as strings (like src/api/types.ts). Only the fields
 * tskubelet reads or writes are typed; anything else the API server returns is carried through
 * untouched, because objects are copied, never rebuilt field by field.
 */
import type { ConditionStatus, ObjectMeta } from '../api/types.ts';
import type { EventType } from '../api/events.ts';

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';

export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
  timeAdded?: string;
}

export interface NodeSpec {
  podCIDR?: string;
  podCIDRs?: string[];
  providerID?: string;
  unschedulable?: boolean;
  taints?: Taint[];
}

/** Condition types the kubelet owns (NetworkUnavailable belongs to the network provider). */
export type NodeConditionType = 'Ready' | 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

export interface NodeCondition {
  /** A NodeConditionType, or a type another component sets (kept as is). */
  type: string;
  status: ConditionStatus;
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export type NodeAddressType = 'Hostname' | 'ExternalIP' | 'InternalIP' | 'ExternalDNS' | 'InternalDNS';

export interface NodeAddress {
  type: NodeAddressType;
  address: string;
}

export interface NodeSystemInfo {
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  containerRuntimeVersion: string;
  kubeletVersion: string;
  kubeProxyVersion: string;
  operatingSystem: string;
  architecture: string;
}

export interface NodeDaemonEndpoints {
  /** The field really is spelled `Port` on the wire. */
  kubeletEndpoint?: { Port: number };
}

/** core/v1 ContainerImage: one image on the node, as reported in status.images. */
export interface ContainerImage {
  names?: string[];
  sizeBytes?: number;
}

export interface NodeStatus {
  capacity?: Record<string, string>;
  allocatable?: Record<string, string>;
  conditions?: NodeCondition[];
  addresses?: NodeAddress[];
  daemonEndpoints?: NodeDaemonEndpoints;
  nodeInfo?: NodeSystemInfo;
  images?: ContainerImage[];
  volumesInUse?: string[];
}

export interface Node {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: NodeSpec;
  status?: NodeStatus;
}

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  /** MicroTime: RFC 3339 with microseconds, `2026-11-22T01:02:03.123456Z`. */
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: LeaseSpec;
}

/**
 * The object an event is about (core/v1 ObjectReference subset). For the node, upstream uses
 * kind Node, the node name, and the node name again as UID (kubelet nodeRef).
 */
export interface NodeObjectReference {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

/**
 * Records events about the node. Shaped like ApiEventRecorder.eventFor so the cluster recorder can be
 * passed as is. Must never throw nor block.
 */
export interface NodeEventRecorder {
  eventFor(ref: NodeObjectReference, type: EventType, reason: string, message: string): void;
}
