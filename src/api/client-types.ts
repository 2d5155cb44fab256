import { KubeletError, type ErrorCode } from '../util/errors.ts';

/** Content types for writes; patches name their strategy. */
export type ApiContentType =
  | 'application/json'
  | 'application/merge-patch+json'
  | 'application/strategic-merge-patch+json'
  | 'application/json-patch+json';

export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Absolute API path, e.g. `/api/v1/nodes/node-1` or `/apis/coordination.k8s.io/v1/...`. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Defaults to application/json (PATCH: strategic merge). */
  contentType?: ApiContentType;
  /** Defaults to the client's request timeout (10 s). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent {
  type: WatchEventType;
  /** The object (a Status for ERROR). */
  object: Record<string, unknown>;
}

/**
 * A Kubernetes API client: raw JSON in and out, the client's rate limit (kubeAPIQPS/Burst) applied
 * to every request, a timeout on every request, errors as `ApiError`. Never retries by itself:
 * callers decide (a heartbeat retries differently from a status patch).
 */
export interface ApiClient {
  readonly server: string;
  request<T>(req: ApiRequest): Promise<T>;
  /**
   * Streams a watch (`?watch=1` is added) and calls `onEvent` per event; resolves when the server
   * closes the stream (e.g. after timeoutSeconds), rejects with ApiError on HTTP errors (410 Gone
   * included) and with a Canceled KubeletError when `signal` aborts. `idleTimeoutMs` rejects a
   * stream that sent nothing (not even a bookmark) for that long.
   */
  watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (e: WatchEvent) => void,
    opts: { signal: AbortSignal; idleTimeoutMs?: number },
  ): Promise<void>;
  /**
   * Destroys every open connection: requests in flight and watches fail at once (Unavailable) and
   * the next request dials anew. Upstream's closeAllConns, called on repeated heartbeat failures,
   * so a connection frozen by a network partition is not waited on until TCP gives up.
   */
  closeConnections(): void;
  /**
   * Reads the kubeconfig's client certificate and key files (and token file) again now, instead of
   * at the next periodic check: the certificate manager calls it right after it wrote a rotated
   * certificate. Resolves true when the certificate changed: new requests use it, connections made
   * with the old one close when they fall idle (watches run to their end). Never rejects.
   */
  reloadCredentials(): Promise<boolean>;
  close(): void;
}

function codeForStatus(status: number): ErrorCode {
  if (status === 400 || status === 422) return 'InvalidArgument';
  if (status === 401) return 'Unauthenticated';
  if (status === 403) return 'PermissionDenied';
  if (status === 404) return 'NotFound';
  if (status === 409) return 'AlreadyExists';
  if (status === 410) return 'FailedPrecondition';
  if (status === 429) return 'ResourceExhausted';
  if (status === 504) return 'DeadlineExceeded';
  if (status >= 500) return 'Unavailable';
  return 'Unknown';
}

/** An HTTP error from the API server, with the Status object's `reason` (Conflict, Gone, …). */
export class ApiError extends KubeletError {
  readonly status: number;
  /** metav1.Status reason, e.g. `AlreadyExists`, `Conflict`, `NotFound`, `Expired`, `Gone`. */
  readonly reason: string;
  /** The server's Retry-After (429 and 5xx answers), in seconds; callers back off at least this long. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    op: string,
    status: number,
    reason: string,
    message: string,
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(codeForStatus(status), op, `${status} ${reason}: ${message}`, options);
    this.name = 'ApiError';
    this.status = status;
    this.reason = reason;
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }
}

/** How long the server asked us to wait before the next try (0 when it did not say), in ms. */
export function retryAfterMs(err: unknown): number {
  return err instanceof ApiError && err.retryAfterSeconds !== undefined ? err.retryAfterSeconds * 1000 : 0;
}

export function isApiStatus(err: unknown, status: number): boolean {
  return err instanceof ApiError && err.status === status;
}

/** 409 from a create: the object exists. (A 409 from an update is a Conflict: reason tells.) */
export function isAlreadyExists(err: unknown): boolean {
  return err instanceof ApiError && err.status === 409 && err.reason === 'AlreadyExists';
}

export function isConflict(err: unknown): boolean {
  return err instanceof ApiError && err.status === 409 && err.reason !== 'AlreadyExists';
}

/**
 * A watch stream that delivered nothing (no event, no bookmark) for `idleMs`: the connection may be
 * dead without the socket knowing. Not an API failure: the caller restarts the watch from the last
 * resourceVersion, without a relist and without back-off.
 */
export class QuietWatchError extends KubeletError {
  readonly idleMs: number;

  constructor(op: string, idleMs: number) {
    super('DeadlineExceeded', op, `no watch event for ${idleMs} ms`);
    this.name = 'QuietWatchError';
    this.idleMs = idleMs;
  }
}

export function isQuietWatch(err: unknown): err is QuietWatchError {
  return err instanceof QuietWatchError;
}

/**
 * Nothing listened where the API server should be (ECONNREFUSED, anywhere in the cause chain): it is
 * down or restarting, not overloaded, so retrying soon costs it nothing.
 */
export function isConnectionRefused(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; e instanceof Error && depth < 5; depth++) {
    if ((e as NodeJS.ErrnoException).code === 'ECONNREFUSED') return true;
    e = e.cause;
  }
  return false;
}

/** The resourceVersion is too old (watch or list): relist. */
export function isGone(err: unknown): boolean {
  return err instanceof ApiError && (err.status === 410 || err.reason === 'Expired' || err.reason === 'Gone');
}
