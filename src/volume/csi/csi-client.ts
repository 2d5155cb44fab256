/**
 * The kubelet's client of one CSI driver's Identity and Node services (upstream pkg/volume/csi
 * csi_client.go, csiDriverClient): a call per RPC on the driver's socket, each under a timeout
 * (upstream csiTimeout, 2 minutes, unless the caller gives a shorter one).
 */
import type { PvMetrics } from '../pv-plugins.ts';
import { CSI_PROTO } from './protos.ts';
import type {
  NodeCapability,
  NodeInfo,
  NodePublishRequest,
  NodeStageRequest,
  VolumeUsage,
} from './protos.ts';
import { unaryCall } from './grpc-unix.ts';
import { CSI_TIMEOUT_MS } from '../../config/defaults.ts';

/** Upstream csi_plugin.go csiTimeout: the default deadline of every CSI call the kubelet makes. */
export { CSI_TIMEOUT_MS };

export interface CsiCallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A CSI driver's node-side API, as the kubelet uses it. Every method rejects with a PluginCallError. */
export interface CsiClient {
  readonly endpoint: string;
  getPluginInfo(opts?: CsiCallOptions): Promise<{ name: string; vendorVersion: string }>;
  nodeGetInfo(opts?: CsiCallOptions): Promise<NodeInfo>;
  nodeGetCapabilities(opts?: CsiCallOptions): Promise<NodeCapability[]>;
  /** Whether the driver has STAGE_UNSTAGE_VOLUME (upstream NodeSupportsStageUnstage). */
  nodeSupportsStageUnstage(opts?: CsiCallOptions): Promise<boolean>;
  nodeStageVolume(req: NodeStageRequest, opts?: CsiCallOptions): Promise<void>;
  nodeUnstageVolume(volumeId: string, stagingTargetPath: string, opts?: CsiCallOptions): Promise<void>;
  nodePublishVolume(req: NodePublishRequest, opts?: CsiCallOptions): Promise<void>;
  nodeUnpublishVolume(volumeId: string, targetPath: string, opts?: CsiCallOptions): Promise<void>;
  /** Whether the driver has GET_VOLUME_STATS (upstream NodeSupportsVolumeStats). */
  nodeSupportsVolumeStats(opts?: CsiCallOptions): Promise<boolean>;
  /**
   * Usage of a published volume (upstream csi_client.go NodeGetVolumeStats, for csi_metrics.go;
   * the driver needs GET_VOLUME_STATS): its BYTES and INODES entries, a missing one as 0.
   */
  nodeGetVolumeStats(
    volumeId: string,
    volumePath: string,
    stagingTargetPath: string,
    opts?: CsiCallOptions,
  ): Promise<PvMetrics>;
}

/** A volume's usage as NodeGetVolumeStats reports it (upstream volume.Metrics). */
/** Upstream's mapping of NodeGetVolumeStats' usage entries to volume.Metrics. */
export function metricsFromUsage(usage: readonly VolumeUsage[]): PvMetrics {
  const m: PvMetrics = {
    capacityBytes: 0,
    availableBytes: 0,
    usedBytes: 0,
    inodes: 0,
    inodesFree: 0,
    inodesUsed: 0,
  };
  for (const u of usage) {
    if (u.unit === 'BYTES') {
      m.capacityBytes = u.total;
      m.availableBytes = u.available;
      m.usedBytes = u.used;
    } else if (u.unit === 'INODES') {
      m.inodes = u.total;
      m.inodesFree = u.available;
      m.inodesUsed = u.used;
    }
  }
  return m;
}

interface CapabilitiesResponse {
  capabilities?: { rpc?: { type?: NodeCapability } }[];
}

/** A client of the driver serving `endpoint` (a unix socket path). Connects per call; nothing to close. */
export function createCsiClient(endpoint: string, driverName: string): CsiClient {
  const call = <Res>(service: 'Identity' | 'Node', name: string, req: object, opts?: CsiCallOptions) =>
    unaryCall<Res>(
      endpoint,
      `CSI ${name} (driver ${driverName})`,
      CSI_PROTO.method(`csi.v1.${service}`, name),
      req,
      {
        timeoutMs: opts?.timeoutMs ?? CSI_TIMEOUT_MS,
        ...(opts?.signal ? { signal: opts.signal } : {}),
      },
    );
  const nodeGetCapabilities = async (opts?: CsiCallOptions): Promise<NodeCapability[]> => {
    const res = await call<CapabilitiesResponse>('Node', 'NodeGetCapabilities', {}, opts);
    return (res.capabilities ?? []).flatMap((c) => (c.rpc?.type ? [c.rpc.type] : []));
  };
  return {
    endpoint,
    getPluginInfo: (opts) => call('Identity', 'GetPluginInfo', {}, opts),
    nodeGetInfo: (opts) => call<NodeInfo>('Node', 'NodeGetInfo', {}, opts),
    nodeGetCapabilities,
    async nodeSupportsStageUnstage(opts) {
      return (await nodeGetCapabilities(opts)).includes('STAGE_UNSTAGE_VOLUME');
    },
    async nodeSupportsVolumeStats(opts) {
      return (await nodeGetCapabilities(opts)).includes('GET_VOLUME_STATS');
    },
    async nodeStageVolume(req, opts) {
      await call('Node', 'NodeStageVolume', req, opts);
    },
    async nodeUnstageVolume(volumeId, stagingTargetPath, opts) {
      await call('Node', 'NodeUnstageVolume', { volumeId, stagingTargetPath }, opts);
    },
    async nodePublishVolume(req, opts) {
      await call('Node', 'NodePublishVolume', req, opts);
    },
    async nodeUnpublishVolume(volumeId, targetPath, opts) {
      await call('Node', 'NodeUnpublishVolume', { volumeId, targetPath }, opts);
    },
    async nodeGetVolumeStats(volumeId, volumePath, stagingTargetPath, opts) {
      const res = await call<{ usage?: VolumeUsage[] }>(
        'Node',
        'NodeGetVolumeStats',
        { volumeId, volumePath, stagingTargetPath },
        opts,
      );
      return metricsFromUsage(res.usage ?? []);
    },
  };
}
