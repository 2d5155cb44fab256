/**
 * The CRI RuntimeService and ImageService over any transport (an Invoker): request shapes, the
 * deadline each method gets by default (as upstream), and the checks that a response keeps the
 * CRI contract.
 */
import { CriError } from './errors.ts';
import type { DefaultDeadline, Invoker } from './invoker.ts';
import type {
  AuthConfig,
  CallOptions,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStats,
  ContainerStatus,
  ExecSyncResult,
  FilesystemUsage,
  Image,
  ImageService,
  ImageSpec,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStats,
  PodSandboxStatus,
  RuntimeService,
  RuntimeStatus,
  VersionInfo,
} from './types.ts';

/** The CRI API version tskubelet speaks (sent in VersionRequest, as upstream does). */
const KUBE_RUNTIME_API_VERSION = '0.1.0';
/** gRPC status UNKNOWN. */
const GRPC_UNKNOWN = 2;

/** Upstream rejects responses that break the CRI contract instead of passing them on. */
function contractError(op: string, what: string): CriError {
  return new CriError(op, GRPC_UNKNOWN, `runtime response violates CRI: ${what}`);
}

export function createRuntimeService(inv: Invoker, timeoutMs: number): RuntimeService {
  const call = <Res>(
    name: string,
    req: object,
    opts: CallOptions | undefined,
    deadline: DefaultDeadline = timeoutMs,
  ) => inv.call<Res>('RuntimeService', name, req, opts, deadline);

  return {
    async version(opts) {
      return call<VersionInfo>('Version', { version: KUBE_RUNTIME_API_VERSION }, opts);
    },

    async status(opts) {
      const verbose = opts?.verbose ?? false;
      const res = await call<{ status?: RuntimeStatus; info?: Record<string, string> }>(
        'Status',
        { verbose },
        opts,
      );
      if (!res.status) throw contractError('CRI Status', 'no status');
      return verbose ? { ...res.status, info: res.info ?? {} } : res.status;
    },

    async runPodSandbox(config, runtimeHandler, opts) {
      // Upstream allows sandbox creation twice the request timeout (image pull of pause, CNI).
      const res = await call<{ podSandboxId: string }>(
        'RunPodSandbox',
        { config, runtimeHandler: runtimeHandler ?? '' },
        opts,
        timeoutMs * 2,
      );
      if (!res.podSandboxId) throw contractError('CRI RunPodSandbox', 'empty pod sandbox id');
      return res.podSandboxId;
    },

    async stopPodSandbox(podSandboxId, opts) {
      await call('StopPodSandbox', { podSandboxId }, opts);
    },

    async removePodSandbox(podSandboxId, opts) {
      await call('RemovePodSandbox', { podSandboxId }, opts);
    },

    async podSandboxStatus(podSandboxId, opts) {
      const res = await call<{ status?: PodSandboxStatus }>('PodSandboxStatus', { podSandboxId }, opts);
      const s = res.status;
      if (!s || !s.id || !s.metadata || !s.createdAt) {
        throw contractError('CRI PodSandboxStatus', `incomplete status for sandbox ${podSandboxId}`);
      }
      return s;
    },

    async listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions) {
      const res = await call<{ items: PodSandbox[] }>('ListPodSandbox', { filter }, opts);
      return res.items;
    },

    async createContainer(
      podSandboxId: string,
      config: ContainerConfig,
      sandboxConfig: PodSandboxConfig,
      opts,
    ) {
      const res = await call<{ containerId: string }>(
        'CreateContainer',
        { podSandboxId, config, sandboxConfig },
        opts,
      );
      if (!res.containerId) throw contractError('CRI CreateContainer', 'empty container id');
      return res.containerId;
    },

    async startContainer(containerId, opts) {
      await call('StartContainer', { containerId }, opts);
    },

    async stopContainer(containerId, timeoutSeconds, opts) {
      // The runtime may wait the whole grace period before SIGKILL: the deadline covers it.
      const grace = Math.max(0, Math.trunc(timeoutSeconds));
      await call('StopContainer', { containerId, timeout: grace }, opts, timeoutMs + grace * 1000);
    },

    async removeContainer(containerId, opts) {
      await call('RemoveContainer', { containerId }, opts);
    },

    async listContainers(filter?: ContainerFilter, opts?: CallOptions) {
      const res = await call<{ containers: Container[] }>('ListContainers', { filter }, opts);
      return res.containers;
    },

    async containerStatus(containerId, opts) {
      const verbose = opts?.verbose ?? false;
      const res = await call<{ status?: ContainerStatus; info?: Record<string, string> }>(
        'ContainerStatus',
        { containerId, verbose },
        opts,
      );
      const s = res.status;
      if (!s || !s.id || !s.metadata || !s.createdAt) {
        throw contractError('CRI ContainerStatus', `incomplete status for container ${containerId}`);
      }
      return verbose ? { ...s, info: res.info ?? {} } : s;
    },

    async execSync(containerId, cmd, timeoutSeconds, opts) {
      // As upstream: a command with a timeout gets that much on top of the request timeout (the
      // runtime needs time to kill and clean up); a command without one has no deadline.
      const secs = Math.max(0, Math.trunc(timeoutSeconds));
      const deadline = secs > 0 ? timeoutMs + secs * 1000 : undefined;
      return call<ExecSyncResult>('ExecSync', { containerId, cmd, timeout: secs }, opts, deadline);
    },

    async exec(containerId, cmd, flags, opts) {
      const res = await call<{ url: string }>('Exec', { containerId, cmd, ...flags }, opts);
      if (!res.url) throw contractError('CRI Exec', 'empty streaming URL');
      return res.url;
    },

    async attach(containerId, flags, opts) {
      const res = await call<{ url: string }>('Attach', { containerId, ...flags }, opts);
      if (!res.url) throw contractError('CRI Attach', 'empty streaming URL');
      return res.url;
    },

    async portForward(podSandboxId, ports, opts) {
      const res = await call<{ url: string }>('PortForward', { podSandboxId, port: ports }, opts);
      if (!res.url) throw contractError('CRI PortForward', 'empty streaming URL');
      return res.url;
    },

    async reopenContainerLog(containerId, opts) {
      await call('ReopenContainerLog', { containerId }, opts);
    },

    async containerStats(containerId, opts) {
      const res = await call<{ stats?: ContainerStats }>('ContainerStats', { containerId }, opts);
      if (!res.stats) throw contractError('CRI ContainerStats', `no stats for container ${containerId}`);
      return res.stats;
    },

    async listContainerStats(filter, opts) {
      const res = await call<{ stats: ContainerStats[] }>('ListContainerStats', { filter }, opts);
      return res.stats;
    },

    async podSandboxStats(podSandboxId, opts) {
      const res = await call<{ stats?: PodSandboxStats }>('PodSandboxStats', { podSandboxId }, opts);
      if (!res.stats) throw contractError('CRI PodSandboxStats', `no stats for sandbox ${podSandboxId}`);
      return res.stats;
    },

    async listPodSandboxStats(filter, opts) {
      const res = await call<{ stats: PodSandboxStats[] }>('ListPodSandboxStats', { filter }, opts);
      return res.stats;
    },
  };
}

export function createImageService(inv: Invoker, timeoutMs: number): ImageService {
  const call = <Res>(
    name: string,
    req: object,
    opts: CallOptions | undefined,
    deadline: DefaultDeadline = timeoutMs,
  ) => inv.call<Res>('ImageService', name, req, opts, deadline);

  return {
    async listImages(filter?: ImageSpec, opts?: CallOptions) {
      const res = await call<{ images: Image[] }>(
        'ListImages',
        { filter: filter ? { image: filter } : undefined },
        opts,
      );
      return res.images;
    },

    async imageStatus(image, opts) {
      const res = await call<{ image?: Image }>('ImageStatus', { image, verbose: false }, opts);
      if (!res.image) return null;
      if (!res.image.id || !res.image.size) {
        throw contractError(
          'CRI ImageStatus',
          `id or size of image ${JSON.stringify(image.image)} is not set`,
        );
      }
      return res.image;
    },

    async pullImage(
      image: ImageSpec,
      auth?: AuthConfig,
      sandboxConfig?: PodSandboxConfig,
      opts?: CallOptions,
    ) {
      // Upstream gives PullImage no deadline (a large image may take long); only cancellation
      // ends it. Callers that want a bound pass timeoutMs or a signal.
      const res = await call<{ imageRef: string }>(
        'PullImage',
        { image, auth, sandboxConfig },
        opts,
        undefined,
      );
      if (!res.imageRef) {
        throw contractError('CRI PullImage', `no image reference for ${JSON.stringify(image.image)}`);
      }
      return res.imageRef;
    },

    async removeImage(image, opts) {
      await call('RemoveImage', { image }, opts);
    },

    async imageFsInfo(opts) {
      const res = await call<{ imageFilesystems: FilesystemUsage[] }>('ImageFsInfo', {}, opts);
      return res.imageFilesystems;
    },
  };
}
