import type { Pod, PodList } from '../api/types.ts';
import type { ApiClient, WatchEvent } from '../api/client-types.ts';
import { isGone } from '../api/client-types.ts';
import type { Logger } from '../util/logger.ts';
import { KubeletError, describeError } from '../util/errors.ts';
import { sleep } from '../util/abort.ts';
import { ANNOTATION_CONFIG_MIRROR } from '../config/defaults.ts';
import type { PodSource } from './types.ts';

export interface ApiSourceOptions {
  api: ApiClient;
  nodeName: string;
  logger: Logger;
  /** Mirror pods (static pods' API copies) are not desired pods; they go here instead. */
  onMirrorPods?: (pods: Pod[]) => void;
  /** Server-side watch timeout range, seconds (reflector: 5 min × (1 + rand)). */
  minWatchTimeoutSeconds?: number;
  /** A watch that delivers nothing (no event, no bookmark) for this long is restarted. */
  quietWatchMs?: number;
  /** Retry back-off after failures: initial and cap (ms), jittered. */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
}

const DEFAULT_MIN_WATCH_TIMEOUT_S = 300;
const DEFAULT_QUIET_WATCH_MS = 2 * 60_000;
/** Upstream reflector: a watch shorter than this with no events counts as failed. */
const SHORT_WATCH_MS = 1_000;

export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata.annotations?.[ANNOTATION_CONFIG_MIRROR] !== undefined;
}

/**
 * The API server pod source (upstream NewSourceApiserver: a reflector on pods with
 * `spec.nodeName=<node>`), written to survive what the client library's informer does not:
 * resumes watches from the last resourceVersion, asks for bookmarks, uses a server-side timeout,
 * relists only on 410 Gone, backs off with jitter after failures (no relist storm when the server
 * returns), and restarts a watch that went quiet. Sends a full snapshot after the initial list
 * and after each burst of watch events.
 */
export function createApiSource(opts: ApiSourceOptions): PodSource {
  const log = opts.logger;
  const fieldSelector = `spec.nodeName=${opts.nodeName}`;
  const store = new Map<string, Pod>();
  const stop = new AbortController();
  let loop: Promise<void> | undefined;
  let send: ((pods: Pod[]) => void) | undefined;
  let flushScheduled = false;
  let resourceVersion = '';
  /**
   * The resourceVersion the next LIST asks for (upstream relistResourceVersion): '0' (watch cache) the
   * first time, the last one seen after a watch expired, '' (a consistent read from etcd) when even
   * that one is gone.
   */
  let relistResourceVersion = '0';
  let failures = 0;
  let eventsSeen = 0;

  function flush(): void {
    flushScheduled = false;
    if (stop.signal.aborted) return; // stopped: deliver nothing more
    const desired: Pod[] = [];
    const mirrors: Pod[] = [];
    for (const p of store.values()) (isMirrorPod(p) ? mirrors : desired).push(p);
    send?.(desired);
    opts.onMirrorPods?.(mirrors);
  }

  /** Coalesces a burst of watch events into one snapshot. */
  function scheduleFlush(): void {
    if (flushScheduled) return;
    flushScheduled = true;
    setImmediate(flush);
  }

  async function list(): Promise<void> {
    const res = await opts.api.request<PodList>({
      method: 'GET',
      path: '/api/v1/pods',
      query: {
        fieldSelector,
        resourceVersion: relistResourceVersion === '' ? undefined : relistResourceVersion,
      },
      timeoutMs: 60_000,
      signal: stop.signal,
    });
    store.clear();
    for (const p of res.items) store.set(p.metadata.uid ?? '', p);
    resourceVersion = res.metadata.resourceVersion ?? '';
    relistResourceVersion = resourceVersion;
    log.debug('listed pods bound to this node', { count: res.items.length, resourceVersion });
    flush();
  }

  function apply(ev: WatchEvent): void {
    const obj = ev.object as unknown as Pod;
    const rv = obj.metadata?.resourceVersion;
    if (rv) resourceVersion = rv;
    if (ev.type === 'BOOKMARK') return;
    const uid = obj.metadata.uid ?? '';
    if (ev.type === 'DELETED') store.delete(uid);
    else store.set(uid, obj);
    scheduleFlush();
  }

  async function watchOnce(): Promise<void> {
    const min = opts.minWatchTimeoutSeconds ?? DEFAULT_MIN_WATCH_TIMEOUT_S;
    const timeoutSeconds = Math.floor(min * (1 + Math.random()));
    await opts.api.watch(
      '/api/v1/pods',
      { fieldSelector, resourceVersion, allowWatchBookmarks: true, timeoutSeconds },
      (ev) => {
        failures = 0;
        eventsSeen++;
        apply(ev);
      },
      { signal: stop.signal, idleTimeoutMs: opts.quietWatchMs ?? DEFAULT_QUIET_WATCH_MS },
    );
  }

  async function backoff(): Promise<void> {
    failures++;
    const initial = opts.backoffInitialMs ?? 800;
    const max = opts.backoffMaxMs ?? 30_000;
    const base = Math.min(max, initial * 2 ** Math.min(failures - 1, 16));
    await sleep(base * (0.5 + Math.random()), stop.signal);
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
          failures = 0;
        }
        const started = Date.now();
        const eventsBefore = eventsSeen;
        await watchOnce();
        // The server closed the watch (timeoutSeconds): resume from the last resourceVersion. A watch
        // that ended at once with nothing in it is an error in disguise (upstream "very short watch").
        if (Date.now() - started < SHORT_WATCH_MS && eventsSeen === eventsBefore) {
          log.debug('pod watch closed immediately; backing off');
          await backoff();
        }
      } catch (err) {
        if (stop.signal.aborted) return;
        if (
          err instanceof KubeletError &&
          err.code === 'DeadlineExceeded' &&
          /no watch event/.test(err.message)
        ) {
          log.debug('pod watch went quiet; restarting it from the last resourceVersion', { resourceVersion });
          continue;
        }
        if (isGone(err)) {
          if (listing) {
            // Even the last seen version is gone: read consistently from etcd.
            log.info('pod list at the last resourceVersion expired (410 Gone); relisting from etcd');
            relistResourceVersion = '';
          } else {
            log.info('pod watch expired (410 Gone); relisting', { resourceVersion });
            relistResourceVersion = resourceVersion;
          }
          needList = true;
          continue;
        }
        const message = describeError(err);
        if (failures < 3)
          log.warn('pod list/watch failed; retrying with back-off', { err: message, failures: failures + 1 });
        else log.debug('pod list/watch still failing', { err: message, failures: failures + 1 });
        try {
          await backoff();
        } catch {
          return; // stopped while waiting
        }
      }
    }
  }

  return {
    name: 'api',
    start(s) {
      send = s;
      loop = run();
    },
    async stop() {
      stop.abort();
      await loop;
    },
  };
}
