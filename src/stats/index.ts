/**
 * Resource usage for the kubelet API: `/stats/summary` (stats/v1alpha1 as of 1.20),
 * `/metrics/resource` and a cadvisor-named subset at `/metrics/cadvisor` (CADVISOR_FAMILIES).
 * Sources: CRI ListPodSandboxStats (else ListContainerStats and the pod cgroups), ImageFsInfo,
 * cgroups (v1 and v2), procfs and statfs; no cadvisor, no forks.
 */
export { createStatsProvider, type StatsProvider, type StatsProviderOptions } from './provider.ts';
export { containerLogStats, pvcVolumeStats } from './pod-storage.ts';
export { CADVISOR_FAMILIES } from './resource-metrics.ts';
export { containerScrapeError, cpuTopology, machineMetrics, type MachineFacts } from './machine-metrics.ts';
export { PROMETHEUS_TEXT_CONTENT_TYPE } from './prom-text.ts';
export {
  formatTime,
  type CPUStats,
  type ContainerStats,
  type FsStats,
  type InterfaceStats,
  type MemoryStats,
  type NetworkStats,
  type NodeStats,
  type PodReference,
  type PodStats,
  type ProcessStats,
  type PVCReference,
  type RlimitStats,
  type RuntimeStats,
  type Summary,
  type SystemContainerName,
  type VolumeStats,
} from './types.ts';
