// What the kubelet needs of a container runtime (upstream pkg/kubelet/container's Runtime, as consumed
// by kubelet.go; Virtual Kubelet's provider boundary). The kubelet, PLEG, status, GC, why and metrics
// see the runtime only through this file: the RuntimeManager (sync a pod, kill it, read its status,
// list pods) and the shapes it answers with, plus the parts the kubelet assembles it from.
// The CRI protocol (runtime/cri/index.ts) and containerd's event stream
// (runtime/containerd-events/index.ts) are contracts of their own; images/, env/, lifecycle/ and
// kuberuntime/ are private to runtime/.
export {
  backoffKey,
  createRuntimeManager,
  findContainerStatus,
  gracePeriodFor,
  podIPs,
  shouldContainerBeRestarted,
  type PodSyncResult,
  type RuntimeContainerState,
  type RuntimeContainerStatus,
  type RuntimeManager,
  type RuntimePodStatus,
  type RuntimePodSummary,
} from './kuberuntime/index.ts';
// Parts the kubelet assembles the runtime manager from (kubelet/managers.ts).
export {
  appArmorProfileOf,
  appArmorRequired,
  createRuntimePacer,
  intAnnotation,
  readHostDNS,
  seccompProfileRoot,
  unpacedRuntime,
} from './kuberuntime/index.ts';
export { createImageManager, createNodeCredentials, type ImagePullState } from './images/index.ts';
export { expandVars, makeEnvironment, type ServiceLister } from './env/index.ts';
