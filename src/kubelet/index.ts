/**
 * The kubelet (upstream pkg/kubelet): `newKubelet(config, deps)` is the one assembly — from the
 * compiled config it builds every manager, source, listener and agent; a dependency given replaces
 * the one it would build (tests: a fake CRI). The core (`kubelet.ts`: sync loop, pod workers,
 * admission, housekeeping) is private to this folder.
 */
export { newKubelet, type AssembledKubelet, type Dependencies } from './new-kubelet.ts';
export { reportedKubeletVersion } from './cluster-connection.ts';
export { kubeletVersionInfo, type VersionInfo } from './version-info.ts';
export type { Kubelet, KubeletDependencies, NodeEventSink, PodView } from './types.ts';
export type { RunOnceResult } from './run-once.ts';
// Hook types the folders below implement (type-only imports up the map: eslint/boundaries.js).
export type { PodAdmitHandler } from './admission.ts';
export type { PodWorkerMetrics } from './pod-workers.ts';
