/**
 * Test helpers for cluster-mode modules (not exported from any index): the one fake `ApiClient`,
 * with scripted responses per method + path, recorded requests, and watch streams the test drives;
 * and the API server's strategic merge patch, for fakes that keep objects.
 */
import {
  ApiError,
  QuietWatchError,
  type ApiClient,
  type ApiRequest,
  type WatchEvent,
} from './client-types.ts';
import { KubeletError } from '../util/errors.ts';
import { untilAborted } from '../util/abort.ts';
import type { KubeletPod, Pod } from './types.ts';
import { buildPod } from '../../test/kit/pod.ts';

export function apiError(status: number, reason: string, message = 'fake'): ApiError {
  return new ApiError('fake api', status, reason, message);
}

/** The error the real client raises when a watch delivered nothing for `idleTimeoutMs`. */
export function quietWatchError(idleMs = 1000, path = '/api/v1/pods'): QuietWatchError {
  return new QuietWatchError(`WATCH ${path}`, idleMs);
}

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A reply: a value (resolves), an Error (rejects), or a function of the request (may be async). */
export type Reply = unknown;

type PathMatch = string | RegExp;

interface Script {
  method: ApiRequest['method'];
  path: PathMatch;
  reply: Reply;
  once: boolean;
}

/** A request as made: a deep copy of it, plus the caller's own signal (to check cancellation). */
export type RecordedRequest = ApiRequest;

/** One open (or finished) watch the code under test started. */
export class FakeWatch {
  readonly path: string;
  readonly query: Record<string, string | number | boolean | undefined>;
  readonly idleTimeoutMs: number | undefined;
  readonly signal: AbortSignal;
  /** 'open' until the test ends or fails it, or the caller aborts. */
  state: 'open' | 'ended' | 'failed' | 'aborted' = 'open';
  /** Resolves or rejects the watch() promise the caller awaits. */
  readonly done: Promise<void>;
  private readonly onEvent: (e: WatchEvent) => void;
  private settle!: { resolve: () => void; reject: (err: unknown) => void };

  constructor(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (e: WatchEvent) => void,
    opts: { signal: AbortSignal; idleTimeoutMs?: number },
  ) {
    this.path = path;
    this.query = { ...query };
    this.idleTimeoutMs = opts.idleTimeoutMs;
    this.signal = opts.signal;
    this.onEvent = onEvent;
    this.done = new Promise<void>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    const onAbort = () => {
      if (this.state !== 'open') return;
      this.state = 'aborted';
      this.settle.reject(new KubeletError('Canceled', `WATCH ${path}`, 'aborted'));
    };
    if (opts.signal.aborted) onAbort();
    else opts.signal.addEventListener('abort', onAbort, { once: true });
  }

  /** Delivers one event to the caller, synchronously, as the real client does per line. */
  push(type: WatchEvent['type'], object: Record<string, unknown>): void {
    if (this.state !== 'open') throw new Error(`fake watch is ${this.state}; cannot push ${type}`);
    this.onEvent({ type, object });
  }

  pushPod(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: Pod): void {
    this.push(type, pod as unknown as Record<string, unknown>);
  }

  /** A BOOKMARK: an object carrying only a resourceVersion. */
  bookmark(resourceVersion: string): void {
    this.push('BOOKMARK', { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion } });
  }

  /** The server closed the stream normally (e.g. after timeoutSeconds). */
  end(): void {
    if (this.state !== 'open') return;
    this.state = 'ended';
    this.settle.resolve();
  }

  /** The stream failed (e.g. `apiError(410, 'Expired')`, a network error, a quiet watch). */
  fail(err: unknown): void {
    if (this.state !== 'open') return;
    this.state = 'failed';
    this.settle.reject(err);
  }
}

/**
 * A fake `ApiClient`. Responses are scripted per method + path (exact string or RegExp):
 * `respondOnce` replies are used first, in order, then the latest matching `respond` reply. A request with
 * no script rejects with a 500 and is kept in `unscripted`, so a test can assert nothing unexpected
 * was asked. Every request is recorded. A request whose signal aborts rejects with Canceled, as the
 * real client does. Watches are handed to the test through `nextWatch()`.
 */
export class FakeApi implements ApiClient {
  readonly server = 'https://fake-api';
  readonly requests: RecordedRequest[] = [];
  readonly unscripted: RecordedRequest[] = [];
  readonly watches: FakeWatch[] = [];
  closed = false;
  /** Every call in order: `METHOD path` for requests, `WATCH path` for watches. */
  private readonly log: string[] = [];
  private scripts: Script[] = [];
  private unclaimed: FakeWatch[] = [];
  private watchWaiters: ((w: FakeWatch) => void)[] = [];

  /** The standing reply for method + path; the latest matching standing reply wins. */
  respond(method: ApiRequest['method'], path: PathMatch, reply: Reply): this {
    this.scripts = this.scripts.filter(
      (s) => s.once || s.method !== method || String(s.path) !== String(path),
    );
    this.scripts.push({ method, path, reply, once: false });
    return this;
  }

  /** A reply used once, before any standing reply; several queue up in order. */
  respondOnce(method: ApiRequest['method'], path: PathMatch, reply: Reply): this {
    this.scripts.push({ method, path, reply, once: true });
    return this;
  }

  /** Requests as `METHOD path` lines, watches as `WATCH path`, in call order. */
  calls(): string[] {
    return [...this.log];
  }

  /** Forgets recorded requests and calls (scripts stay). */
  clearRecorded(): void {
    this.requests.length = 0;
    this.unscripted.length = 0;
    this.log.length = 0;
  }

  /** Recorded requests matching method (and path). */
  requestsFor(method: ApiRequest['method'], path?: PathMatch): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && (path === undefined || matches(path, r.path)));
  }

  /**
   * Resolves with the oldest watch not yet handed out, waiting for one to open if needed. The
   * guard timeout only keeps a broken test from hanging (it measures nothing, and never fires
   * while the test mocks setTimeout).
   */
  nextWatch(guardMs = 5000): Promise<FakeWatch> {
    const w = this.unclaimed.shift();
    if (w) return Promise.resolve(w);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no watch was opened')), guardMs);
      this.watchWaiters.push((opened) => {
        clearTimeout(timer);
        resolve(opened);
      });
    });
  }

  /** Watches opened but not yet handed out by nextWatch(). */
  pendingWatches(): number {
    return this.unclaimed.length;
  }

  request<T>(req: ApiRequest): Promise<T> {
    const rec: RecordedRequest = structuredClone({ ...req, signal: undefined });
    rec.signal = req.signal;
    this.requests.push(rec);
    this.log.push(`${req.method} ${req.path}`);
    if (req.signal?.aborted) return Promise.reject(canceled(req));
    const i = this.scripts.findIndex((s) => s.once && s.method === req.method && matches(s.path, req.path));
    const script =
      i >= 0
        ? this.scripts.splice(i, 1)[0]
        : this.scripts.findLast((s) => !s.once && s.method === req.method && matches(s.path, req.path));
    if (!script) {
      this.unscripted.push(rec);
      return Promise.reject(apiError(500, 'InternalError', `no fake reply for ${req.method} ${req.path}`));
    }
    const answer = (async () => {
      const r: unknown =
        typeof script.reply === 'function'
          ? await (script.reply as (q: ApiRequest) => unknown)(req)
          : script.reply;
      if (r instanceof Error) throw r;
      return structuredClone(r) as T;
    })();
    return untilAborted(answer, req.signal, () => canceled(req));
  }

  watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (e: WatchEvent) => void,
    opts: { signal: AbortSignal; idleTimeoutMs?: number },
  ): Promise<void> {
    const w = new FakeWatch(path, query, onEvent, opts);
    this.watches.push(w);
    this.log.push(`WATCH ${path}`);
    const waiter = this.watchWaiters.shift();
    if (waiter) waiter(w);
    else this.unclaimed.push(w);
    return w.done;
  }

  /** Times closeConnections() was called. */
  connectionsClosed = 0;

  closeConnections(): void {
    this.connectionsClosed++;
  }

  /** Times reloadCredentials() was called. */
  credentialReloads = 0;

  reloadCredentials(): Promise<boolean> {
    this.credentialReloads++;
    return Promise.resolve(false);
  }

  close(): void {
    this.closed = true;
  }
}

function matches(p: PathMatch, path: string): boolean {
  return typeof p === 'string' ? p === path : p.test(path);
}

function canceled(req: ApiRequest): KubeletError {
  return new KubeletError('Canceled', `${req.method} ${req.path}`, 'aborted');
}

type Obj = Record<string, unknown>;

/**
 * Merge keys of the lists the kubelet's patches touch, by JSON path (core/v1 Node and Pod); every
 * other list is atomic.
 */
const MERGE_KEYS: Readonly<Record<string, string>> = {
  'metadata.ownerReferences': 'uid',
  'status.conditions': 'type',
  'status.addresses': 'type',
  'status.podIPs': 'ip',
  'status.hostIPs': 'ip',
};

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Applies a strategic merge patch as the API server does for the parts the kubelet's node and pod
 * status patches use: maps merge (null deletes), merge-keyed lists merge by key (`$patch: delete`,
 * `$patch: replace`, `$setElementOrder` with the server's other items first, in their order), other
 * lists and scalars are replaced. `path` is the JSON path of `target` (e.g. `status`).
 */
export function applyStrategicMergePatch(target: unknown, patch: unknown, path = ''): unknown {
  if (!isObj(patch)) return patch;
  const out: Obj = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$setElementOrder/')) {
      // A 1.20 API server panics (HTTP 500, connection dropped) on an order list for a list
      // without a merge key: it compares the order list's maps directly.
      const list = k.slice('$setElementOrder/'.length);
      if (
        MERGE_KEYS[path === '' ? list : `${path}.${list}`] === undefined &&
        Array.isArray(v) &&
        v.some(isObj)
      ) {
        throw new Error(`${k}: ${path === '' ? list : `${path}.${list}`} has no merge key`);
      }
      continue;
    }
    const p = path === '' ? k : `${path}.${k}`;
    if (v === null) {
      delete out[k];
      continue;
    }
    const mergeKey = MERGE_KEYS[p];
    if (Array.isArray(v) && mergeKey !== undefined) {
      if (v.some((e) => isObj(e) && e['$patch'] === 'replace')) {
        out[k] = v.filter((e) => !(isObj(e) && e['$patch'] === 'replace'));
        continue;
      }
      const list = (Array.isArray(out[k]) ? [...(out[k] as unknown[])] : []) as Obj[];
      for (const e of v as Obj[]) {
        const i = list.findIndex((x) => x[mergeKey] === e[mergeKey]);
        if (e['$patch'] === 'delete') {
          if (i >= 0) list.splice(i, 1);
        } else if (i >= 0) {
          list[i] = applyStrategicMergePatch(list[i], e, p) as Obj;
        } else {
          list.push(e);
        }
      }
      out[k] = list;
      continue;
    }
    out[k] = isObj(v) ? applyStrategicMergePatch(out[k], v, p) : v;
  }
  // $setElementOrder orders the merged list, also when the patch changed none of its items.
  for (const [directive, order] of Object.entries(patch)) {
    if (!directive.startsWith('$setElementOrder/') || !Array.isArray(order)) continue;
    const k = directive.slice('$setElementOrder/'.length);
    const mergeKey = MERGE_KEYS[path === '' ? k : `${path}.${k}`];
    const list = out[k];
    if (mergeKey === undefined || !Array.isArray(list)) continue;
    const rank = (e: unknown) => order.findIndex((o) => isObj(o) && isObj(e) && o[mergeKey] === e[mergeKey]);
    // Stable: items the order does not name (rank -1) keep their relative order, first.
    out[k] = [...(list as unknown[])].sort((a, b) => rank(a) - rank(b));
  }
  return out;
}

/** A minimal pod for API tests. */
export function apiPod(
  name: string,
  uid: string,
  over: { namespace?: string; annotations?: Record<string, string>; resourceVersion?: string } = {},
): KubeletPod {
  return buildPod(name, {
    uid,
    typeMeta: true,
    nodeName: 'node-a',
    ...(over.namespace !== undefined ? { namespace: over.namespace } : {}),
    ...(over.resourceVersion ? { resourceVersion: over.resourceVersion } : {}),
    ...(over.annotations ? { annotations: over.annotations } : {}),
  });
}

/** A pod with labels, annotations needing quotes, limits, requests and an init container: the downward API's fixture. */
export const downwardPod: KubeletPod = buildPod('web', {
  namespace: 'shop',
  uid: 'u-1',
  labels: { tier: 'front', app: 'web' },
  annotations: { 'example.com/note': 'say "hi"\n', Build: '7' },
  containers: [
    { name: 'app', resources: { limits: { cpu: '250m', memory: '64Mi' }, requests: { cpu: '100m' } } },
    'bare',
  ],
  initContainers: [{ name: 'init', resources: { requests: { memory: '1Gi' } } }],
});
/** The node allocatable the downward API's fixture falls back to. */
export const downwardAllocatable = () => ({ cpu: 4, memory: '8Gi', 'ephemeral-storage': '100Gi' });
