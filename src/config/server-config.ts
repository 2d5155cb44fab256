/**
 * The kubelet API's settings (upstream KubeletConfiguration v1beta1 serving, authentication and
 * authorization fields, container log rotation): decoding of the nested file objects, flags, and
 * compilation to `ServerSettings`.
 *
 * Secure by default, from a file *and* from flags alone: anonymous requests refused, bearer tokens
 * checked with a TokenReview, every request authorized with a SubjectAccessReview. Upstream's flag
 * defaults (anonymous on, AlwaysAllow) are not reproduced; insecure settings are only taken when
 * asked for, and each one is reported as a warning.
 */
import { parseQuantity } from '../api/quantity.ts';
import { describeError } from '../util/errors.ts';
import {
  DEFAULT_AUTHENTICATION_WEBHOOK_CACHE_TTL_MS,
  DEFAULT_AUTHORIZATION_WEBHOOK_CACHE_AUTHORIZED_TTL_MS,
  DEFAULT_AUTHORIZATION_WEBHOOK_CACHE_UNAUTHORIZED_TTL_MS,
  DEFAULT_CONTAINER_LOG_MAX_FILES,
  DEFAULT_CONTAINER_LOG_MAX_SIZE,
  DEFAULT_STREAMING_CONNECTION_IDLE_TIMEOUT_MS,
} from './defaults.ts';
import { tryParseGoDuration } from './duration.ts';

/** The file fields this module owns, as decoded (durations as Go strings, quantities as given). */
export interface RawServerConfiguration {
  enableServer?: boolean;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  tlsCipherSuites?: string[];
  tlsMinVersion?: string;
  authentication?: {
    anonymous?: { enabled?: boolean };
    webhook?: { enabled?: boolean; cacheTTL?: string };
    x509?: { clientCAFile?: string };
  };
  authorization?: {
    mode?: string;
    webhook?: { cacheAuthorizedTTL?: string; cacheUnauthorizedTTL?: string };
  };
  enableDebuggingHandlers?: boolean;
  enableContentionProfiling?: boolean;
  enableSystemLogHandler?: boolean;
  streamingConnectionIdleTimeout?: string;
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
}

/** The upstream flags for the same settings; a key is present only when its flag was given. */
export interface ServerFlagValues {
  enableServer?: boolean;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  tlsCipherSuites?: string[];
  tlsMinVersion?: string;
  anonymousAuth?: boolean;
  clientCAFile?: string;
  authenticationTokenWebhook?: boolean;
  authenticationTokenWebhookCacheTTL?: string;
  authorizationMode?: string;
  authorizationWebhookCacheAuthorizedTTL?: string;
  authorizationWebhookCacheUnauthorizedTTL?: string;
  enableDebuggingHandlers?: boolean;
  contentionProfiling?: boolean;
  streamingConnectionIdleTimeout?: string;
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
}

export type AuthorizationMode = 'Webhook' | 'AlwaysAllow';
/** Node's names for TLS protocol versions. */
export type TlsVersion = 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';

/** Compiled, validated settings of the kubelet API server. */
export interface ServerSettings {
  /** Serve the authenticated API on address:port (upstream enableServer). */
  readonly enableServer: boolean;
  /** Both or neither; neither: a self-signed pair under `<rootDir>/pki`. */
  readonly tlsCertFile?: string;
  readonly tlsPrivateKeyFile?: string;
  /** OpenSSL cipher names translated from Go's names; empty: Node's defaults. */
  readonly tlsCipherSuites: readonly string[];
  readonly tlsMinVersion?: TlsVersion;
  readonly authentication: {
    readonly anonymous: boolean;
    readonly webhook: boolean;
    readonly webhookCacheTTLMs: number;
    /** x509 client certificates are accepted when this CA bundle is set. */
    readonly clientCAFile?: string;
  };
  readonly authorization: {
    readonly mode: AuthorizationMode;
    readonly cacheAuthorizedTTLMs: number;
    readonly cacheUnauthorizedTTLMs: number;
  };
  /** logs, exec, attach, port-forward, run, runningpods; off: those answer 405 as upstream. */
  readonly enableDebuggingHandlers: boolean;
  /** Accepted for compatibility; Go's block profiler has no Node.js counterpart. */
  readonly enableContentionProfiling: boolean;
  /** `/logs/` (files under /var/log); only with enableDebuggingHandlers, as upstream. */
  readonly enableSystemLogHandler: boolean;
  readonly streamingConnectionIdleTimeoutMs: number;
  /** Rotate a container's log file above this size; 0 disables rotation. */
  readonly containerLogMaxSizeBytes: number;
  /** Files kept per container log, the live one included (≥ 2). */
  readonly containerLogMaxFiles: number;
}

/** Go's crypto/tls names (as upstream accepts them) → OpenSSL's names, for TLS ≤ 1.2 suites. */
const CIPHER_SUITES: Readonly<Record<string, string>> = {
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
};
/** TLS 1.3 suites: Go (and Node) always enable them; naming one is accepted and changes nothing. */
const TLS13_SUITES: ReadonlySet<string> = new Set([
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
]);
const TLS_VERSIONS: Readonly<Record<string, TlsVersion>> = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

type Reader = {
  string(key: string): string | undefined;
  bool(key: string): boolean | undefined;
  int32(key: string): number | undefined;
  duration(key: string): string | undefined;
  stringList(key: string): string[] | undefined;
};

/** Decodes the nested `authentication` / `authorization` objects; every problem names its field. */
export function decodeAuthFields(
  doc: Record<string, unknown>,
  errors: string[],
  reader: (obj: Record<string, unknown>, prefix: string) => Reader,
): Pick<RawServerConfiguration, 'authentication' | 'authorization'> {
  const out: Pick<RawServerConfiguration, 'authentication' | 'authorization'> = {};
  const authn = objectField(doc, 'authentication', ['anonymous', 'webhook', 'x509'], errors, '');
  if (authn) {
    const anonymous = objectField(authn, 'anonymous', ['enabled'], errors, 'authentication.');
    const webhook = objectField(authn, 'webhook', ['enabled', 'cacheTTL'], errors, 'authentication.');
    const x509 = objectField(authn, 'x509', ['clientCAFile'], errors, 'authentication.');
    out.authentication = dropUndefined({
      anonymous:
        anonymous &&
        dropUndefined({ enabled: reader(anonymous, 'authentication.anonymous.').bool('enabled') }),
      webhook:
        webhook &&
        dropUndefined({
          enabled: reader(webhook, 'authentication.webhook.').bool('enabled'),
          cacheTTL: reader(webhook, 'authentication.webhook.').duration('cacheTTL'),
        }),
      x509:
        x509 && dropUndefined({ clientCAFile: reader(x509, 'authentication.x509.').string('clientCAFile') }),
    });
  }
  const authz = objectField(doc, 'authorization', ['mode', 'webhook'], errors, '');
  if (authz) {
    const webhook = objectField(
      authz,
      'webhook',
      ['cacheAuthorizedTTL', 'cacheUnauthorizedTTL'],
      errors,
      'authorization.',
    );
    const r = reader(webhook ?? {}, 'authorization.webhook.');
    out.authorization = dropUndefined({
      mode: reader(authz, 'authorization.').string('mode'),
      webhook:
        webhook &&
        dropUndefined({
          cacheAuthorizedTTL: r.duration('cacheAuthorizedTTL'),
          cacheUnauthorizedTTL: r.duration('cacheUnauthorizedTTL'),
        }),
    });
  }
  return out;
}

/**
 * Merges flags over the file over the defaults and validates. Problems go to `errors` (each naming
 * its flag or field), insecure choices to `warnings`.
 */
export function compileServerSettings(
  flags: ServerFlagValues,
  raw: RawServerConfiguration,
  errors: string[],
  warnings: string[],
): ServerSettings {
  const duration = (
    flagValue: string | undefined,
    flag: string,
    fileValue: string | undefined,
    field: string,
    fallbackMs: number,
  ): number => {
    const value = flagValue ?? fileValue;
    const label = flagValue !== undefined ? `--${flag}` : field;
    if (value === undefined) return fallbackMs;
    const parsed = tryParseGoDuration(value);
    if (!parsed.ok) {
      errors.push(`${label}: ${parsed.reason}`);
      return fallbackMs;
    }
    // A zero in the file means "default" (upstream defaulting); a zero flag is taken as given.
    if (flagValue === undefined && parsed.ms === 0) return fallbackMs;
    if (parsed.ms < 0) errors.push(`${label}: ${JSON.stringify(value)} must not be negative`);
    return parsed.ms;
  };

  const anonymous = flags.anonymousAuth ?? raw.authentication?.anonymous?.enabled ?? false;
  const webhook = flags.authenticationTokenWebhook ?? raw.authentication?.webhook?.enabled ?? true;
  const webhookCacheTTLMs = duration(
    flags.authenticationTokenWebhookCacheTTL,
    'authentication-token-webhook-cache-ttl',
    raw.authentication?.webhook?.cacheTTL,
    'authentication.webhook.cacheTTL',
    DEFAULT_AUTHENTICATION_WEBHOOK_CACHE_TTL_MS,
  );
  const clientCAFile = flags.clientCAFile ?? raw.authentication?.x509?.clientCAFile ?? '';

  const modeValue = flags.authorizationMode ?? (raw.authorization?.mode || 'Webhook');
  const modeLabel = flags.authorizationMode !== undefined ? '--authorization-mode' : 'authorization.mode';
  let mode: AuthorizationMode = 'Webhook';
  if (modeValue === 'Webhook' || modeValue === 'AlwaysAllow') mode = modeValue;
  else
    errors.push(
      `${modeLabel}: ${JSON.stringify(modeValue)} is not supported (want "Webhook" or "AlwaysAllow")`,
    );
  const cacheAuthorizedTTLMs = duration(
    flags.authorizationWebhookCacheAuthorizedTTL,
    'authorization-webhook-cache-authorized-ttl',
    raw.authorization?.webhook?.cacheAuthorizedTTL,
    'authorization.webhook.cacheAuthorizedTTL',
    DEFAULT_AUTHORIZATION_WEBHOOK_CACHE_AUTHORIZED_TTL_MS,
  );
  const cacheUnauthorizedTTLMs = duration(
    flags.authorizationWebhookCacheUnauthorizedTTL,
    'authorization-webhook-cache-unauthorized-ttl',
    raw.authorization?.webhook?.cacheUnauthorizedTTL,
    'authorization.webhook.cacheUnauthorizedTTL',
    DEFAULT_AUTHORIZATION_WEBHOOK_CACHE_UNAUTHORIZED_TTL_MS,
  );

  const enableServer = flags.enableServer ?? raw.enableServer ?? true;
  if (enableServer) {
    if (anonymous) {
      warnings.push(
        'kubelet API: anonymous requests are enabled (--anonymous-auth / authentication.anonymous.enabled); ' +
          'anyone who reaches the port is system:anonymous',
      );
    }
    if (mode === 'AlwaysAllow') {
      warnings.push(
        'kubelet API: authorization mode AlwaysAllow: every authenticated request may read logs and exec into pods' +
          (anonymous ? ', anonymous ones included' : ''),
      );
    }
  }

  const tlsCertFile = flags.tlsCertFile ?? raw.tlsCertFile ?? '';
  const tlsPrivateKeyFile = flags.tlsPrivateKeyFile ?? raw.tlsPrivateKeyFile ?? '';
  if ((tlsCertFile === '') !== (tlsPrivateKeyFile === '')) {
    errors.push(
      'tlsCertFile and tlsPrivateKeyFile (--tls-cert-file, --tls-private-key-file) must be given together',
    );
  }
  const suitesValue = flags.tlsCipherSuites ?? raw.tlsCipherSuites ?? [];
  const suitesLabel = flags.tlsCipherSuites !== undefined ? '--tls-cipher-suites' : 'tlsCipherSuites';
  const tlsCipherSuites: string[] = [];
  for (const name of suitesValue) {
    const openssl = CIPHER_SUITES[name];
    if (openssl) tlsCipherSuites.push(openssl);
    else if (!TLS13_SUITES.has(name))
      errors.push(`${suitesLabel}: ${JSON.stringify(name)} is not a supported cipher suite`);
  }
  const minValue = flags.tlsMinVersion ?? raw.tlsMinVersion ?? '';
  let tlsMinVersion: TlsVersion | undefined;
  if (minValue !== '') {
    tlsMinVersion = TLS_VERSIONS[minValue];
    if (!tlsMinVersion) {
      const label = flags.tlsMinVersion !== undefined ? '--tls-min-version' : 'tlsMinVersion';
      errors.push(
        `${label}: ${JSON.stringify(minValue)} is not a TLS version (want one of ${Object.keys(TLS_VERSIONS).join(', ')})`,
      );
    }
  }

  const sizeValue = flags.containerLogMaxSize ?? (raw.containerLogMaxSize || DEFAULT_CONTAINER_LOG_MAX_SIZE);
  const sizeLabel =
    flags.containerLogMaxSize !== undefined ? '--container-log-max-size' : 'containerLogMaxSize';
  let containerLogMaxSizeBytes = 0;
  try {
    containerLogMaxSizeBytes = Math.floor(parseQuantity(sizeValue, sizeLabel));
    if (containerLogMaxSizeBytes < 0)
      errors.push(`${sizeLabel}: ${JSON.stringify(sizeValue)} must not be negative`);
  } catch (err) {
    errors.push(describeError(err));
  }
  const filesValue =
    flags.containerLogMaxFiles ?? (raw.containerLogMaxFiles || DEFAULT_CONTAINER_LOG_MAX_FILES);
  if (filesValue < 2) {
    const label =
      flags.containerLogMaxFiles !== undefined ? '--container-log-max-files' : 'containerLogMaxFiles';
    errors.push(`${label}: ${filesValue} must be at least 2`);
  }

  return {
    enableServer,
    ...(tlsCertFile ? { tlsCertFile, tlsPrivateKeyFile } : {}),
    tlsCipherSuites,
    ...(tlsMinVersion ? { tlsMinVersion } : {}),
    authentication: {
      anonymous,
      webhook,
      webhookCacheTTLMs,
      ...(clientCAFile ? { clientCAFile } : {}),
    },
    authorization: { mode, cacheAuthorizedTTLMs, cacheUnauthorizedTTLMs },
    enableDebuggingHandlers: flags.enableDebuggingHandlers ?? raw.enableDebuggingHandlers ?? true,
    enableContentionProfiling: flags.contentionProfiling ?? raw.enableContentionProfiling ?? false,
    enableSystemLogHandler: raw.enableSystemLogHandler ?? true,
    streamingConnectionIdleTimeoutMs: duration(
      flags.streamingConnectionIdleTimeout,
      'streaming-connection-idle-timeout',
      raw.streamingConnectionIdleTimeout,
      'streamingConnectionIdleTimeout',
      DEFAULT_STREAMING_CONNECTION_IDLE_TIMEOUT_MS,
    ),
    containerLogMaxSizeBytes,
    containerLogMaxFiles: filesValue,
  };
}

function objectField(
  parent: Record<string, unknown>,
  key: string,
  known: readonly string[],
  errors: string[],
  prefix: string,
): Record<string, unknown> | undefined {
  const value = parent[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    errors.push(
      `field "${prefix}${key}": expected an object, got ${Array.isArray(value) ? 'a list' : typeof value}`,
    );
    return undefined;
  }
  const obj = value as Record<string, unknown>;
  for (const k of Object.keys(obj)) {
    if (!known.includes(k)) errors.push(`unknown field "${prefix}${key}.${k}"`);
  }
  return obj;
}

function dropUndefined<T extends object>(obj: T): T {
  for (const k of Object.keys(obj) as (keyof T)[]) if (obj[k] === undefined) delete obj[k];
  return obj;
}
