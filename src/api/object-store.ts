/**
 * Per-object stores behind the kubelet's secret and configMap managers (upstream
 * pkg/kubelet/util/manager): what pods reference is counted per namespace/name
 * (`addReference`/`deleteReference`, called as pods register and unregister), and `get` answers
 * from the API by one of three strategies (KubeletConfiguration
 * `configMapAndSecretChangeDetectionStrategy`):
 *
 * - `Get`: every read is a GET (upstream simpleSecretManager); references are not tracked.
 * - `Cache`: a GET at most once per TTL per object (upstream objectStore, cache_based_manager.go);
 *   createCacheStore here.
 * - `Watch`: one list/watch per referenced object (upstream objectCache, watch_based_manager.go);
 *   object-watch-store.ts.
 */
import type { ApiClient } from './client-types.ts';
import { describeError, isNotFound } from '../util/errors.ts';
import { untilAborted } from '../util/abort.ts';
import type { Logger } from '../util/logger.ts';

export type ObjectKind = 'secret' | 'configMap';

/** The part of a Secret or ConfigMap a store reads. */
export interface StoredObject {
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  immutable?: boolean;
}

/**
 * The objects of one kind that registered pods reference. `addReference` and `deleteReference`
 * never block (upstream: RegisterPod must not wait on the network); `get` resolves `undefined` for
 * NotFound and rejects for anything else, within the store's request timeout or when `signal` aborts.
 */
export interface ObjectStore<T extends StoredObject> {
  addReference(namespace: string, name: string): void;
  deleteReference(namespace: string, name: string): void;
  get(namespace: string, name: string, signal?: AbortSignal): Promise<T | undefined>;
  /** Referenced objects right now (a watch each, for the Watch strategy). */
  size(): number;
  /** Stops whatever runs in the background (watches); reads afterwards still work for Get/Cache. */
  stop(): Promise<void>;
}

export interface ObjectStoreOptions {
  api: ApiClient;
  kind: ObjectKind;
  logger: Logger;
  /** Bound on one GET (default: the API client's own, 10 s). */
  requestTimeoutMs?: number;
}

/** Upstream's 10 s default client timeout; every GET a store makes carries it. */
export const OBJECT_REQUEST_TIMEOUT_MS = 10_000;

const RESOURCE: Record<ObjectKind, string> = { secret: 'secrets', configMap: 'configmaps' };

export function collectionPath(kind: ObjectKind, namespace: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/${RESOURCE[kind]}`;
}

/** `secret ns/name` / `configMap ns/name`, for messages. */
export function describeRef(kind: ObjectKind, namespace: string, name: string): string {
  return `${kind} ${namespace}/${name}`;
}

/**
 * One GET. `fromCache` reads the API server's watch cache (`resourceVersion=0`, upstream
 * FromApiserverCache) rather than etcd: fine for a periodic refresh of an object read before.
 */
export async function getObject<T>(
  opts: ObjectStoreOptions,
  namespace: string,
  name: string,
  signal: AbortSignal | undefined,
  fromCache = false,
): Promise<T | undefined> {
  const path = `${collectionPath(opts.kind, namespace)}/${encodeURIComponent(name)}`;
  try {
    return await opts.api.request<T>({
      method: 'GET',
      path,
      ...(fromCache ? { query: { resourceVersion: '0' } } : {}),
      timeoutMs: opts.requestTimeoutMs ?? OBJECT_REQUEST_TIMEOUT_MS,
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Upstream simple managers: a GET per read, nothing tracked. */
export function createGetStore<T extends StoredObject>(opts: ObjectStoreOptions): ObjectStore<T> {
  return {
    addReference() {},
    deleteReference() {},
    get: (namespace, name, signal) => getObject<T>(opts, namespace, name, signal),
    size: () => 0,
    stop: () => Promise.resolve(),
  };
}

/** Upstream isObjectOlder: compares resourceVersions as integers; unparsable ones never count as older. */
export function isOlder(next: StoredObject | undefined, prev: StoredObject | undefined): boolean {
  const a = next?.metadata.resourceVersion;
  const b = prev?.metadata.resourceVersion;
  if (a === undefined || b === undefined || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) < BigInt(b);
}

/** What the Cache store knows of one object: the last answer and when it came. */
interface CachedAnswer<T> {
  /** undefined with `notFound`: the API said NotFound. */
  object: T | undefined;
  notFound: boolean;
  at: number;
}

interface CacheItem<T> {
  refCount: number;
  /** undefined: never read, or invalidated by a pod registering it again. */
  data: CachedAnswer<T> | undefined;
  /** Bumped by every registration: a read started before it does not fill the cache. */
  generation: number;
  /** The read in flight for this generation, shared by concurrent callers (upstream: a lock). */
  inflight: Promise<CachedAnswer<T>> | undefined;
}

export interface CacheStoreOptions extends ObjectStoreOptions {
  /**
   * The TTL the node asks for (its `node.alpha.kubernetes.io/ttl` annotation, seconds), or
   * undefined to use `defaultTtlMs`. Read on every check, as upstream does.
   */
  nodeTtlSeconds: () => number | undefined;
  /** Upstream defaultTTL: one minute. */
  defaultTtlMs: number;
  /** Monotonic ms: a wall step must neither keep an object past its TTL nor expire it early. */
  now: () => number;
}

/**
 * Upstream objectStore (NewCachingSecretManager / NewCachingConfigMapManager). A registered
 * object is read from the API when it was never read, when a pod registered it since (re-registering
 * on a pod update invalidates it), when the last answer was NotFound, or when the answer is older
 * than the TTL; a refresh of an object read before asks the API server's cache. A failed read
 * returns the last answer if there is one (logged), and the error otherwise; an answer with an
 * older resourceVersion than the cached one is ignored. An object no registered pod references is
 * read with a plain GET (upstream fails it as "not registered"; here a pod never waits for a race
 * between its first sync and its registration).
 */
export function createCacheStore<T extends StoredObject>(opts: CacheStoreOptions): ObjectStore<T> {
  const items = new Map<string, CacheItem<T>>();
  const log = opts.logger;
  const key = (namespace: string, name: string) => `${namespace}/${name}`;

  function ttlMs(): number {
    const s = opts.nodeTtlSeconds();
    return s === undefined ? opts.defaultTtlMs : s * 1000;
  }

  async function read(item: CacheItem<T>, namespace: string, name: string): Promise<CachedAnswer<T>> {
    const generation = item.generation;
    const prev = item.data;
    const fromCache = prev !== undefined && !prev.notFound;
    let object: T | undefined;
    try {
      // Shared by every caller waiting for it, so bound by its own deadline, not by theirs.
      const signal = AbortSignal.timeout(opts.requestTimeoutMs ?? OBJECT_REQUEST_TIMEOUT_MS);
      object = await getObject<T>(opts, namespace, name, signal, fromCache);
    } catch (err) {
      if (prev === undefined) throw err;
      log.warn('could not refresh a cached object; serving the last answer', {
        object: describeRef(opts.kind, namespace, name),
        err: describeError(err),
      });
      return prev;
    }
    let answer: CachedAnswer<T>;
    if (object === undefined) answer = { object: undefined, notFound: true, at: opts.now() };
    else if (isOlder(object, prev?.object) && prev) answer = prev;
    else answer = { object, notFound: false, at: opts.now() };
    if (item.generation === generation) item.data = answer;
    return answer;
  }

  return {
    addReference(namespace, name) {
      const k = key(namespace, name);
      const item = items.get(k) ?? { refCount: 0, data: undefined, generation: 0, inflight: undefined };
      item.refCount++;
      // The next get reads it again (upstream sets the item's data to nil).
      item.data = undefined;
      item.inflight = undefined;
      item.generation++;
      items.set(k, item);
    },
    deleteReference(namespace, name) {
      const k = key(namespace, name);
      const item = items.get(k);
      if (!item) return;
      if (--item.refCount <= 0) items.delete(k);
    },
    async get(namespace, name, signal) {
      const item = items.get(key(namespace, name));
      if (!item) return getObject<T>(opts, namespace, name, signal);
      const data = item.data;
      if (data !== undefined && !data.notFound && opts.now() < data.at + ttlMs()) return data.object;
      if (!item.inflight) {
        const pending = read(item, namespace, name);
        item.inflight = pending;
        const clear = () => {
          if (item.inflight === pending) item.inflight = undefined;
        };
        pending.then(clear, clear);
      }
      return (await untilAborted(item.inflight, signal)).object;
    },
    size: () => items.size,
    stop: () => Promise.resolve(),
  };
}
