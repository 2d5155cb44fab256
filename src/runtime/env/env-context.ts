/**
 * What every part of the container environment shares (upstream kubelet_pods.go
 * makeEnvironmentVariables' inputs): the context one container's environment is computed in, the
 * warning shape, the error naming the variable, and readers for the untyped `valueFrom` refs.
 */
import type { Container, KubeletPod } from '../../api/types.ts';
import type { Logger } from '../../util/logger.ts';
import { KubeletError, type ErrorCode } from '../../util/errors.ts';
import type { VolumeObjectSource } from '../../volume/index.ts';
import type { ServiceLister } from './service-env.ts';

/** Something about the environment worth an Event on the pod, that does not stop the container. */
export interface EnvWarning {
  /** Upstream event reason, e.g. `InvalidEnvironmentVariableNames`. */
  reason: string;
  message: string;
}

export interface EnvContext {
  pod: KubeletPod;
  container: Container;
  /** status.hostIP at container start (the node's primary IP). */
  hostIP?: string;
  /** status.hostIPs; defaults to `[hostIP]`. */
  hostIPs?: string[];
  /** status.podIPs at container start (the sandbox IPs; the host IPs for a host-network pod). */
  podIPs: string[];
  nodeName: string;
  /** Secrets/ConfigMaps from the API (cluster mode); undefined standalone → valueFrom of those fails clearly. */
  objects?: VolumeObjectSource;
  /** Node allocatable for resourceFieldRef when the container has no limit. */
  nodeAllocatable: { cpu: string; memory: string; 'ephemeral-storage'?: string };
  /**
   * Services for service-link env vars. Cluster mode passes the Service informer; omitted
   * (standalone, no API server) the pod gets no service variables, and no error (as upstream).
   */
  services?: ServiceLister;
  /** Where warnings go (an Event on the pod, typically); without it they are logged through `logger`. */
  onWarning?: (warning: EnvWarning) => void;
  logger?: Logger;
  signal?: AbortSignal;
}

/** The error of one variable (or envFrom source, or `services`): op `env <name>`. */
export function envError(code: ErrorCode, name: string, message: string, cause?: unknown): KubeletError {
  return new KubeletError(code, `env ${name}`, message, cause === undefined ? undefined : { cause });
}

/** A string field of an untyped ref, '' when absent or not a string. */
export function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** An object field of an untyped ref, undefined when absent or not a plain object. */
export function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}
