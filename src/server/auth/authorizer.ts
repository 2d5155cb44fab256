/**
 * May this user do this to the node (upstream's node authorizer attributes + webhook authorizer)?
 * Every kubelet API request maps to `{verb, resource: nodes, name: <node>, subresource}`; the
 * `Webhook` mode asks the API server with a SubjectAccessReview (answers cached: allowed for
 * cacheAuthorizedTTL, denied for cacheUnauthorizedTTL), `AlwaysAllow` allows everything.
 */
import type { ApiClient } from '../../api/client-types.ts';
import { KubeletError } from '../../util/errors.ts';
import type { UserInfo } from './authenticator.ts';
import { createReviewCache } from './review-cache.ts';

export interface RequestAttributes {
  user: UserInfo;
  verb: string;
  resource: 'nodes';
  subresource: 'proxy' | 'stats' | 'metrics' | 'log' | 'spec';
  name: string;
  apiVersion: 'v1';
  path: string;
}

export type AuthzDecision = { allowed: true } | { allowed: false; reason: string };

export interface Authorizer {
  /** Rejects (a KubeletError) when no decision could be made, e.g. the API server is unreachable. */
  authorize(attrs: RequestAttributes): Promise<AuthzDecision>;
}

/**
 * HTTP method → API verb (upstream pkg/kubelet/server/auth.go GetRequestAttributes); other
 * methods, HEAD included, get an empty verb, which only a rule with verb `*` allows.
 */
export function verbFor(method: string | undefined): string {
  switch (method) {
    case 'GET':
      return 'get';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      return '';
  }
}

function isSubpath(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/** The authorization attributes of one kubelet API request (upstream nodeAuthorizerAttributesGetter). */
export function requestAttributes(
  user: UserInfo,
  method: string | undefined,
  path: string,
  nodeName: string,
): RequestAttributes {
  let subresource: RequestAttributes['subresource'] = 'proxy';
  if (isSubpath(path, '/stats')) subresource = 'stats';
  else if (isSubpath(path, '/metrics')) subresource = 'metrics';
  else if (isSubpath(path, '/logs')) subresource = 'log';
  else if (isSubpath(path, '/spec')) subresource = 'spec';
  return {
    user,
    verb: verbFor(method),
    resource: 'nodes',
    subresource,
    name: nodeName,
    apiVersion: 'v1',
    path,
  };
}

export interface WebhookAuthorizerOptions {
  api: ApiClient;
  cacheAuthorizedTTLMs: number;
  cacheUnauthorizedTTLMs: number;
  timeoutMs?: number;
  /** Monotonic ms for the cache TTL; default util/clock's. */
  monotonic?: () => number;
}

const SAR_TIMEOUT_MS = 5_000;
const SAR_CACHE_ENTRIES = 4_096;

export function createAlwaysAllowAuthorizer(): Authorizer {
  return { authorize: () => Promise.resolve({ allowed: true }) };
}

/** An authorizer that cannot decide (Webhook mode without an API server): every request fails. */
export function createUnavailableAuthorizer(why: string): Authorizer {
  return {
    authorize: () => Promise.reject(new KubeletError('Unavailable', 'authorize', why)),
  };
}

export function createWebhookAuthorizer(opts: WebhookAuthorizerOptions): Authorizer {
  const cache = createReviewCache<AuthzDecision>({
    ttlMs: (d) => (d.allowed ? opts.cacheAuthorizedTTLMs : opts.cacheUnauthorizedTTLMs),
    maxEntries: SAR_CACHE_ENTRIES,
    ...(opts.monotonic ? { monotonic: opts.monotonic } : {}),
  });
  return {
    authorize(attrs) {
      const spec = {
        user: attrs.user.name,
        ...(attrs.user.uid ? { uid: attrs.user.uid } : {}),
        groups: attrs.user.groups,
        ...(attrs.user.extra ? { extra: attrs.user.extra } : {}),
        resourceAttributes: {
          verb: attrs.verb,
          group: '',
          version: attrs.apiVersion,
          resource: attrs.resource,
          subresource: attrs.subresource,
          name: attrs.name,
        },
      };
      // The path is not part of the decision for resource requests: one cache entry per
      // (user, verb, subresource), as upstream's webhook cache keys on the review spec.
      const key = JSON.stringify(spec);
      return cache.get(key, async () => {
        const res = await opts.api.request<SubjectAccessReviewResponse>({
          method: 'POST',
          path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
          body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
          timeoutMs: opts.timeoutMs ?? SAR_TIMEOUT_MS,
        });
        const status = res.status ?? {};
        if (status.allowed && !status.denied) return { allowed: true };
        return { allowed: false, reason: status.reason ?? '' };
      });
    },
  };
}

interface SubjectAccessReviewResponse {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}
