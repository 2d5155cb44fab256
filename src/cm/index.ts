/**
 * Pod-level cgroups per QoS class (upstream pkg/kubelet/cm, cgroupfs driver): `kubepods` sized to
 * the node, `kubepods/burstable` and `kubepods/besteffort` tiers, one `pod<uid>` cgroup per pod
 * handed to CRI as the sandbox's cgroup_parent. cgroup v1 (incl. hybrid) and v2.
 */
export { createContainerManager } from './container-manager.ts';
export type { ContainerManager, ContainerManagerOptions } from './container-manager.ts';
export type { CgroupOperation } from './instrumented-cgroups.ts';
export type { NodeResources, ResourceConfig } from './resources.ts';
export type { NodeReservedOptions, ReservedResources } from './node-reserved.ts';
export { resourceConfigForPod, milliCPUToShares, milliCPUToQuota, cpuSharesToWeight } from './resources.ts';
export { qosCgroupNames, podCgroupName } from './names.ts';
export type { QOSCgroupNames } from './names.ts';
export { createQosUpdater, type QosUpdater } from './qos-updater.ts';
export { detectLayout, isCgroup2UnifiedMode, type CgroupLayout } from './cgroup-layout.ts';
export { machineHugePageSizes } from './hugetlb.ts';
export { parsePodCgroupDirName } from './names.ts';
