// Container lifecycle hooks (upstream pkg/kubelet/lifecycle handlerRunner): postStart and preStop.
export {
  createHookRunner,
  graceAfterPreStop,
  postStartTimeoutSeconds,
  restoreHookSpec,
  type HookRunner,
} from './hooks.ts';
export { hookPodIP } from './hook-pod-ip.ts';
