/**
 * The kubelet API's settings (upstream KubeletConfiguration v1beta1 serving, authentication and
 * authorization fields, container log rotation): their rows are `SERVER_FIELDS` in the field
 * table; this compiles them to `ServerSettings`.
 *
 * Secure by default, from a file *and* from flags alone: anonymous requests refused, bearer tokens
 * checked with a TokenReview, every request authorized with a SubjectAccessReview. Upstream's flag
 * defaults (anonymous on, AlwaysAllow) are not reproduced; insecure settings are only taken when
 * asked for, and each one is reported as a warning.
 */
import { parseQuantity } from '../api/quantity.ts';
import { describeError } from '../util/errors.ts';
import type { FieldSpec, ServerFieldKey } from './fields.ts';
import { SERVER_FIELDS } from './server-fields.ts';
import type { RawServerConfiguration, ServerFlagValues } from './raw.ts';
import { fileValueAt, resolveField } from './resolve.ts';

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
  /**
   * logs, exec, attach, port-forward, run, runningpods, and tskubelet's console, why and timeline;
   * off: those answer 405 as upstream's (server/routes.ts DEBUGGING_ROUTES).
   */
  readonly enableDebuggingHandlers: boolean;
  /** `/logs/` (files under /var/log); only with enableDebuggingHandlers, as upstream. */
  readonly enableSystemLogHandler: boolean;
  readonly streamingConnectionIdleTimeoutMs: number;
  /** Rotate a container's log file above this size; 0 disables rotation. */
  readonly containerLogMaxSizeBytes: number;
  /** Files kept per container log, the live one included (≥ 2). */
  readonly containerLogMaxFiles: number;
  /** The local unix socket (--local-socket): undefined = `<rootDir>/tskubelet.sock`, '' = none. */
  readonly localSocket?: string;
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
  const given: Readonly<Record<string, unknown>> = flags;
  const field = <K extends ServerFieldKey>(key: K) => {
    const spec = SERVER_FIELDS[key];
    return resolveField(spec, given[key], fileValueAt(raw, (spec as FieldSpec).file), errors);
  };

  const anonymous = field('anonymousAuth').value;
  const modeValue = field('authorizationMode').value;
  const mode: AuthorizationMode = modeValue === 'AlwaysAllow' ? 'AlwaysAllow' : 'Webhook';
  const enableServer = field('enableServer').value;
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

  const tlsCertFile = field('tlsCertFile').value;
  const tlsPrivateKeyFile = field('tlsPrivateKeyFile').value;
  if ((tlsCertFile === '') !== (tlsPrivateKeyFile === '')) {
    errors.push(
      'tlsCertFile and tlsPrivateKeyFile (--tls-cert-file, --tls-private-key-file) must be given together',
    );
  }
  const suites = field('tlsCipherSuites');
  const tlsCipherSuites: string[] = [];
  for (const name of suites.value) {
    const openssl = CIPHER_SUITES[name];
    if (openssl) tlsCipherSuites.push(openssl);
    else if (!TLS13_SUITES.has(name))
      errors.push(`${suites.label}: ${JSON.stringify(name)} is not a supported cipher suite`);
  }
  const min = field('tlsMinVersion');
  let tlsMinVersion: TlsVersion | undefined;
  if (min.value !== '') {
    tlsMinVersion = TLS_VERSIONS[min.value];
    if (!tlsMinVersion) {
      errors.push(
        `${min.label}: ${JSON.stringify(min.value)} is not a TLS version (want one of ${Object.keys(TLS_VERSIONS).join(', ')})`,
      );
    }
  }

  const size = field('containerLogMaxSize');
  let containerLogMaxSizeBytes = 0;
  try {
    containerLogMaxSizeBytes = Math.floor(parseQuantity(size.value, size.label));
    if (containerLogMaxSizeBytes < 0)
      errors.push(`${size.label}: ${JSON.stringify(size.value)} must not be negative`);
  } catch (err) {
    errors.push(describeError(err));
  }
  const clientCAFile = field('clientCAFile').value;
  const localSocket = field('localSocket').value;

  return {
    enableServer,
    ...(tlsCertFile ? { tlsCertFile, tlsPrivateKeyFile } : {}),
    tlsCipherSuites,
    ...(tlsMinVersion ? { tlsMinVersion } : {}),
    authentication: {
      anonymous,
      webhook: field('authenticationTokenWebhook').value,
      webhookCacheTTLMs: field('authenticationTokenWebhookCacheTTL').value,
      ...(clientCAFile ? { clientCAFile } : {}),
    },
    authorization: {
      mode,
      cacheAuthorizedTTLMs: field('authorizationWebhookCacheAuthorizedTTL').value,
      cacheUnauthorizedTTLMs: field('authorizationWebhookCacheUnauthorizedTTL').value,
    },
    enableDebuggingHandlers: field('enableDebuggingHandlers').value,
    enableSystemLogHandler: field('enableSystemLogHandler').value,
    streamingConnectionIdleTimeoutMs: field('streamingConnectionIdleTimeout').value,
    containerLogMaxSizeBytes,
    containerLogMaxFiles: field('containerLogMaxFiles').value,
    ...(localSocket !== undefined ? { localSocket } : {}),
  };
}
