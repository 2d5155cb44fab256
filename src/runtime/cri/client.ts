import path from 'node:path';
import {
  Client,
  credentials,
  Metadata,
  status as GrpcStatus,
  type ClientUnaryCall,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync, type MethodDefinition, type PackageDefinition } from '@grpc/proto-loader';
import {
  CRI_BASE_BACKOFF_DELAY_MS,
  CRI_MAX_BACKOFF_DELAY_MS,
  CRI_MAX_MESSAGE_BYTES,
  DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS,
} from '../../config/defaults.ts';
import { describeError, KubeletError } from '../../util/errors.ts';
import { nullLogger, type Logger } from '../../util/logger.ts';
import { CriError } from './errors.ts';
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

export interface CriClientOptions {
  /** `unix:///path/to.sock`, or a bare absolute socket path. */
  endpoint: string;
  /** Default deadline per call (upstream runtimeRequestTimeout, 2 min). */
  timeoutMs?: number;
  logger?: Logger;
}

/**
 * A connection to a CRI runtime: both services share one gRPC channel. Creating it does not
 * connect; the first call does, and a runtime that is down fails calls with `Unavailable`
 * rather than blocking them.
 */
export interface CriClient {
  runtime: RuntimeService;
  image: ImageService;
  /** Closes the channel; calls made afterwards reject with `Unavailable`. */
  close(): void;
}

const PROTO_PATH = path.join(import.meta.dirname, 'api.proto');

let packageDefinition: PackageDefinition | undefined;

/**
 * The parsed `api.proto`, loaded once per process and shared by every client (and by in-process
 * fake runtimes in tests, which serve the same definition).
 */
export function criPackageDefinition(): PackageDefinition {
  packageDefinition ??= loadSync(PROTO_PATH, {
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return packageDefinition;
}

type ServiceName = 'RuntimeService' | 'ImageService';
type Method = MethodDefinition<object, object>;

function methodOf(service: ServiceName, name: string): Method {
  const svc = criPackageDefinition()[`runtime.v1.${service}`];
  // Message and enum definitions carry a `format`; services are plain maps of methods.
  const method = svc && !('format' in svc) ? svc[name] : undefined;
  if (!method) {
    throw new KubeletError('Internal', `CRI ${name}`, `method ${service}.${name} is missing from api.proto`);
  }
  return method;
}

/** Accepts `unix:///abs`, `unix:/abs`, `unix:rel` and a bare path; rejects other schemes. */
export function grpcTarget(endpoint: string): string {
  if (endpoint.startsWith('unix:')) return endpoint;
  if (endpoint.startsWith('/')) return `unix://${endpoint}`;
  throw new KubeletError(
    'InvalidArgument',
    'CRI connect',
    `endpoint ${JSON.stringify(endpoint)} is not a unix socket (want unix:///path/to.sock)`,
  );
}

/**
 * `defaults: true` decodes an absent message field as null. Our types model absent fields as
 * missing (`?:`), so nulls are dropped here, once, for every response.
 */
function dropNulls(value: unknown): unknown {
  if (Array.isArray(value)) {
    for (const item of value) dropNulls(item);
    return value;
  }
  if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    const obj = value as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      if (obj[key] === null) delete obj[key];
      else dropNulls(obj[key]);
    }
  }
  return value;
}

/** How long a call may take when the caller gives no `timeoutMs`; undefined means no deadline. */
type DefaultDeadline = number | undefined;

interface Invoker {
  call<Res>(
    service: ServiceName,
    name: string,
    request: object,
    opts: CallOptions | undefined,
    defaultDeadlineMs: DefaultDeadline,
  ): Promise<Res>;
}

function createInvoker(client: Client, isClosed: () => boolean, logger: Logger): Invoker {
  return {
    call<Res>(
      service: ServiceName,
      name: string,
      request: object,
      opts: CallOptions | undefined,
      defaultDeadlineMs: DefaultDeadline,
    ): Promise<Res> {
      const op = `CRI ${name}`;
      const signal = opts?.signal;
      if (isClosed()) {
        return Promise.reject(new CriError(op, GrpcStatus.UNAVAILABLE, 'CRI client is closed'));
      }
      if (signal?.aborted) {
        return Promise.reject(
          new CriError(op, GrpcStatus.CANCELLED, `canceled before start: ${describeError(signal.reason)}`, {
            cause: signal.reason,
          }),
        );
      }
      const method = methodOf(service, name);
      const timeoutMs = opts?.timeoutMs ?? defaultDeadlineMs;
      const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
      const started = performance.now();

      return new Promise<Res>((resolve, reject) => {
        let call: ClientUnaryCall | undefined;
        const onAbort = (): void => call?.cancel();
        signal?.addEventListener('abort', onAbort, { once: true });
        const done = (err: ServiceError | null, response?: object): void => {
          signal?.removeEventListener('abort', onAbort);
          if (err) {
            let details = err.details;
            if (err.code === GrpcStatus.DEADLINE_EXCEEDED && timeoutMs !== undefined) {
              details = `${details} (deadline ${timeoutMs} ms)`;
            } else if (err.code === GrpcStatus.CANCELLED && signal?.aborted) {
              details = `canceled: ${describeError(signal.reason)}`;
            }
            const criErr = new CriError(op, err.code, details, { cause: err });
            // Not error level: the caller decides what a failure means (NotFound from a status
            // call is often expected). Kept for debugging.
            logger.debug('CRI call failed', { op, grpcCode: err.code, error: criErr.message });
            reject(criErr);
            return;
          }
          if (logger.isDebugEnabled()) {
            logger.trace('CRI call', { op, durationMs: Math.round(performance.now() - started) });
          }
          resolve(dropNulls(response ?? {}) as Res);
        };
        try {
          call = client.makeUnaryRequest<object, object>(
            method.path,
            method.requestSerialize,
            method.responseDeserialize,
            request,
            new Metadata(),
            { deadline },
            done,
          );
        } catch (err) {
          // grpc-js throws synchronously only for a closed channel or invalid call options.
          signal?.removeEventListener('abort', onAbort);
          reject(new CriError(op, GrpcStatus.UNAVAILABLE, describeError(err), { cause: err }));
        }
      });
    },
  };
}

/** Upstream rejects responses that break the CRI contract instead of passing them on. */
function contractError(op: string, what: string): CriError {
  return new CriError(op, GrpcStatus.UNKNOWN, `runtime response violates CRI: ${what}`);
}

function createRuntimeService(inv: Invoker, timeoutMs: number): RuntimeService {
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
      const res = await call<{ status?: RuntimeStatus }>('Status', { verbose: false }, opts);
      if (!res.status) throw contractError('CRI Status', 'no status');
      return res.status;
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
      const res = await call<{ status?: ContainerStatus }>('ContainerStatus', { containerId }, opts);
      const s = res.status;
      if (!s || !s.id || !s.metadata || !s.createdAt) {
        throw contractError('CRI ContainerStatus', `incomplete status for container ${containerId}`);
      }
      return s;
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

function createImageService(inv: Invoker, timeoutMs: number): ImageService {
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

/** Creates a CRI client; nothing connects until the first call. */
export function createCriClient(opts: CriClientOptions): CriClient {
  const target = grpcTarget(opts.endpoint);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS;
  const logger = (opts.logger ?? nullLogger).child({ component: 'cri', endpoint: opts.endpoint });
  const client = new Client(target, credentials.createInsecure(), {
    'grpc.max_send_message_length': CRI_MAX_MESSAGE_BYTES,
    'grpc.max_receive_message_length': CRI_MAX_MESSAGE_BYTES,
    'grpc.initial_reconnect_backoff_ms': CRI_BASE_BACKOFF_DELAY_MS,
    'grpc.max_reconnect_backoff_ms': CRI_MAX_BACKOFF_DELAY_MS,
    // As upstream; a unix socket has no host name to put in :authority.
    'grpc.default_authority': 'localhost',
  });
  let closed = false;
  const inv = createInvoker(client, () => closed, logger);
  return {
    runtime: createRuntimeService(inv, timeoutMs),
    image: createImageService(inv, timeoutMs),
    close() {
      if (closed) return;
      closed = true;
      client.close();
    },
  };
}
