/** Pod sources (file, http), the per-source merge, and static-pod defaulting + validation. */
export type { PodOp, PodSource, PodSourceName, PodUpdate, SourceProblem } from './types.ts';
export { createFileSource, type FileSourceOptions } from './file-source.ts';
export { createHttpSource, decodeHttpBody, type HttpSourceOptions } from './http-source.ts';
export { createApiSource, type ApiSourceOptions } from './api-source.ts';
export { createPodConfig, type PodConfig, type PodConfigOptions } from './pod-config.ts';
export { describeSourceProblem } from './problem-log.ts';
export { createPodStorage, rfc3339Nano, type PodStorage, type PodStorageOptions } from './storage.ts';
export {
  defaultStaticPod,
  staticPodName,
  staticPodUID,
  type StaticPodOptions,
  type StaticPodSource,
} from './static-pod.ts';
export { setPodDefaults, defaultPullPolicy } from './pod-defaults.ts';
export { validatePod } from './pod-validation.ts';
export { formatFieldErrors, type FieldError } from './field-errors.ts';
export { parseManifest } from './decode.ts';
