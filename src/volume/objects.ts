/**
 * The API objects that secret, configMap, projected and persistentVolumeClaim volumes read, in their
 * wire shape (the same JSON the API server returns, so a @kubernetes/client-node V1Secret,
 * V1ConfigMap, V1PersistentVolumeClaim or V1PersistentVolume fits too). Upstream counterparts:
 * pkg/kubelet/secret, pkg/kubelet/configmap, and the PVC/PV reads of
 * pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go.
 */

export interface VolumeObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  annotations?: Record<string, string>;
}

export interface Secret {
  metadata: VolumeObjectMeta;
  /** Values are base64, as on the wire. */
  data?: Record<string, string>;
  type?: string;
  immutable?: boolean;
}

export interface ConfigMap {
  metadata: VolumeObjectMeta;
  data?: Record<string, string>;
  /** Values are base64, as on the wire. */
  binaryData?: Record<string, string>;
  immutable?: boolean;
}

/** A Secret or ConfigMap that changed (created, modified or deleted). */
export interface ObjectChange {
  kind: 'secret' | 'configMap';
  namespace: string;
  name: string;
}

export interface PersistentVolumeClaim {
  metadata: VolumeObjectMeta & { deletionTimestamp?: string };
  spec?: { volumeName?: string; volumeMode?: 'Filesystem' | 'Block' };
  status?: { phase?: string };
}

/** `pv.spec.claimRef`: the claim the PV is bound to. */
export interface ObjectReference {
  namespace?: string;
  name?: string;
  uid?: string;
}

/** `nodeSelectorTerms[]` of a PV's required node affinity (core/v1 NodeSelectorTerm). */
export interface NodeSelectorTerm {
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
  matchFields?: { key: string; operator: string; values?: string[] }[];
}

/**
 * A PersistentVolume. Its source is one of the core/v1 PersistentVolumeSource fields (`hostPath`,
 * `local`, `csi`, `nfs`, …); the ones the kubelet knows are typed, the rest kept as `unknown`.
 */
export interface PersistentVolume {
  metadata: VolumeObjectMeta;
  spec?: {
    claimRef?: ObjectReference;
    volumeMode?: 'Filesystem' | 'Block';
    nodeAffinity?: { required?: { nodeSelectorTerms?: NodeSelectorTerm[] } };
    mountOptions?: string[];
    hostPath?: { path: string; type?: string };
    local?: { path: string; fsType?: string };
    [source: string]: unknown;
  };
}

/**
 * Reads the API objects a volume needs. Cluster mode: backed by the API server (the implementation
 * should cache or watch: the volume manager asks on every pod sync, up to once a second per pod).
 * Standalone: absent, and secret/configMap volumes fail with a clear error.
 *
 * Contract: resolve `undefined` for NotFound; reject (ideally with a KubeletError) for anything else,
 * so a transient API failure is never mistaken for a deleted object. Answers may be shared: callers
 * must not mutate them.
 */
export interface VolumeObjectSource {
  getSecret(namespace: string, name: string, signal?: AbortSignal): Promise<Secret | undefined>;
  getConfigMap(namespace: string, name: string, signal?: AbortSignal): Promise<ConfigMap | undefined>;
  /**
   * A claim, read fresh from the API (upstream reads PVCs and PVs with a plain GET, no cache).
   * Absent (standalone, or a source without claims): persistentVolumeClaim volumes fail clearly.
   */
  getPersistentVolumeClaim?(
    namespace: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<PersistentVolumeClaim | undefined>;
  /** A PersistentVolume (cluster-scoped), read fresh; present with getPersistentVolumeClaim. */
  getPersistentVolume?(name: string, signal?: AbortSignal): Promise<PersistentVolume | undefined>;
  /**
   * Present when the source learns of changes as they happen (the Watch strategy): `listener` is
   * called, synchronously and without blocking the source, with each change of an object it
   * watches. Returns the unsubscribe function.
   */
  onObjectChange?(listener: (change: ObjectChange) => void): () => void;
}
