/**
 * The kubelet's secret and configMap managers (upstream pkg/kubelet/secret, pkg/kubelet/configmap
 * on pkg/kubelet/util/manager): Secrets and ConfigMaps for volumes, env vars and image pull
 * secrets, read through the store that `configMapAndSecretChangeDetectionStrategy` picks. Pods
 * register what they reference (pod-references.ts) as they arrive and change, and unregister it
 * when they are gone or finished, so the Cache store invalidates and the Watch store starts and
 * stops its watches at the right moments.
 */
import type { ApiClient } from './client-types.ts';
import type { KubeletPod } from './types.ts';
import { podObjectNames } from './pod-references.ts';
import {
  OBJECT_REQUEST_TIMEOUT_MS,
  createCacheStore,
  createGetStore,
  type ObjectKind,
  type ObjectStore,
  type ObjectStoreOptions,
} from './object-store.ts';
import { createWatchStore, type WatchStoreOptions } from './object-watch-store.ts';
import { describeError, isNotFound } from '../util/errors.ts';
import { nullLogger, type Logger } from '../util/logger.ts';
import type {
  ConfigMap,
  ObjectChange,
  PersistentVolume,
  PersistentVolumeClaim,
  Secret,
  VolumeObjectSource,
} from '../volume/index.ts';
import { monotonicNow } from '../util/clock.ts';

/** KubeletConfiguration configMapAndSecretChangeDetectionStrategy (upstream ResourceChangeDetectionStrategy). */
export type ChangeDetectionStrategy = 'Watch' | 'Cache' | 'Get';

/** Upstream defaultTTL of the caching managers. */
export const DEFAULT_OBJECT_CACHE_TTL_MS = 60_000;
/** Upstream v1.ObjectTTLAnnotationKey: the TTL (seconds) the TTL controller sets on each Node. */
export const OBJECT_TTL_ANNOTATION = 'node.alpha.kubernetes.io/ttl';

/**
 * Upstream GetObjectTTLFromNodeFunc: the annotation as a whole number of seconds (Go's strconv.Atoi:
 * an optional sign, then digits), or undefined when absent or not a number.
 */
export function objectTTLSeconds(
  annotations: Readonly<Record<string, string>> | undefined,
): number | undefined {
  const v = annotations?.[OBJECT_TTL_ANNOTATION];
  if (v === undefined || !/^[+-]?\d+$/.test(v)) return undefined;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * Secrets and ConfigMaps for the pods of this node, and the claims and volumes of their
 * persistentVolumeClaim volumes. Reads follow the VolumeObjectSource contract (undefined for
 * NotFound; anything else rejects); `onObjectChange` reports changes the Watch strategy sees (the
 * other strategies see none). Register and unregister never block. PVCs and PVs are read with a
 * plain GET each time (upstream desiredStateOfWorldPopulator: kubeClient Get, no cache), each with
 * the request timeout; the Node authorizer lets a node read the claims of its pods and their PVs.
 */
export interface PodObjectManager extends VolumeObjectSource {
  getPersistentVolumeClaim: NonNullable<VolumeObjectSource['getPersistentVolumeClaim']>;
  getPersistentVolume: NonNullable<VolumeObjectSource['getPersistentVolume']>;
  readonly strategy: ChangeDetectionStrategy;
  /**
   * Registers every Secret and ConfigMap the pod names (upstream RegisterPod), replacing what it
   * named before (a pod update); idempotent. Keyed by pod UID.
   */
  registerPod(pod: KubeletPod): void;
  /** Drops the pod's references (upstream UnregisterPod); idempotent. */
  unregisterPod(uid: string): void;
  /** Registered pods and referenced objects (watches, for Watch), for tests and logs. */
  counts(): { pods: number; secrets: number; configMaps: number };
  /** Stops every watch; registered references are forgotten. */
  stop(): Promise<void>;
}

export interface ApiObjectSourceOptions {
  api: ApiClient;
  strategy: ChangeDetectionStrategy;
  logger?: Logger;
  /** Cache: the node's TTL annotation (objectTTLSeconds of the Node's annotations); absent: none. */
  nodeTtlSeconds?: () => number | undefined;
  /** Cache: TTL when the node names none (upstream one minute). */
  defaultTtlMs?: number;
  /** Monotonic ms for the Cache strategy's TTL; default util/clock's. */
  monotonic?: () => number;
  /** Bound on each GET (default 10 s). */
  requestTimeoutMs?: number;
  /** Watch: reflector tuning and the first-list wait (tests). */
  watch?: Pick<WatchStoreOptions, 'reflector' | 'firstListWaitMs'>;
}

interface Registered {
  namespace: string;
  secrets: Set<string>;
  configMaps: Set<string>;
}

export function createApiObjectSource(opts: ApiObjectSourceOptions): PodObjectManager {
  const log = opts.logger ?? nullLogger;
  const listeners = new Set<(change: ObjectChange) => void>();
  const registered = new Map<string, Registered>();

  function emit(change: ObjectChange): void {
    for (const l of listeners) {
      try {
        l(change);
      } catch (err) {
        log.error('object change listener failed', { ...change, err: describeError(err) });
      }
    }
  }

  function store<T extends Secret | ConfigMap>(kind: ObjectKind): ObjectStore<T> {
    const base: ObjectStoreOptions = {
      api: opts.api,
      kind,
      logger: log,
      ...(opts.requestTimeoutMs !== undefined ? { requestTimeoutMs: opts.requestTimeoutMs } : {}),
    };
    switch (opts.strategy) {
      case 'Get':
        return createGetStore<T>(base);
      case 'Cache':
        return createCacheStore<T>({
          ...base,
          nodeTtlSeconds: opts.nodeTtlSeconds ?? (() => undefined),
          defaultTtlMs: opts.defaultTtlMs ?? DEFAULT_OBJECT_CACHE_TTL_MS,
          now: opts.monotonic ?? monotonicNow,
        });
      case 'Watch':
        return createWatchStore<T>({
          ...base,
          ...opts.watch,
          onChange: (namespace, name) => emit({ kind, namespace, name }),
        });
    }
  }

  /** One GET of `path` with the request timeout; undefined for NotFound, anything else rejects. */
  async function getFresh<T>(path: string, signal: AbortSignal | undefined): Promise<T | undefined> {
    try {
      return await opts.api.request<T>({
        method: 'GET',
        path,
        timeoutMs: opts.requestTimeoutMs ?? OBJECT_REQUEST_TIMEOUT_MS,
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  const secrets = store<Secret>('secret');
  const configMaps = store<ConfigMap>('configMap');

  function drop(r: Registered): void {
    for (const n of r.secrets) secrets.deleteReference(r.namespace, n);
    for (const n of r.configMaps) configMaps.deleteReference(r.namespace, n);
  }

  return {
    strategy: opts.strategy,
    getSecret: (namespace, name, signal) => secrets.get(namespace, name, signal),
    getConfigMap: (namespace, name, signal) => configMaps.get(namespace, name, signal),
    getPersistentVolumeClaim: (namespace, name, signal) =>
      getFresh<PersistentVolumeClaim>(
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/persistentvolumeclaims/${encodeURIComponent(name)}`,
        signal,
      ),
    getPersistentVolume: (name, signal) =>
      getFresh<PersistentVolume>(`/api/v1/persistentvolumes/${encodeURIComponent(name)}`, signal),
    onObjectChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    registerPod(pod) {
      const names = podObjectNames(pod);
      const next: Registered = { namespace: pod.metadata.namespace, ...names };
      // Upstream order: add the new references first, then drop the old ones, so an object named
      // before and after keeps its watch.
      for (const n of next.secrets) secrets.addReference(next.namespace, n);
      for (const n of next.configMaps) configMaps.addReference(next.namespace, n);
      const prev = registered.get(pod.metadata.uid);
      registered.set(pod.metadata.uid, next);
      if (prev) drop(prev);
    },
    unregisterPod(uid) {
      const prev = registered.get(uid);
      if (!prev) return;
      registered.delete(uid);
      drop(prev);
    },
    counts: () => ({ pods: registered.size, secrets: secrets.size(), configMaps: configMaps.size() }),
    async stop() {
      listeners.clear();
      registered.clear();
      await Promise.all([secrets.stop(), configMaps.stop()]);
    },
  };
}
