/**
 * The kubelet side of CSI (upstream pkg/volume/csi and pkg/kubelet/pluginmanager): drivers register
 * through `<root-dir>/plugins_registry`, the node's CSINode object and node-ID annotation follow
 * them, and a mounter stages and publishes CSI volumes for pods.
 *
 * Contract: `createCsi` builds the parts and starts nothing; `start` begins watching the registry
 * dir. `mounter` is what the volume manager calls for a `csi` PV source or an inline `csi:` pod
 * volume: `setUp` (NodeStage when the driver stages, then NodePublish into the pod's volume dir) and
 * `tearDown` (NodeUnpublish, then NodeUnstage when no other pod publishes the volume); `blockMapper`
 * does the same for a PV in volumeMode Block (`map` / `unmap`, upstream csi_block.go).
 */
import type { ApiClient } from '../../api/client-types.ts';
import { isApiStatus } from '../../api/client-types.ts';
import type { NodeEventSink } from '../../api/events.ts';
import type { Logger } from '../../util/logger.ts';
import { describeError } from '../../util/errors.ts';
import { createCsiClient } from './csi-client.ts';
import { createDriverStore, type DriverStore } from './drivers.ts';
import { appliesFsGroup, createCsiMounter, type CsiMounter } from './mounter.ts';
import { createCsiBlockMapper, type CsiBlockMapper } from './block.ts';
import type { CsiNodeOptions } from './node-ops.ts';
import type { CsiDriverSpec } from './volume-types.ts';
import { createNodeInfoManager } from './node-info.ts';
import { pluginsRegistryDir } from './paths.ts';
import { createPluginWatcher, type PluginWatcher } from './plugin-watcher.ts';
import { CSI_PLUGIN_TYPE, createCsiRegistrationHandler } from './registration-handler.ts';

export { CSI_TIMEOUT_MS, createCsiClient, type CsiClient, type CsiCallOptions } from './csi-client.ts';
export type { VolumeUsage, NodeCapability } from './protos.ts';
export {
  highestSupportedVersion,
  parseGenericVersion,
  type DriverStore,
  type RegisteredDriver,
} from './drivers.ts';
export { PluginCallError, isPluginCallError } from './grpc-unix.ts';
export type { CsiMounter } from './mounter.ts';
export type { CsiBlockMapper } from './block.ts';
export { appliesFsGroup };
export { createCsiVolumeStats, type CsiVolumeStats } from './volume-stats.ts';
export { createCsiInlinePlugin, createCsiPvPlugin } from './pv-plugin.ts';
export {
  csiVolumeFromPersistentVolume,
  csiVolumeFromPodVolume,
  type PersistentVolumeLike,
} from './from-api.ts';
export {
  CsiVolumeError,
  isCsiVolumeError,
  type CsiDriverSpec,
  type CsiInlineSource,
  type CsiPersistentSource,
  type CsiPodRef,
  type CsiStep,
  type CsiVolume,
  type SecretRef,
} from './volume-types.ts';
export { ANNOTATION_NODE_ID, type CSINode, type CSINodeDriver, type NodeInfoManager } from './node-info.ts';
export {
  attachmentName,
  deviceMountPath,
  ephemeralVolumeHandle,
  pluginsRegistryDir,
  podVolumeMountPath,
  blockPublishPath,
  blockStagingPath,
  blockVolumeDir,
  podBlockDevicePath,
  CSI_POD_PLUGIN_DIR,
} from './paths.ts';
export { type PluginHandler, type PluginWatcher, type RegisteredPlugin } from './plugin-watcher.ts';
export { CSI_PLUGIN_TYPE } from './registration-handler.ts';
export { csiPackageDefinition, registrationPackageDefinition } from './protos.ts';

export interface CsiOptions {
  rootDir: string;
  nodeName: string;
  /** Cluster mode: CSINode, the annotation, CSIDriver, VolumeAttachment and secrets come from it. */
  api?: ApiClient;
  logger: Logger;
  nodeEvent: NodeEventSink;
  /** Tests: shorter periods and deadlines. */
  reconcilePeriodMs?: number;
  callTimeoutMs?: number;
}

export interface Csi {
  drivers: DriverStore;
  watcher: PluginWatcher;
  mounter: CsiMounter;
  blockMapper: CsiBlockMapper;
  /** Starts watching `<root-dir>/plugins_registry` until `signal` aborts. */
  start(signal: AbortSignal): Promise<void>;
  stop(): Promise<void>;
}

async function getOrUndefined<T>(api: ApiClient, path: string, signal?: AbortSignal): Promise<T | undefined> {
  try {
    return await api.request<T>({ method: 'GET', path, ...(signal ? { signal } : {}) });
  } catch (err) {
    if (isApiStatus(err, 404)) return undefined;
    throw err;
  }
}

/** Builds the CSI parts; starts nothing. */
export function createCsi(opts: CsiOptions): Csi {
  const drivers = createDriverStore();
  const api = opts.api;
  const clientFor = createCsiClient;
  const nodeInfo = api
    ? createNodeInfoManager({ api, nodeName: opts.nodeName, logger: opts.logger })
    : undefined;
  const handler = createCsiRegistrationHandler({
    drivers,
    ...(nodeInfo ? { nodeInfo } : {}),
    clientFor,
    logger: opts.logger,
    ...(opts.callTimeoutMs !== undefined ? { nodeGetInfoTimeoutMs: opts.callTimeoutMs } : {}),
  });
  const watcher = createPluginWatcher({
    dir: pluginsRegistryDir(opts.rootDir),
    handlers: { [CSI_PLUGIN_TYPE]: handler },
    logger: opts.logger,
    nodeEvent: opts.nodeEvent,
    ...(opts.reconcilePeriodMs !== undefined ? { reconcilePeriodMs: opts.reconcilePeriodMs } : {}),
  });
  const nodeOptions: CsiNodeOptions = {
    rootDir: opts.rootDir,
    nodeName: opts.nodeName,
    drivers,
    clientFor,
    logger: opts.logger,
    ...(opts.callTimeoutMs !== undefined ? { timeoutMs: opts.callTimeoutMs } : {}),
    ...(api
      ? {
          getCSIDriver: async (name: string, signal?: AbortSignal) =>
            (
              await getOrUndefined<{ spec?: CsiDriverSpec }>(
                api,
                `/apis/storage.k8s.io/v1/csidrivers/${encodeURIComponent(name)}`,
                signal,
              )
            )?.spec ?? undefined,
          getVolumeAttachment: async (name: string, signal?: AbortSignal) => {
            const va = await getOrUndefined<{
              status?: { attached?: boolean; attachmentMetadata?: Record<string, string> };
            }>(api, `/apis/storage.k8s.io/v1/volumeattachments/${encodeURIComponent(name)}`, signal);
            return va ? (va.status ?? { attached: false }) : undefined;
          },
          getSecret: async (namespace: string, name: string, signal?: AbortSignal) => {
            const s = await getOrUndefined<{ data?: Record<string, string> }>(
              api,
              `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`,
              signal,
            );
            if (!s) return undefined;
            return Object.fromEntries(
              Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
            );
          },
        }
      : {}),
  };
  const mounter = createCsiMounter(nodeOptions);
  const blockMapper = createCsiBlockMapper(nodeOptions);
  return {
    drivers,
    watcher,
    mounter,
    blockMapper,
    start(signal) {
      // In the background, as upstream: the Node may not be registered yet.
      nodeInfo?.initialize(signal).catch((err: unknown) => {
        if (!signal.aborted)
          opts.logger.error('failed to initialize CSINode', {
            node: opts.nodeName,
            error: describeError(err),
          });
      });
      return watcher.start(signal);
    },
    stop: () => watcher.stop(),
  };
}
