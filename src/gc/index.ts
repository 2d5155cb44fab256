/**
 * Container and sandbox garbage collection (upstream kubecontainer.GC over kuberuntime's
 * containerGC): the kubelet runs `collect()` every CONTAINER_GC_PERIOD_MS once its sources are ready.
 */
export {
  createContainerGC,
  type ContainerGC,
  type ContainerGCDeps,
  type GCPassResult,
} from './container-gc.ts';
export type { ContainerGCPolicy } from './evict.ts';
