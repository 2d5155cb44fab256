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

/**
 * Reads the API objects a volume needs. Cluster mode: backed by the API server (the implementation
 * should cache or watch: the volume manager asks on every pod sync, up to once a second per pod).
 * Standalone: absent, and secret/configMap volumes fail with a clear error.
 *
 * Contract: resolve `undefined` for NotFound; reject (ideally with a KubeletError) for anything else,
 * so a transient API failure is never mistaken for a deleted object.
 */
export interface VolumeObjectSource {
  getSecret(namespace: string, name: string, signal?: AbortSignal): Promise<Secret | undefined>;
  getConfigMap(namespace: string, name: string, signal?: AbortSignal): Promise<ConfigMap | undefined>;
}
