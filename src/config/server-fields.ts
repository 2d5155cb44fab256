/** The field table's rows for the kubelet API (see fields.ts for what a row is and drives). */
import * as d from './defaults.ts';
import { formatGoDuration as dur } from './duration.ts';
import type { FieldSpec } from './fields.ts';
import { nonNegativeDuration } from './validate.ts';

/**
 * The kubelet API's settings: serving, TLS, authentication, authorization, debugging handlers,
 * container log rotation. Their flags land in `FlagValues.server`. Compiled by server-config.ts.
 */
export const SERVER_FIELDS = {
  enableServer: {
    kind: 'bool',
    file: 'enableServer',
    flag: { name: 'enable-server' },
    fileZero: 'kept',
    default: d.DEFAULT_ENABLE_SERVER,
    help: `serve the kubelet API (default ${d.DEFAULT_ENABLE_SERVER})`,
  },
  tlsCertFile: {
    kind: 'string',
    file: 'tlsCertFile',
    flag: { name: 'tls-cert-file', arg: '<file>' },
    fileZero: 'kept',
    default: '',
    relativeToFile: true,
    help: 'serving certificate (with intermediates); default: self-signed under <root-dir>/pki',
  },
  tlsPrivateKeyFile: {
    kind: 'string',
    file: 'tlsPrivateKeyFile',
    flag: { name: 'tls-private-key-file', arg: '<file>' },
    fileZero: 'kept',
    default: '',
    relativeToFile: true,
    help: 'private key of --tls-cert-file',
  },
  tlsCipherSuites: {
    kind: 'stringList',
    file: 'tlsCipherSuites',
    flag: { name: 'tls-cipher-suites', arg: '<names,...>' },
    fileZero: 'kept',
    default: [],
    help: 'cipher suites (Go names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)',
  },
  tlsMinVersion: {
    kind: 'string',
    file: 'tlsMinVersion',
    flag: { name: 'tls-min-version', arg: '<version>' },
    fileZero: 'kept',
    default: '',
    help: 'minimum TLS version: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13',
  },
  anonymousAuth: {
    kind: 'bool',
    file: 'authentication.anonymous.enabled',
    flag: { name: 'anonymous-auth' },
    fileZero: 'kept',
    default: d.DEFAULT_AUTHENTICATION_ANONYMOUS,
    help: `let unauthenticated requests in as system:anonymous (default ${d.DEFAULT_AUTHENTICATION_ANONYMOUS}; upstream flags default to true)`,
  },
  clientCAFile: {
    kind: 'string',
    file: 'authentication.x509.clientCAFile',
    flag: { name: 'client-ca-file', arg: '<file>' },
    fileZero: 'kept',
    default: '',
    relativeToFile: true,
    help: 'CA bundle for client certificates (user = CN, groups = O)',
  },
  authenticationTokenWebhook: {
    kind: 'bool',
    file: 'authentication.webhook.enabled',
    flag: { name: 'authentication-token-webhook' },
    fileZero: 'kept',
    default: d.DEFAULT_AUTHENTICATION_WEBHOOK,
    help: `check bearer tokens with a TokenReview (default ${d.DEFAULT_AUTHENTICATION_WEBHOOK})`,
  },
  authenticationTokenWebhookCacheTTL: {
    kind: 'duration',
    file: 'authentication.webhook.cacheTTL',
    flag: { name: 'authentication-token-webhook-cache-ttl', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_AUTHENTICATION_WEBHOOK_CACHE_TTL_MS,
    check: nonNegativeDuration,
    help: `how long TokenReview answers are cached (default ${dur(d.DEFAULT_AUTHENTICATION_WEBHOOK_CACHE_TTL_MS)})`,
  },
  authorizationMode: {
    kind: 'string',
    file: 'authorization.mode',
    flag: { name: 'authorization-mode', arg: '<mode>' },
    fileZero: 'default',
    default: d.DEFAULT_AUTHORIZATION_MODE,
    check: (c, errors) => {
      if (c.value !== 'Webhook' && c.value !== 'AlwaysAllow') {
        errors.push(
          `${c.label}: ${JSON.stringify(c.value)} is not supported (want "Webhook" or "AlwaysAllow")`,
        );
      }
    },
    help: 'Webhook (a SubjectAccessReview per request; default) or AlwaysAllow (upstream flags default to it)',
  },
  authorizationWebhookCacheAuthorizedTTL: {
    kind: 'duration',
    file: 'authorization.webhook.cacheAuthorizedTTL',
    flag: { name: 'authorization-webhook-cache-authorized-ttl', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_AUTHORIZATION_WEBHOOK_CACHE_AUTHORIZED_TTL_MS,
    check: nonNegativeDuration,
    help: `cache of allowed decisions (default ${dur(d.DEFAULT_AUTHORIZATION_WEBHOOK_CACHE_AUTHORIZED_TTL_MS)})`,
  },
  authorizationWebhookCacheUnauthorizedTTL: {
    kind: 'duration',
    file: 'authorization.webhook.cacheUnauthorizedTTL',
    flag: { name: 'authorization-webhook-cache-unauthorized-ttl', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_AUTHORIZATION_WEBHOOK_CACHE_UNAUTHORIZED_TTL_MS,
    check: nonNegativeDuration,
    help: `cache of denied decisions (default ${dur(d.DEFAULT_AUTHORIZATION_WEBHOOK_CACHE_UNAUTHORIZED_TTL_MS)})`,
  },
  enableDebuggingHandlers: {
    kind: 'bool',
    file: 'enableDebuggingHandlers',
    flag: { name: 'enable-debugging-handlers' },
    fileZero: 'kept',
    default: d.DEFAULT_ENABLE_DEBUGGING_HANDLERS,
    help: `serve logs, exec, attach, port-forward and run (default ${d.DEFAULT_ENABLE_DEBUGGING_HANDLERS})`,
  },
  enableSystemLogHandler: {
    kind: 'bool',
    file: 'enableSystemLogHandler',
    fileZero: 'kept',
    default: d.DEFAULT_ENABLE_SYSTEM_LOG_HANDLER,
    help: '/logs/ (files under /var/log); only with enableDebuggingHandlers, as upstream',
  },
  streamingConnectionIdleTimeout: {
    kind: 'duration',
    file: 'streamingConnectionIdleTimeout',
    flag: { name: 'streaming-connection-idle-timeout', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_STREAMING_CONNECTION_IDLE_TIMEOUT_MS,
    check: nonNegativeDuration,
    help: `idle timeout of exec/attach/port-forward (default ${dur(d.DEFAULT_STREAMING_CONNECTION_IDLE_TIMEOUT_MS)})`,
  },
  containerLogMaxSize: {
    kind: 'string',
    file: 'containerLogMaxSize',
    flag: { name: 'container-log-max-size', arg: '<quantity>' },
    fileZero: 'default',
    default: d.DEFAULT_CONTAINER_LOG_MAX_SIZE,
    // A quantity: parsed and checked by server-config.ts.
    help: `rotate a container log file above this size (default ${d.DEFAULT_CONTAINER_LOG_MAX_SIZE})`,
  },
  containerLogMaxFiles: {
    kind: 'int32',
    file: 'containerLogMaxFiles',
    flag: { name: 'container-log-max-files', arg: '<n>' },
    fileZero: 'default',
    default: d.DEFAULT_CONTAINER_LOG_MAX_FILES,
    check: (c, errors) => {
      if (c.value < 2) errors.push(`${c.label}: ${c.value} must be at least 2`);
    },
    help: `log files kept per container, the live one included (default ${d.DEFAULT_CONTAINER_LOG_MAX_FILES})`,
  },
  localSocket: {
    kind: 'string',
    // tskubelet's own: KubeletConfiguration has no such field, so it is a flag only.
    flag: { name: 'local-socket', arg: '<path>' },
    fileZero: 'kept',
    help: 'unix socket serving the kubelet API to local root without certificates (default <root-dir>/tskubelet.sock; "" disables)',
  },
} satisfies Readonly<Record<string, FieldSpec>>;
