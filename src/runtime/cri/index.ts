export { createCriClient, type CriClient, type CriClientOptions } from './client.ts';
export { CriError, isCriError, isCriNotFound, errorCodeForGrpc } from './errors.ts';
export type * from './types.ts';
export { grpcTarget } from './invoker.ts';
export { RUNTIME_PROTO_OPTIONS } from './h2-invoker.ts';
export {
  runtimeCgroupDriver,
  cgroupDriverOfContainerdConfig,
  type RuntimeCgroupDriver,
} from './cgroup-driver.ts';
