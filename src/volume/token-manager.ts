import type { ApiClient, ApiRequest } from '../api/client-types.ts';
import {
  TOKEN_GC_PERIOD_MS,
  TOKEN_MAX_JITTER_SECONDS,
  TOKEN_MAX_TTL_MS,
  TOKEN_REFRESH_BEFORE_EXPIRY_PERCENT,
} from '../config/defaults.ts';
import { KubeletError, describeError, isKubeletError, isNotFound, type ErrorCode } from '../util/errors.ts';
import { nullLogger, type Logger } from '../util/logger.ts';
import { abortReason, combineSignals, untilAborted } from '../util/abort.ts';
import { monotonicNow } from '../util/clock.ts';

/** Bound on one TokenRequest call (the API client's own default; not upstream, which has none). */
export const TOKEN_REQUEST_TIMEOUT_MS = 10_000;

/** authentication.k8s.io/v1 BoundObjectReference: the pod a token is bound to (dies with it). */
export interface BoundObjectReference {
  apiVersion: 'v1';
  kind: 'Pod';
  name: string;
  uid: string;
}

/** authentication.k8s.io/v1 TokenRequestSpec, as the kubelet sends it. */
export interface TokenRequestSpec {
  /** Empty: the API server's default audiences (its `--api-audiences`, else the issuer). */
  audiences: string[];
  expirationSeconds: number;
  boundObjectRef: BoundObjectReference;
}

/** A token as the manager hands it out. Equal `token` strings mean the same (cached) token. */
export interface ServiceAccountToken {
  token: string;
  /** status.expirationTimestamp, ms since the epoch. */
  expiresAt: number;
}

/**
 * Service-account tokens for pods' projected volumes (upstream `token.Manager`). Tokens are cached
 * per service account, namespace, audiences, expiration and bound pod UID, and handed out again until
 * they need a refresh: older than 24 h, or 80 % of their lifetime passed (minus up to 10 s of jitter).
 * A token's age is measured on the monotonic clock from when it was asked for, never by comparing
 * its expirationTimestamp (the API server's clock) with the local wall clock: a wall step, or a skew
 * between the two machines, neither refreshes a token on every call nor lets it expire unrefreshed.
 * A failed refresh is logged and the old token handed out while it is still valid; without a valid
 * token the call rejects with a KubeletError. Every call settles within two request timeouts (the
 * TokenRequest, and a discovery read after a 404), or at once when `signal` aborts.
 * Nothing runs in the background: expired tokens are
 * dropped (at most once a minute) when a token is asked for, a pod's tokens by `forgetPod`.
 */
export interface ServiceAccountTokenSource {
  getToken(
    namespace: string,
    serviceAccount: string,
    spec: TokenRequestSpec,
    signal?: AbortSignal,
  ): Promise<ServiceAccountToken>;
  /** Forgets every token bound to the pod (upstream DeleteServiceAccountToken), once it is gone. */
  forgetPod(uid: string): void;
}

export interface TokenManagerOptions {
  /** The kubelet's API client (cluster mode). */
  api: ApiClient;
  logger?: Logger;
  /** Monotonic ms (util/clock's by default): the age of tokens, the sweep period. */
  monotonic?: () => number;
  /** [0, 1), for the refresh jitter. */
  random?: () => number;
  requestTimeoutMs?: number;
}

/** authentication.k8s.io/v1 TokenRequest as the API server answers (only what is read). */
interface TokenRequestAnswer {
  spec?: { expirationSeconds?: number };
  status?: { token?: unknown; expirationTimestamp?: unknown };
}

interface CachedToken extends ServiceAccountToken {
  /** The lifetime granted (the answer's spec.expirationSeconds). */
  expirationSeconds: number;
  /**
   * When the token was asked for, monotonic ms: no later than when the API server issued it, so
   * its age is never underestimated.
   */
  requestedAt: number;
  podUID: string;
}

/** Not confidential, safe to log (upstream keyFunc). */
function cacheKey(namespace: string, name: string, spec: TokenRequestSpec): string {
  const ref = spec.boundObjectRef;
  return JSON.stringify([
    name,
    namespace,
    spec.audiences,
    spec.expirationSeconds,
    ref.kind,
    ref.name,
    ref.uid,
  ]);
}

export function createTokenManager(opts: TokenManagerOptions): ServiceAccountTokenSource {
  const log = opts.logger ?? nullLogger;
  const now = opts.monotonic ?? monotonicNow;
  const random = opts.random ?? Math.random;
  const timeoutMs = opts.requestTimeoutMs ?? TOKEN_REQUEST_TIMEOUT_MS;
  const cache = new Map<string, CachedToken>();
  let lastSweep = now();
  /** Whether the API server serves serviceaccounts/token; asked once, after a 404. */
  let supported: boolean | undefined;

  const expired = (t: CachedToken, at: number) => at - t.requestedAt > t.expirationSeconds * 1000;

  /**
   * Upstream requiresRefresh, with its whole-second jitter, on the token's age (upstream compares
   * the wall clock with the issue and expiry times the API server stamped).
   */
  function requiresRefresh(t: CachedToken, at: number): boolean {
    const jitterMs = Math.floor(random() * TOKEN_MAX_JITTER_SECONDS) * 1000;
    const age = at - t.requestedAt;
    if (age > TOKEN_MAX_TTL_MS - jitterMs) return true;
    const beforeExpirySeconds = Math.floor((t.expirationSeconds * TOKEN_REFRESH_BEFORE_EXPIRY_PERCENT) / 100);
    return age > (t.expirationSeconds - beforeExpirySeconds) * 1000 - jitterMs;
  }

  function sweep(at: number): void {
    if (at - lastSweep < TOKEN_GC_PERIOD_MS) return;
    lastSweep = at;
    for (const [key, t] of cache) if (expired(t, at)) cache.delete(key);
  }

  /**
   * One API call, settled within `timeoutMs` even if the client ignores its signal. Our own timeout
   * is a DeadlineExceeded error (a failed refresh, so a cached token may still serve); the caller's
   * abort is rethrown as is.
   */
  async function call<T>(req: Omit<ApiRequest, 'signal' | 'timeoutMs'>, signal?: AbortSignal): Promise<T> {
    const sig = combineSignals([signal], timeoutMs);
    try {
      return await untilAborted(opts.api.request<T>({ ...req, timeoutMs, signal: sig }), sig);
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      if (sig.aborted) {
        throw new KubeletError(
          'DeadlineExceeded',
          `${req.method} ${req.path}`,
          `no answer within ${timeoutMs} ms`,
          { cause: err },
        );
      }
      throw err;
    }
  }

  async function tokenRequestsSupported(signal?: AbortSignal): Promise<boolean | undefined> {
    if (supported !== undefined) return supported;
    try {
      const list = await call<{ resources?: { name?: string }[] }>(
        { method: 'GET', path: '/api/v1' },
        signal,
      );
      supported = (list.resources ?? []).some((r) => r.name === 'serviceaccounts/token');
      return supported;
    } catch (err) {
      // Unknown, not "unsupported": the caller reports the TokenRequest's own 404; asked again next time.
      log.warn('cannot tell whether the API server serves TokenRequest', { err: describeError(err) });
      return undefined;
    }
  }

  async function requestToken(
    op: string,
    namespace: string,
    name: string,
    spec: TokenRequestSpec,
    signal?: AbortSignal,
  ): Promise<CachedToken> {
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`;
    let answer: TokenRequestAnswer;
    const requestedAt = now();
    try {
      answer = await call<TokenRequestAnswer>(
        {
          method: 'POST',
          path,
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec },
        },
        signal,
      );
    } catch (err) {
      if (isNotFound(err) && (await tokenRequestsSupported(signal)) === false) {
        throw new KubeletError(
          'Unimplemented',
          op,
          'the API server does not have TokenRequest endpoints enabled',
          { cause: err },
        );
      }
      throw err;
    }
    const token = answer.status?.token;
    const stamp = answer.status?.expirationTimestamp;
    const expiresAt = typeof stamp === 'string' ? Date.parse(stamp) : NaN;
    if (typeof token !== 'string' || token === '' || Number.isNaN(expiresAt)) {
      throw new KubeletError(
        'Internal',
        op,
        'TokenRequest answer lacks status.token or a valid status.expirationTimestamp',
      );
    }
    const answered = answer.spec?.expirationSeconds;
    const expirationSeconds =
      typeof answered === 'number' && answered > 0 ? answered : spec.expirationSeconds;
    return { token, expiresAt, expirationSeconds, requestedAt, podUID: spec.boundObjectRef.uid };
  }

  const view = (t: CachedToken): ServiceAccountToken => ({ token: t.token, expiresAt: t.expiresAt });

  return {
    async getToken(namespace, name, spec, signal) {
      const op = `request token for serviceaccount ${namespace}/${name}`;
      const at = now();
      const key = cacheKey(namespace, name, spec);
      const cached = cache.get(key);
      sweep(at); // after the lookup, so an expired token still explains a failed refresh
      if (cached && !requiresRefresh(cached, at)) return view(cached);
      let fresh: CachedToken;
      try {
        fresh = await requestToken(op, namespace, name, spec, signal);
      } catch (err) {
        if (signal?.aborted) throw err; // the caller is gone; nothing to hand out
        const code: ErrorCode = isKubeletError(err) ? err.code : 'Unavailable';
        if (!cached) {
          throw new KubeletError(code, op, `failed to fetch token: ${describeError(err)}`, { cause: err });
        }
        if (expired(cached, now())) {
          throw new KubeletError(code, op, `token expired and refresh failed: ${describeError(err)}`, {
            cause: err,
          });
        }
        log.error('could not refresh service account token; using the cached one until it expires', {
          key,
          expiresAt: new Date(cached.expiresAt).toISOString(),
          err: describeError(err),
        });
        return view(cached);
      }
      cache.set(key, fresh);
      if (cached) log.debug('service account token refreshed', { key });
      return view(fresh);
    },
    forgetPod(uid) {
      for (const [key, t] of cache) if (t.podUID === uid) cache.delete(key);
    },
  };
}
