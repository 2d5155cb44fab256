/**
 * Who is calling the kubelet API (upstream's delegating authenticator): a client certificate
 * verified against the client CA (user = CN, groups = O), else a bearer token checked with a
 * TokenReview against the API server (answers cached), else `system:anonymous` when anonymous
 * requests are enabled. As upstream, a token that fails is never anonymous, and every
 * authenticated user gets the `system:authenticated` group.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { ApiClient } from '../../api/client-types.ts';
import { describeError } from '../../util/errors.ts';
import { createReviewCache } from './review-cache.ts';

export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export type AuthnResult =
  | { ok: true; user: UserInfo; method: 'x509' | 'token' | 'anonymous' }
  /** `reason` is for the log only; the client sees `401 Unauthorized`. */
  | { ok: false; reason: string };

export interface Authenticator {
  authenticate(req: IncomingMessage): Promise<AuthnResult>;
}

export interface AuthenticatorOptions {
  anonymous: boolean;
  /** Whether client certificates are requested and verified (a client CA is configured). */
  x509: boolean;
  /** TokenReview client; absent: bearer tokens are refused. */
  tokenReview?: { api: ApiClient; cacheTTLMs: number; timeoutMs?: number };
  /** Monotonic ms for the cache TTL; default util/clock's. */
  monotonic?: () => number;
}

/** The user of a request without credentials, when anonymous requests are enabled (upstream's). */
export const ANONYMOUS_USER: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };
const AUTHENTICATED_GROUP = 'system:authenticated';
/** How long a TokenReview may take before the request is answered 401 (the API server may be down). */
const TOKEN_REVIEW_TIMEOUT_MS = 5_000;
const TOKEN_CACHE_ENTRIES = 4_096;

interface TokenAnswer {
  authenticated: boolean;
  user?: UserInfo;
  error?: string;
}

export function createAuthenticator(opts: AuthenticatorOptions): Authenticator {
  const review = opts.tokenReview;
  const tokens = createReviewCache<TokenAnswer>({
    // Upstream caches successes and failures for the same TTL.
    ttlMs: () => review?.cacheTTLMs ?? 0,
    maxEntries: TOKEN_CACHE_ENTRIES,
    ...(opts.monotonic ? { monotonic: opts.monotonic } : {}),
  });

  async function tokenReview(token: string): Promise<TokenAnswer> {
    if (!review)
      return { authenticated: false, error: 'bearer tokens are not accepted (token webhook is off)' };
    const key = createHash('sha256').update(token).digest('hex');
    return tokens.get(key, async () => {
      const res = await review.api.request<TokenReviewResponse>({
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/tokenreviews',
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
        timeoutMs: review.timeoutMs ?? TOKEN_REVIEW_TIMEOUT_MS,
      });
      const status = res.status ?? {};
      if (!status.authenticated || !status.user?.username) {
        return { authenticated: false, error: status.error || 'token not authenticated' };
      }
      const u = status.user;
      return {
        authenticated: true,
        user: {
          name: u.username ?? '',
          ...(u.uid ? { uid: u.uid } : {}),
          groups: u.groups ?? [],
          ...(u.extra ? { extra: u.extra } : {}),
        },
      };
    });
  }

  return {
    async authenticate(req) {
      if (opts.x509) {
        const cert = clientCertificate(req);
        if (cert.present) {
          if (!cert.verified) return { ok: false, reason: `client certificate rejected: ${cert.error}` };
          return { ok: true, method: 'x509', user: withAuthenticated(cert.user) };
        }
      }
      const bearer = bearerToken(req);
      if (bearer !== undefined) {
        if ('error' in bearer) return { ok: false, reason: bearer.error };
        const { token } = bearer;
        if (token === '') return { ok: false, reason: 'empty bearer token' };
        try {
          const answer = await tokenReview(token);
          if (!answer.authenticated || !answer.user)
            return { ok: false, reason: answer.error ?? 'invalid token' };
          return { ok: true, method: 'token', user: withAuthenticated(answer.user) };
        } catch (err) {
          // Never anonymous after a failed token check (upstream FailOnError).
          return { ok: false, reason: `TokenReview failed: ${describeError(err)}` };
        }
      }
      if (opts.anonymous) return { ok: true, method: 'anonymous', user: ANONYMOUS_USER };
      return {
        ok: false,
        reason: 'no client certificate or bearer token, and anonymous requests are disabled',
      };
    },
  };
}

interface TokenReviewResponse {
  status?: {
    authenticated?: boolean;
    error?: string;
    user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  };
}

function withAuthenticated(user: UserInfo): UserInfo {
  if (user.groups.includes(AUTHENTICATED_GROUP)) return user;
  return { ...user, groups: [...user.groups, AUTHENTICATED_GROUP] };
}

/** The WebSocket subprotocol that carries a bearer token (browsers cannot set Authorization). */
export const WEBSOCKET_TOKEN_PROTOCOL_PREFIX = 'base64url.bearer.authorization.k8s.io.';

/**
 * Whether a request asks for a WebSocket upgrade: `Upgrade: websocket` and an `upgrade` token in
 * `Connection` (upstream wsstream.IsWebSocketRequest).
 */
export function isWebSocketUpgrade(headers: IncomingHttpHeaders): boolean {
  if ((headers.upgrade ?? '').toLowerCase() !== 'websocket') return false;
  return (headers.connection ?? '')
    .toLowerCase()
    .split(',')
    .some((t) => t.trim() === 'upgrade');
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The bearer token: `Authorization: Bearer <token>` ('' for an empty one), else, on a WebSocket
 * upgrade only, a `base64url.bearer.authorization.k8s.io.<token>` subprotocol with upstream's
 * checks (websocket/protocol.go: one such protocol, valid base64url of UTF-8, and another
 * subprotocol beside it to answer with); undefined when there is none. A plain request's
 * subprotocol header is not a credential: a page could make the browser send it cross-site.
 */
export function bearerToken(
  req: Pick<IncomingMessage, 'headers'>,
): { token: string } | { error: string } | undefined {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const m = /^\s*bearer\s+(.*)$/i.exec(header);
    if (m) return { token: (m[1] ?? '').trim() };
  }
  const protocols = req.headers['sec-websocket-protocol'];
  if (typeof protocols !== 'string' || !isWebSocketUpgrade(req.headers)) return undefined;
  let encoded: string | undefined;
  let others = 0;
  for (const p of protocols.split(',')) {
    const v = p.trim();
    if (!v.startsWith(WEBSOCKET_TOKEN_PROTOCOL_PREFIX)) {
      others++;
      continue;
    }
    if (encoded !== undefined) return { error: 'multiple base64url.bearer.authorization tokens specified' };
    encoded = v.slice(WEBSOCKET_TOKEN_PROTOCOL_PREFIX.length);
  }
  if (encoded === undefined || encoded === '') return undefined;
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) {
    return { error: 'invalid base64url.bearer.authorization token encoding' };
  }
  let token: string;
  try {
    token = UTF8.decode(Buffer.from(encoded, 'base64url'));
  } catch {
    // Not UTF-8: upstream refuses it the same way (no detail to log beyond the reason).
    return { error: 'invalid base64url.bearer.authorization token' };
  }
  if (token === '') return undefined;
  // The token's protocol is not echoed back: the client must offer another one to be answered with.
  if (others === 0) return { error: 'missing additional subprotocol' };
  return { token };
}

type ClientCert =
  | { present: false }
  | { present: true; verified: false; error: string }
  | { present: true; verified: true; user: UserInfo };

function clientCertificate(req: IncomingMessage): ClientCert {
  const socket = req.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate !== 'function') return { present: false };
  const cert = socket.getPeerCertificate();
  if (!cert || Object.keys(cert).length === 0) return { present: false };
  if (!socket.authorized) {
    return { present: true, verified: false, error: String(socket.authorizationError ?? 'not verified') };
  }
  const subject = cert.subject as unknown as Record<string, string | string[] | undefined>;
  const list = (v: string | string[] | undefined): string[] =>
    v === undefined ? [] : Array.isArray(v) ? v : [v];
  const cn = list(subject.CN)[0] ?? '';
  if (cn === '') return { present: true, verified: false, error: 'certificate has no common name' };
  return { present: true, verified: true, user: { name: cn, groups: list(subject.O) } };
}
