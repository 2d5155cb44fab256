import type { ImageService, RuntimeService } from '../runtime/cri/index.ts';
import type { RuntimeOperationMetrics } from './kubelet-metrics.ts';

/**
 * upstream's operation_type label of each CRI call (kuberuntime/instrumented_services.go; the stats
 * calls that 1.20's CRI lacked carry the names later releases gave them). Typed over the whole
 * interface, so a new CRI method cannot be added without naming its operation.
 */
const RUNTIME_OPERATIONS: { readonly [K in keyof RuntimeService]: string } = {
  version: 'version',
  status: 'status',
  runPodSandbox: 'run_podsandbox',
  stopPodSandbox: 'stop_podsandbox',
  removePodSandbox: 'remove_podsandbox',
  podSandboxStatus: 'podsandbox_status',
  listPodSandbox: 'list_podsandbox',
  createContainer: 'create_container',
  startContainer: 'start_container',
  stopContainer: 'stop_container',
  removeContainer: 'remove_container',
  listContainers: 'list_containers',
  containerStatus: 'container_status',
  execSync: 'exec_sync',
  exec: 'exec',
  attach: 'attach',
  portForward: 'port_forward',
  reopenContainerLog: 'reopen_container_log',
  containerStats: 'container_stats',
  listContainerStats: 'list_container_stats',
  podSandboxStats: 'podsandbox_stats',
  listPodSandboxStats: 'list_podsandbox_stats',
};

const IMAGE_OPERATIONS: { readonly [K in keyof ImageService]: string } = {
  listImages: 'list_images',
  imageStatus: 'image_status',
  pullImage: 'pull_image',
  removeImage: 'remove_image',
  imageFsInfo: 'image_fs_info',
};

type AnyAsync = (...args: unknown[]) => Promise<unknown>;

function timed(fn: AnyAsync, record: (seconds: number, failed: boolean, args: unknown[]) => void): AnyAsync {
  return async (...args) => {
    const start = performance.now();
    let failed = false;
    try {
      return await fn(...args);
    } catch (err) {
      failed = true;
      throw err;
    } finally {
      record((performance.now() - start) / 1000, failed, args);
    }
  };
}

function instrument<S extends object>(
  service: S,
  operations: { readonly [K in keyof S]: string },
  metrics: RuntimeOperationMetrics,
): S {
  const out: Record<string, AnyAsync> = {};
  for (const key of Object.keys(operations) as (keyof S & string)[]) {
    const method = service[key];
    if (typeof method !== 'function') continue;
    const fn = (method as AnyAsync).bind(service);
    const operation = operations[key];
    out[key] =
      key === 'runPodSandbox'
        ? timed(fn, (seconds, failed, args) => {
            metrics.operation(operation, seconds, failed);
            metrics.runPodSandbox(typeof args[1] === 'string' ? args[1] : '', seconds, failed);
          })
        : timed(fn, (seconds, failed) => metrics.operation(operation, seconds, failed));
  }
  return out as S;
}

/**
 * A RuntimeService that times every call into the runtime operation metrics (count, errors,
 * duration by operation_type) and otherwise behaves exactly as `runtime`: same arguments, same
 * results, errors rethrown as they are. RunPodSandbox also counts a started pod (and a failed one).
 */
export function instrumentRuntimeService(
  runtime: RuntimeService,
  metrics: RuntimeOperationMetrics,
): RuntimeService {
  return instrument(runtime, RUNTIME_OPERATIONS, metrics);
}

/** The same for the ImageService (list_images, image_status, pull_image, remove_image, image_fs_info). */
export function instrumentImageService(images: ImageService, metrics: RuntimeOperationMetrics): ImageService {
  return instrument(images, IMAGE_OPERATIONS, metrics);
}
