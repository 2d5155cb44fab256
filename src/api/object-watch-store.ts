/**
 * The Watch strategy's store (upstream objectCache, watch_based_manager.go): one list/watch per
 * referenced object, started when its first reference is added and stopped when its last one goes,
 * and reads answered from the watched copy.
 */
import type { ApiClient, ApiRequest, WatchEvent } from './client-types.ts';
import { createReflector, type Reflector } from './reflector.ts';
import {
  collectionPath,
  describeRef,
  getObject,
  type ObjectStore,
  type ObjectStoreOptions,
  type StoredObject,
} from './object-store.ts';
import { abortReason, combineSignals, untilAborted } from '../util/abort.ts';
import { KubeletError, describeError } from '../util/errors.ts';

/**
 * How long a read waits for a new watch's first list. Upstream polls for one second, then fails the
 * mount (retried after the pod worker's 10 s back-off); a few seconds more rides out the Node
 * authorizer learning of a pod just bound to this node, which answers the first list with 403.
 */
export const WATCH_FIRST_LIST_WAIT_MS = 5_000;

export interface WatchStoreOptions extends ObjectStoreOptions {
  /** A watched object changed (created, modified, deleted) after its first list. Must not throw. */
  onChange?: (namespace: string, name: string) => void;
  /** Reflector tuning (tests); defaults are the reflector's (800 ms doubling to 30 s, jittered). */
  reflector?: {
    backoffInitialMs?: number;
    backoffMaxMs?: number;
    minWatchTimeoutSeconds?: number;
    quietWatchMs?: number;
  };
  firstListWaitMs?: number;
}

interface WatchItem<T> {
  refCount: number;
  reflector: Reflector;
  /** The watched copy; undefined when the object does not exist. */
  object: T | undefined;
  synced: Promise<void>;
  markSynced: () => void;
  hasSynced: boolean;
  /** The last list/watch failure, cleared by the next success (named when a read times out). */
  lastError: unknown;
  /** Stopped because the object is immutable: the copy is final. */
  frozen: boolean;
}

function sameVersion(a: StoredObject | undefined, b: StoredObject | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.metadata.resourceVersion === b.metadata.resourceVersion;
}

/**
 * An ApiClient that remembers the last failure of the reflector's calls on `item`, so a read that
 * gives up waiting can say why (403 from the Node authorizer, an unreachable server, …).
 */
function observing<T>(api: ApiClient, item: () => WatchItem<T> | undefined): ApiClient {
  const note = (err: unknown) => {
    const it = item();
    if (it) it.lastError = err;
  };
  return {
    server: api.server,
    async request<R>(req: ApiRequest): Promise<R> {
      try {
        const r = await api.request<R>(req);
        const it = item();
        if (it) it.lastError = undefined;
        return r;
      } catch (err) {
        note(err);
        throw err;
      }
    },
    async watch(path, query, onEvent: (e: WatchEvent) => void, wopts) {
      try {
        await api.watch(path, query, onEvent, wopts);
      } catch (err) {
        note(err);
        throw err;
      }
    },
    // The shared client belongs to the kubelet.
    closeConnections() {},
    reloadCredentials: () => Promise.resolve(false),
    close() {},
  };
}

/**
 * Upstream NewWatchingSecretManager / NewWatchingConfigMapManager's store. Each referenced object
 * gets a reflector (`src/api/reflector.ts`) on its collection with a `metadata.name` field
 * selector (the form the Node authorizer allows): it resumes from the last resourceVersion, relists
 * only on 410 Gone, restarts quiet watches and backs off (jittered, bounded) after failures. A read
 * waits for the first list (up to WATCH_FIRST_LIST_WAIT_MS), then answers from the watched copy,
 * whatever the API's state since. An immutable object's watch is stopped once it is seen (upstream
 * does so on the next read); its copy stays. An object no pod references is read with a plain GET
 * (upstream fails it as "not registered").
 */
export function createWatchStore<T extends StoredObject>(opts: WatchStoreOptions): ObjectStore<T> {
  const items = new Map<string, WatchItem<T>>();
  /** Reflectors being stopped (their last reference went); stop() waits for them. */
  const stopping = new Set<Promise<void>>();
  const log = opts.logger;
  const key = (namespace: string, name: string) => `${namespace}/${name}`;

  function stopReflector(item: WatchItem<T>, what: string): void {
    const p = item.reflector.stop().catch((err: unknown) => {
      log.error('stopping an object watch failed', { object: what, err: describeError(err) });
    });
    stopping.add(p);
    void p.finally(() => stopping.delete(p));
  }

  function update(item: WatchItem<T>, namespace: string, name: string, next: T | undefined): void {
    const prev = item.object;
    item.object = next;
    if (!item.hasSynced) {
      item.hasSynced = true;
      item.markSynced();
    } else if (!sameVersion(prev, next)) {
      opts.onChange?.(namespace, name);
    }
    if (next?.immutable === true && !item.frozen) {
      item.frozen = true;
      log.debug('object is immutable; its watch is stopped', {
        object: describeRef(opts.kind, namespace, name),
      });
      stopReflector(item, describeRef(opts.kind, namespace, name));
    }
  }

  function start(namespace: string, name: string): WatchItem<T> {
    const k = key(namespace, name);
    const what = describeRef(opts.kind, namespace, name);
    let markSynced!: () => void;
    const synced = new Promise<void>((resolve) => {
      markSynced = resolve;
    });
    // Filled in below; the reflector calls back only once started.
    const self: { item?: WatchItem<T> } = {};
    const current = () => (self.item && items.get(k) === self.item ? self.item : undefined);
    const reflector = createReflector<T>({
      api: observing(opts.api, () => self.item),
      path: collectionPath(opts.kind, namespace),
      resource: what,
      selector: { fieldSelector: `metadata.name=${name}` },
      logger: log,
      ...opts.reflector,
      replace(objects) {
        const item = current();
        if (item)
          update(
            item,
            namespace,
            name,
            objects.find((o) => o.metadata.name === name),
          );
      },
      apply(type, obj) {
        const item = current();
        if (item && obj.metadata.name === name)
          update(item, namespace, name, type === 'DELETED' ? undefined : obj);
      },
    });
    const item: WatchItem<T> = {
      refCount: 0,
      reflector,
      object: undefined,
      synced,
      markSynced,
      hasSynced: false,
      lastError: undefined,
      frozen: false,
    };
    self.item = item;
    reflector.start();
    return item;
  }

  async function waitForFirstList(item: WatchItem<T>, what: string, signal?: AbortSignal): Promise<void> {
    if (item.hasSynced) return;
    const waitMs = opts.firstListWaitMs ?? WATCH_FIRST_LIST_WAIT_MS;
    const sig = combineSignals([signal], waitMs);
    try {
      await untilAborted(item.synced, sig);
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      const why = item.lastError === undefined ? '' : `; last error: ${describeError(item.lastError)}`;
      throw new KubeletError(
        'Unavailable',
        `get ${what}`,
        `failed to sync ${opts.kind} cache: the watch has not listed the object within ${waitMs} ms${why}`,
        { cause: item.lastError ?? err },
      );
    }
  }

  return {
    addReference(namespace, name) {
      const k = key(namespace, name);
      let item = items.get(k);
      if (!item) {
        item = start(namespace, name);
        items.set(k, item);
      }
      item.refCount++;
    },
    deleteReference(namespace, name) {
      const k = key(namespace, name);
      const item = items.get(k);
      if (!item || --item.refCount > 0) return;
      items.delete(k);
      if (!item.frozen) stopReflector(item, describeRef(opts.kind, namespace, name));
    },
    async get(namespace, name, signal) {
      const item = items.get(key(namespace, name));
      if (!item) return getObject<T>(opts, namespace, name, signal);
      await waitForFirstList(item, describeRef(opts.kind, namespace, name), signal);
      return item.object;
    },
    size: () => items.size,
    async stop() {
      for (const [k, item] of items) {
        items.delete(k);
        if (!item.frozen) stopReflector(item, k);
      }
      await Promise.all([...stopping]);
    },
  };
}
