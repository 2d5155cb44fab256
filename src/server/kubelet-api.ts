/**
 * Assembles the kubelet API from the compiled settings: serving certificate, client CA,
 * authenticator, authorizer, handlers, listeners. Nothing listens until `start()`.
 */
import { join, resolve } from 'node:path';
import type { ApiClient } from '../api/client-types.ts';
import type { ServerSettings } from '../config/index.ts';
import type { Logger } from '../util/logger.ts';
import { createApiHandlers, type ConsoleHandler } from './api-handlers.ts';
import { createAuthenticator } from './auth/authenticator.ts';
import { loadClientCA } from './auth/client-ca.ts';
import {
  createAlwaysAllowAuthorizer,
  createUnavailableAuthorizer,
  createWebhookAuthorizer,
  type Authorizer,
} from './auth/authorizer.ts';
import type { CriReadHost } from './cri-read.ts';
import type { KubeletApiHost } from './host.ts';
import type { LocalEvent } from './pod-events.ts';
import {
  createKubeletServer,
  type KubeletServer,
  type RequestMetrics,
  type ServingCertificateSource,
} from './kubelet-server.ts';
import { LOCAL_SOCKET_NAME, createLocalSocketServer } from './local-socket.ts';
import { loadServingCert } from './serving-cert.ts';
import { createConsoleListener } from './console-listener.ts';

export interface KubeletApiOptions {
  settings: ServerSettings;
  address: string;
  port: number;
  readOnlyPort: number;
  rootDir: string;
  /** `--cert-dir`: where the self-signed serving pair is kept (default `<rootDir>/pki`). */
  certDir?: string;
  nodeName: string;
  /** For the self-signed certificate's SANs. */
  nodeIPs: readonly string[];
  host: KubeletApiHost;
  /** The API server (cluster mode): TokenReview and SubjectAccessReview go there. */
  api?: ApiClient;
  logger: Logger;
  /** The node console's routes (src/console); absent: /console/ is 404. */
  console?: ConsoleHandler;
  /** Also serve the console on this loopback address over plain HTTP, unauthenticated. */
  consoleAddress?: { host: string; port: number };
  /**
   * serverTLSBootstrap: the serving certificate comes from the API server (src/certificate) and
   * rotates; no self-signed pair is made and tlsCertFile/tlsPrivateKeyFile are the manager's.
   */
  servingCertificate?: ServingCertificateSource;
  /** Every request of the HTTPS and read-only listeners, timed (kubelet_http_requests_*). */
  requestMetrics?: RequestMetrics;
  /** The read-only CRI views of the local socket (the node CLI's `ps`, `images`, `inspect`, `stats`). */
  cri?: CriReadHost;
  /** The kubelet's recent events, for `describe` over the local socket. */
  events?: () => readonly LocalEvent[];
}

export async function createKubeletApi(opts: KubeletApiOptions): Promise<KubeletServer> {
  const s = opts.settings;
  const log = opts.logger.child({ component: 'kubelet-api' });
  const cert = opts.servingCertificate
    ? undefined
    : await loadServingCert({
        certDir: opts.certDir ?? join(opts.rootDir, 'pki'),
        nodeName: opts.nodeName,
        ips: opts.nodeIPs,
        ...(s.tlsCertFile ? { tlsCertFile: s.tlsCertFile } : {}),
        ...(s.tlsPrivateKeyFile ? { tlsPrivateKeyFile: s.tlsPrivateKeyFile } : {}),
        logger: log,
      });
  // Read now (a broken file stops the start), reloaded when it changes once the API runs.
  const clientCA = s.authentication.clientCAFile
    ? await loadClientCA({ path: s.authentication.clientCAFile, logger: log })
    : undefined;
  if (s.authentication.webhook && !opts.api) {
    log.warn('token webhook authentication needs an API server (--kubeconfig); bearer tokens are refused');
  }
  let authorizer: Authorizer;
  if (s.authorization.mode === 'AlwaysAllow') {
    authorizer = createAlwaysAllowAuthorizer();
  } else if (opts.api) {
    authorizer = createWebhookAuthorizer({
      api: opts.api,
      cacheAuthorizedTTLMs: s.authorization.cacheAuthorizedTTLMs,
      cacheUnauthorizedTTLMs: s.authorization.cacheUnauthorizedTTLMs,
    });
  } else {
    const why =
      'authorization mode Webhook needs an API server (--kubeconfig); every request is refused. ' +
      'Standalone, use authorization.mode AlwaysAllow with a client CA (authentication.x509.clientCAFile)';
    log.warn(`kubelet API: ${why}`);
    authorizer = createUnavailableAuthorizer(why);
  }
  const authenticator = createAuthenticator({
    anonymous: s.authentication.anonymous,
    x509: clientCA !== undefined,
    ...(s.authentication.webhook && opts.api
      ? { tokenReview: { api: opts.api, cacheTTLMs: s.authentication.webhookCacheTTLMs } }
      : {}),
  });
  const handlers = createApiHandlers({
    host: opts.host,
    enableDebuggingHandlers: s.enableDebuggingHandlers,
    enableSystemLogHandler: s.enableSystemLogHandler,
    streamingIdleTimeoutMs: s.streamingConnectionIdleTimeoutMs,
    logger: log,
    ...(opts.console ? { console: opts.console } : {}),
  });
  const server = createKubeletServer({
    address: opts.address,
    port: opts.port,
    readOnlyPort: opts.readOnlyPort,
    tls: {
      ...(cert ? { cert: cert.cert, key: cert.key } : {}),
      ...(opts.servingCertificate ? { servingCertificate: opts.servingCertificate } : {}),
      ...(clientCA ? { clientCA } : {}),
      ciphers: s.tlsCipherSuites,
      ...(s.tlsMinVersion ? { minVersion: s.tlsMinVersion } : {}),
    },
    nodeName: opts.nodeName,
    authenticator,
    authorizer,
    handlers,
    logger: opts.logger,
    ...(opts.requestMetrics ? { requestMetrics: opts.requestMetrics } : {}),
  });
  // The same handlers on the local unix socket (local-socket.ts): no authn/authz, root-only file.
  const socketPath = s.localSocket === undefined ? join(opts.rootDir, LOCAL_SOCKET_NAME) : s.localSocket;
  const local =
    socketPath === ''
      ? undefined
      : createLocalSocketServer({
          path: resolve(socketPath),
          handlers,
          logger: log,
          ...(opts.cri ? { cri: opts.cri } : {}),
          ...(opts.events ? { events: opts.events } : {}),
        });
  // The console on its own loopback listener (console-listener.ts) when --console-address is given;
  // not with the debugging handlers off: the console is one of them, and the listener would be
  // left serving /pods without authentication for nothing.
  if (opts.console && opts.consoleAddress && !s.enableDebuggingHandlers) {
    log.warn(
      '--console-address is ignored: enableDebuggingHandlers is false, and the node console shows pod output',
    );
  }
  const consoleListener =
    opts.console && opts.consoleAddress && s.enableDebuggingHandlers
      ? createConsoleListener({ ...opts.consoleAddress, handlers, logger: opts.logger })
      : undefined;
  return {
    async start() {
      await local?.start();
      await Promise.all([server.start(), consoleListener?.start()]);
      clientCA?.start();
    },
    ports: () => server.ports(),
    ...(local ? { localSocketPath: () => local.path } : {}),
    async close() {
      clientCA?.stop();
      await Promise.all([server.close(), local?.close(), consoleListener?.close()]);
    },
  };
}
