/**
 * Container and sandbox garbage collection (upstream kubecontainer.GC over kuberuntime's
 * containerGC): the kubelet runs `collect()` every CONTAINER_GC_PERIOD_MS once its sources are ready.
 * Image garbage collection (upstream realImageGCManager): `collect()` every IMAGE_GC_PERIOD_MS.
 */
export {
  createContainerGC,
  type ContainerGC,
  type ContainerGCDeps,
  type GCPassResult,
} from './container-gc.ts';
export type { ContainerGCPolicy } from './evict.ts';
export {
  createImageGC,
  type ImageGC,
  type ImageGCDeps,
  type ImageGCPassResult,
  type ImageGCPolicy,
} from './image-gc.ts';
export { createImageFsUsage, type ImageFsUsage, type ImageFsUsageFn } from './image-fs.ts';
