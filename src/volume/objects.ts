/**
 * The API objects that secret, configMap and projected volumes read, in their wire shape (the same
 * JSON the API server returns, so a @kubernetes/client-node V1Secret/V1ConfigMap fits too).
 */

export interface VolumeObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
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
   * Present when the source learns of changes as they happen (the Watch strategy): `listener` is
   * called, synchronously and without blocking the source, with each change of an object it
   * watches. Returns the unsubscribe function.
   */
  onObjectChange?(listener: (change: ObjectChange) => void): () => void;
}
