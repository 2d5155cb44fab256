/**
 * The kubelet API's flags (upstream names): TLS, authentication, authorization, debugging
 * handlers, streaming and container log rotation. Registered on the `run` command; only flags
 * actually given become values (they override the config file, as every flag does).
 */
import { Option, type Command } from 'commander';
import type { ServerFlagValues } from '../config/index.ts';
import { boolOption, intOption, parseStringSlice } from './option-parsers.ts';

/** What commander stores for these flags, keyed by its camelCase attribute names. */
interface ServerOptionValues {
  enableServer?: boolean;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  tlsCipherSuites?: string[];
  tlsMinVersion?: string;
  anonymousAuth?: boolean;
  clientCaFile?: string;
  authenticationTokenWebhook?: boolean;
  authenticationTokenWebhookCacheTtl?: string;
  authorizationMode?: string;
  authorizationWebhookCacheAuthorizedTtl?: string;
  authorizationWebhookCacheUnauthorizedTtl?: string;
  enableDebuggingHandlers?: boolean;
  contentionProfiling?: boolean;
  streamingConnectionIdleTimeout?: string;
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
}

export function addServerFlags(cmd: Command): void {
  cmd
    .addOption(boolOption('--enable-server', 'serve the kubelet API (default true)'))
    .option(
      '--tls-cert-file <file>',
      'serving certificate (with intermediates); default: self-signed under <root-dir>/pki',
    )
    .option('--tls-private-key-file <file>', 'private key of --tls-cert-file')
    .addOption(
      new Option(
        '--tls-cipher-suites <names,...>',
        'cipher suites (Go names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)',
      ).argParser(parseStringSlice),
    )
    .option(
      '--tls-min-version <version>',
      'minimum TLS version: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13',
    )
    .addOption(
      boolOption(
        '--anonymous-auth',
        'let unauthenticated requests in as system:anonymous (default false; upstream flags default to true)',
      ),
    )
    .option('--client-ca-file <file>', 'CA bundle for client certificates (user = CN, groups = O)')
    .addOption(
      boolOption('--authentication-token-webhook', 'check bearer tokens with a TokenReview (default true)'),
    )
    .option(
      '--authentication-token-webhook-cache-ttl <duration>',
      'how long TokenReview answers are cached (default 2m0s)',
    )
    .option(
      '--authorization-mode <mode>',
      'Webhook (a SubjectAccessReview per request; default) or AlwaysAllow (upstream flags default to it)',
    )
    .option(
      '--authorization-webhook-cache-authorized-ttl <duration>',
      'cache of allowed decisions (default 5m0s)',
    )
    .option(
      '--authorization-webhook-cache-unauthorized-ttl <duration>',
      'cache of denied decisions (default 30s)',
    )
    .addOption(
      boolOption(
        '--enable-debugging-handlers',
        'serve logs, exec, attach, port-forward and run (default true)',
      ),
    )
    .addOption(boolOption('--contention-profiling', 'accepted for compatibility; has no effect'))
    .option(
      '--streaming-connection-idle-timeout <duration>',
      'idle timeout of exec/attach/port-forward (default 4h0m0s)',
    )
    .option(
      '--container-log-max-size <quantity>',
      'rotate a container log file above this size (default 10Mi)',
    )
    .addOption(
      intOption(
        '--container-log-max-files <n>',
        'log files kept per container, the live one included (default 5)',
      ),
    );
}

/** The server flags that were given, or undefined when none was. */
export function serverFlagValues(cmd: Command): ServerFlagValues | undefined {
  const o = cmd.opts<ServerOptionValues>();
  const server: ServerFlagValues = {
    enableServer: o.enableServer,
    tlsCertFile: o.tlsCertFile,
    tlsPrivateKeyFile: o.tlsPrivateKeyFile,
    tlsCipherSuites: o.tlsCipherSuites,
    tlsMinVersion: o.tlsMinVersion,
    anonymousAuth: o.anonymousAuth,
    clientCAFile: o.clientCaFile,
    authenticationTokenWebhook: o.authenticationTokenWebhook,
    authenticationTokenWebhookCacheTTL: o.authenticationTokenWebhookCacheTtl,
    authorizationMode: o.authorizationMode,
    authorizationWebhookCacheAuthorizedTTL: o.authorizationWebhookCacheAuthorizedTtl,
    authorizationWebhookCacheUnauthorizedTTL: o.authorizationWebhookCacheUnauthorizedTtl,
    enableDebuggingHandlers: o.enableDebuggingHandlers,
    contentionProfiling: o.contentionProfiling,
    streamingConnectionIdleTimeout: o.streamingConnectionIdleTimeout,
    containerLogMaxSize: o.containerLogMaxSize,
    containerLogMaxFiles: o.containerLogMaxFiles,
  };
  for (const key of Object.keys(server) as (keyof ServerFlagValues)[]) {
    if (server[key] === undefined) delete server[key];
  }
  return Object.keys(server).length > 0 ? server : undefined;
}
