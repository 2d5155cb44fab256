export {
  createVolumeManager,
  emptyDirPath,
  podDir,
  projectedVolumePath,
  type VolumeManager,
  type VolumeManagerOptions,
} from './volume-manager.ts';
export type {
  ConfigMap,
  ObjectChange,
  PersistentVolume,
  PersistentVolumeClaim,
  Secret,
  VolumeObjectMeta,
  VolumeObjectSource,
} from './objects.ts';
export type { NodeAllocatable } from './downward-api.ts';
export type { PodMeasuredVolume } from './pv-plugins.ts';
export { mountsUnder } from './mounts.ts';
export type { VolumeCount, VolumeMetrics, VolumeOperation, VolumeWorld } from './volume-metrics.ts';
export {
  createTokenManager,
  type ServiceAccountToken,
  type ServiceAccountTokenSource,
  type TokenManagerOptions,
  type TokenRequestSpec,
} from './token-manager.ts';
export { writeAtomically, type FileProjection, type Payload } from './atomic-writer.ts';
