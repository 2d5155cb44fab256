// The runtime manager (upstream pkg/kubelet/kuberuntime): computes a pod's actions from its spec and
// runtime status and executes them over CRI (sandbox, containers, kill path, status reader).
export {
  backoffKey,
  createRuntimeManager,
  gracePeriodFor,
  type PodSyncResult,
  type RuntimeManager,
  type RuntimePodSummary,
} from './runtime-manager.ts';
export {
  findContainerStatus,
  podIPs,
  shouldContainerBeRestarted,
  type RuntimeContainerState,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
} from './runtime-pod.ts';
export { intAnnotation } from './labels.ts';
export { createRuntimePacer, unpacedRuntime } from './pacer.ts';
export { readHostDNS } from './sandbox-config.ts';
export { appArmorProfileOf, appArmorRequired, seccompProfileRoot } from './security-profiles.ts';
