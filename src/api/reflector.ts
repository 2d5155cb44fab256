/**
 * A list/watch loop for one API collection (upstream client-go Reflector), for everything the
 * kubelet lists and watches: the pod source (src/podsource/api-source.ts) and the caches it keeps
 * of cluster objects (service-informer.ts). Written to survive what the client library's informer
 * does not: the first LIST reads the watch cache (`resourceVersion=0`), watches resume from the last
 * resourceVersion seen and ask for bookmarks, carry a server-side timeout of [min, 2×min) seconds,
 * a watch that went quiet is restarted without a relist, a relist happens only on 410 Gone (at the
 * last seen version first, then a consistent read; a watch that expires again before delivering
 * anything backs off first), a watch refused a connection is tried again every second (the API
 * server is down, not overloaded: upstream does the same, so the watch resumes as soon as it is
 * back), and any other failure backs off exponentially with jitter, so a returning API server sees
 * no relist storm.
 */
import type { ApiClient, WatchEvent } from './client-types.ts';
import { isConnectionRefused, isGone, isQuietWatch, retryAfterMs } from './client-types.ts';
import type { Logger } from '../util/logger.ts';
import { KubeletError, describeError } from '../util/errors.ts';
import { sleep } from '../util/abort.ts';
import { monotonicNow } from '../util/clock.ts';
import { backoffDelay } from '../util/backoff.ts';

/** The part of every API object a reflector reads. */
export interface ObjectWithMeta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

export interface ReflectorOptions<T extends ObjectWithMeta> {
  api: ApiClient;
  /** Collection path, e.g. `/api/v1/services` (every namespace). */
  path: string;
  /** What is listed, for log lines, e.g. `services`. */
  resource: string;
  /** Extra LIST and WATCH parameters (fieldSelector, labelSelector). */
  selector?: Record<string, string>;
  logger: Logger;
  /** Replaces the whole cache with a LIST result (the first one and every relist). */
  replace(items: T[]): void;
  /** One watch event; bookmarks never reach here. */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: T): void;
  /** Server-side watch timeout range, seconds (reflector: 5 min × (1 + rand)). */
  minWatchTimeoutSeconds?: number;
  /** A watch that delivers nothing (no event, no bookmark) for this long is restarted. */
  quietWatchMs?: number;
  /** Retry back-off after failures: initial and cap (ms), jittered ×[0.5, 1.5). */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** Timeout of one LIST. */
  listTimeoutMs?: number;
}

/** A running list/watch loop. */
export interface Reflector {
  /** Starts the loop; idempotent. */
  start(): void;
  /** Stops the loop and waits for it; nothing is delivered afterwards. */
  stop(): Promise<void>;
  /** True once a LIST has completed (and stays true through relists, as client-go's HasSynced). */
  hasSynced(): boolean;
}

const DEFAULT_MIN_WATCH_TIMEOUT_S = 300;
const DEFAULT_QUIET_WATCH_MS = 2 * 60_000;
const DEFAULT_BACKOFF_INITIAL_MS = 800;
const DEFAULT_BACKOFF_MAX_MS = 30_000;
const DEFAULT_LIST_TIMEOUT_MS = 60_000;
/** Upstream reflector: a watch shorter than this with no events counts as failed. */
const SHORT_WATCH_MS = 1_000;
/** Failures logged at warn level before the loop quiets down to debug. */
const LOUD_FAILURES = 3;
/** Upstream reflector: a watch refused a connection is tried again after a second, without back-off. */
const CONNECTION_REFUSED_RETRY_MS = 1_000;

interface ListResponse<T> {
  metadata?: { resourceVersion?: string };
  items?: T[];
}

export function createReflector<T extends ObjectWithMeta>(opts: ReflectorOptions<T>): Reflector {
  const log = opts.logger;
  const what = opts.resource;
  const stop = new AbortController();
  let loop: Promise<void> | undefined;
  let synced = false;
  let resourceVersion = '';
  /** '0' first (watch cache), the last seen version after an expired watch, '' (etcd) after that. */
  let relistResourceVersion = '0';
  let failures = 0;
  let eventsSeen = 0;
  /** eventsSeen when the last list completed. */
  let eventsAtList = 0;
  /** Whether the last list was a relist after a 410 Gone. */
  let listedAfterGone = false;

  async function list(): Promise<void> {
    const res = await opts.api.request<ListResponse<T>>({
      method: 'GET',
      path: opts.path,
      query: {
        ...opts.selector,
        resourceVersion: relistResourceVersion === '' ? undefined : relistResourceVersion,
      },
      timeoutMs: opts.listTimeoutMs ?? DEFAULT_LIST_TIMEOUT_MS,
      signal: stop.signal,
    });
    if (stop.signal.aborted) return;
    const items = res.items ?? [];
    if (!Array.isArray(items)) {
      throw new KubeletError('InvalidArgument', `LIST ${opts.path}`, "the response's items is not a list");
    }
    resourceVersion = res.metadata?.resourceVersion ?? '';
    relistResourceVersion = resourceVersion;
    opts.replace(items);
    eventsAtList = eventsSeen;
    if (!synced) log.info(`${what} synced`, { count: items.length, resourceVersion });
    else log.debug(`${what} relisted`, { count: items.length, resourceVersion });
    synced = true;
  }

  function onEvent(ev: WatchEvent): void {
    failures = 0;
    eventsSeen++;
    if (stop.signal.aborted) return;
    if (typeof ev.object !== 'object' || ev.object === null || Array.isArray(ev.object)) {
      // Nothing to apply, and no resourceVersion to resume from; reading it would throw inside the
      // client's stream loop, and the watch would fail on this event again at every retry.
      log.warn(`Ignoring ${what} watch event without an object`, { type: String(ev.type) });
      return;
    }
    const obj = ev.object as T;
    const rv = obj.metadata?.resourceVersion;
    if (rv) resourceVersion = rv;
    if (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED') opts.apply(ev.type, obj);
  }

  async function watchOnce(): Promise<void> {
    const min = opts.minWatchTimeoutSeconds ?? DEFAULT_MIN_WATCH_TIMEOUT_S;
    const timeoutSeconds = Math.floor(min * (1 + Math.random()));
    await opts.api.watch(
      opts.path,
      { ...opts.selector, resourceVersion, allowWatchBookmarks: true, timeoutSeconds },
      onEvent,
      { signal: stop.signal, idleTimeoutMs: opts.quietWatchMs ?? DEFAULT_QUIET_WATCH_MS },
    );
  }

  /** Jittered exponential back-off, never shorter than the server's Retry-After for `err`. */
  async function backoff(err?: unknown): Promise<void> {
    failures++;
    const initial = opts.backoffInitialMs ?? DEFAULT_BACKOFF_INITIAL_MS;
    const max = opts.backoffMaxMs ?? DEFAULT_BACKOFF_MAX_MS;
    const base = backoffDelay(failures - 1, { initialMs: initial, maxMs: max });
    await sleep(Math.max(base * (0.5 + Math.random()), retryAfterMs(err)), stop.signal);
  }

  async function run(): Promise<void> {
    let needList = true;
    while (!stop.signal.aborted) {
      let listing = false;
      try {
        if (needList) {
          listing = true;
          await list();
          listing = false;
          needList = false;
          // Not a proof of health by itself (a list may succeed where every watch fails at once):
          // the failure count is reset by watch events and by watches that lasted.
        }
        const started = monotonicNow();
        const eventsBefore = eventsSeen;
        await watchOnce();
        // The server ended the watch (timeoutSeconds): resume. One that ended at once with nothing
        // in it is an error in disguise (upstream "very short watch").
        if (monotonicNow() - started < SHORT_WATCH_MS && eventsSeen === eventsBefore) {
          log.debug(`${what} watch closed immediately; backing off`);
          await backoff();
        } else {
          failures = 0;
        }
      } catch (err) {
        if (stop.signal.aborted) return;
        if (isQuietWatch(err)) {
          log.debug(`${what} watch went quiet; restarting it from the last resourceVersion`, {
            resourceVersion,
          });
          continue;
        }
        if (isGone(err)) {
          if (listing) {
            log.info(`${what} list at the last resourceVersion expired (410 Gone); relisting from etcd`);
            relistResourceVersion = '';
          } else {
            log.info(`${what} watch expired (410 Gone); relisting`, { resourceVersion });
            relistResourceVersion = resourceVersion;
            // Expired again right after a relist, with nothing in between: relisting at once would
            // loop as fast as the server answers (upstream backs off between every list and watch).
            if (listedAfterGone && eventsSeen === eventsAtList && !(await backoffOrStop())) return;
            listedAfterGone = true;
          }
          needList = true;
          continue;
        }
        if (!listing && isConnectionRefused(err)) {
          log.debug(`${what} watch refused a connection; retrying in a second`, { resourceVersion });
          try {
            await sleep(CONNECTION_REFUSED_RETRY_MS, stop.signal);
          } catch {
            return; // stopped while waiting: the only way sleep rejects here
          }
          continue;
        }
        const fields = { err: describeError(err), failures: failures + 1 };
        if (failures < LOUD_FAILURES) log.warn(`${what} list/watch failed; retrying with back-off`, fields);
        else log.debug(`${what} list/watch still failing`, fields);
        if (!(await backoffOrStop(err))) return;
      }
    }
  }

  /** Backs off; false when stopped meanwhile (the only way sleep rejects here). */
  async function backoffOrStop(err?: unknown): Promise<boolean> {
    try {
      await backoff(err);
      return true;
    } catch {
      return false;
    }
  }

  return {
    start() {
      loop ??= run();
    },
    async stop() {
      stop.abort(new KubeletError('Canceled', `reflector ${what}`, 'stopped'));
      await loop;
    },
    hasSynced: () => synced,
  };
}
