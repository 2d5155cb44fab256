/**
 * The API client's credentials, kept current the way client-go's transport keeps them (upstream
 * client-go transport/cert_rotation.go and transport.go's ReloadTLSFiles for client certificate
 * files, transport/token_source.go for tokenFile, plugin/pkg/client/auth/exec for exec plugins;
 * the kubelet's pkg/kubelet/certificate/transport.go for the rotation check period):
 *
 * - client certificate and key files are read again every CLIENT_CERT_FILE_CHECK_PERIOD_MS and on
 *   reload() (the certificate manager calls it through ApiClient.reloadCredentials as soon as it
 *   wrote a new pair). A changed pair gets a new keep-alive agent for new requests; the old
 *   agent's idle connections are closed at once and its busy ones (watches) when they end, at most
 *   RETIRED_CONNECTIONS_GRACE_MS later. Upstream closes every connection at once (connrotation's
 *   CloseAll), which breaks every watch for the sake of the TLS handshake; a watch made with the
 *   old certificate stays as valid as it was, so we let it run out instead.
 * - a tokenFile is read again when its token is older than the file token source's period minus
 *   its leeway, and at once after a 401 to a request sent with an older read.
 * - an exec plugin's credentials come from exec-credential.ts; a client certificate it gives is
 *   switched to like a changed file.
 */
import { Agent } from 'node:https';
import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';
import {
  CLIENT_CERT_FILE_CHECK_PERIOD_MS,
  EXEC_PLUGIN_TIMEOUT_MS,
  RETIRED_CONNECTIONS_GRACE_MS,
  TOKEN_FILE_PERIOD_MS,
  TOKEN_SOURCE_LEEWAY_MS,
} from '../config/defaults.ts';
import { systemClock, type Clock } from '../util/clock.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { singleFlight } from '../util/single-flight.ts';
import { createExecAuthenticator, type ExecAuthenticator, type ExecCredentials } from './exec-credential.ts';
import type { ExecConfig, KubeconfigCredentials } from './kubeconfig.ts';

/** What one request is sent with; handed back to unauthorized() when the server answers 401. */
export interface RequestCredentials {
  readonly agent: Agent;
  readonly authorization: string | undefined;
  /** The exec plugin's credentials used, when a plugin supplied them. */
  readonly exec?: ExecCredentials;
  /** Monotonic ms at which the token file was read, when the token came from one. */
  readonly tokenReadAt?: number;
}

export interface ClientCredentials {
  /** The agent and Authorization header for the next request; rejects when an exec plugin fails. */
  forRequest(): Promise<RequestCredentials>;
  /** The server answered 401 to a request made with `used` and started at `startedAt` (monotonic). */
  unauthorized(used: RequestCredentials, startedAt: number): void;
  /**
   * Reads the certificate/key files and the token file again now. Resolves true when the client
   * certificate changed (new connections use it); never rejects (a bad pair is logged and the old
   * one kept).
   */
  reload(): Promise<boolean>;
  /** Destroys every connection, the old certificates' included; new requests dial anew. */
  closeConnections(): void;
  /** Stops the file checks and destroys every connection. */
  close(): void;
}

export interface ClientCredentialsOptions {
  logger: Logger;
  clock?: Clock;
  /** Default CLIENT_CERT_FILE_CHECK_PERIOD_MS. */
  certCheckPeriodMs?: number;
  /** Default EXEC_PLUGIN_TIMEOUT_MS. */
  execTimeoutMs?: number;
}

/**
 * Exec authenticators by their configuration, shared by every client of the process as client-go's
 * globalCache does: the kubelet's two API clients run the plugin once, not twice.
 */
const execCache = new Map<string, ExecAuthenticator>();

function execAuthenticatorFor(
  config: ExecConfig,
  opts: ClientCredentialsOptions,
  clock: Clock,
): ExecAuthenticator {
  const key = JSON.stringify(config);
  let a = execCache.get(key);
  if (!a) {
    a = createExecAuthenticator(config, {
      logger: opts.logger,
      now: clock.now,
      timeoutMs: opts.execTimeoutMs ?? EXEC_PLUGIN_TIMEOUT_MS,
    });
    execCache.set(key, a);
  }
  return a;
}

interface Identity {
  cert?: Buffer;
  key?: Buffer;
}

const sameBuffer = (a: Buffer | undefined, b: Buffer | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && a.equals(b));

/** Builds the client's credentials from the kubeconfig's; starts the certificate file check. */
export function createClientCredentials(
  creds: KubeconfigCredentials,
  opts: ClientCredentialsOptions,
): ClientCredentials {
  const clock = opts.clock ?? systemClock;
  const log = opts.logger;
  const tlsBase = {
    keepAlive: true,
    maxSockets: 32,
    ...(creds.ca ? { ca: creds.ca } : {}),
    rejectUnauthorized: !creds.insecureSkipTLSVerify,
    ...(creds.tlsServerName ? { servername: creds.tlsServerName } : {}),
  };
  const makeAgent = (id: Identity): Agent =>
    new Agent({ ...tlsBase, ...(id.cert && id.key ? { cert: id.cert, key: id.key } : {}) });

  let identity: Identity = creds.cert && creds.key ? { cert: creds.cert, key: creds.key } : {};
  let agent = makeAgent(identity);
  const retired = new Map<Agent, NodeJS.Timeout>();

  /** New requests go through a new agent; the old one's connections close as they fall idle. */
  function switchIdentity(next: Identity): boolean {
    if (sameBuffer(next.cert, identity.cert) && sameBuffer(next.key, identity.key)) return false;
    const old = agent;
    identity = next;
    agent = makeAgent(next);
    old.keepSocketAlive = () => false;
    for (const sockets of Object.values(old.freeSockets)) for (const s of sockets ?? []) s.destroy();
    const timer = setTimeout(() => {
      retired.delete(old);
      old.destroy();
    }, RETIRED_CONNECTIONS_GRACE_MS);
    timer.unref();
    retired.set(old, timer);
    return true;
  }

  // Certificate and key files: the pair is taken only when both read and the key fits.
  const certFiles =
    creds.certFile && creds.keyFile ? { cert: creds.certFile, key: creds.keyFile } : undefined;
  const certCheck = singleFlight<boolean>();
  let lastCertProblem: string | undefined;
  async function checkCertFiles(): Promise<boolean> {
    if (!certFiles) return false;
    let next: { cert: Buffer; key: Buffer };
    try {
      const [cert, key] = await Promise.all([readFile(certFiles.cert), readFile(certFiles.key)]);
      createSecureContext({ cert, key });
      next = { cert, key };
    } catch (err) {
      // A rotation caught half-written, or the files gone: keep what works, look again next time
      // (said once per distinct problem, not at every check).
      const problem = describeError(err);
      const fields = { certFile: certFiles.cert, keyFile: certFiles.key, err: problem };
      if (problem !== lastCertProblem)
        log.warn('client certificate files unusable; keeping the current certificate', fields);
      else log.debug('client certificate files still unusable', fields);
      lastCertProblem = problem;
      return false;
    }
    lastCertProblem = undefined;
    const changed = switchIdentity(next);
    if (changed) {
      log.info('client certificate rotation detected; new connections use the new certificate', {
        certFile: certFiles.cert,
      });
    }
    return changed;
  }
  const periodicCheck = (): void => {
    certCheck.run(checkCertFiles).catch((err: unknown) => {
      log.error('client certificate file check failed', { err: describeError(err) });
    });
  };
  const certTimer = certFiles
    ? setInterval(periodicCheck, opts.certCheckPeriodMs ?? CLIENT_CERT_FILE_CHECK_PERIOD_MS)
    : undefined;
  certTimer?.unref();

  // Token file (transport.NewCachedFileTokenSource): re-read when older than period − leeway.
  let fileToken: { token: string; readAt: number } | undefined;
  const tokenRead = singleFlight<void>();
  async function readTokenFile(path: string): Promise<void> {
    try {
      const token = (await readFile(path, 'utf8')).trim();
      if (token === '') throw new Error(`read empty token from file ${JSON.stringify(path)}`);
      fileToken = { token, readAt: clock.monotonic() };
    } catch (err) {
      // cachingTokenSource: "Unable to rotate token", and the last good token is used.
      log.error('unable to re-read the token file; using the last token', {
        tokenFile: path,
        err: describeError(err),
      });
    }
  }

  const exec = creds.exec ? execAuthenticatorFor(creds.exec, opts, clock) : undefined;

  return {
    async forRequest() {
      if (exec) {
        const c = await exec.get();
        if (c.cert && c.key) {
          // The first certificate is no rotation (client-go's onRotate skips it too).
          const rotation = identity.cert !== undefined;
          if (switchIdentity({ cert: c.cert, key: c.key }) && rotation) {
            log.info('exec plugin gave a new client certificate; new connections use it');
          }
        }
        return { agent, authorization: c.token ? `Bearer ${c.token}` : undefined, exec: c };
      }
      if (creds.tokenFile) {
        const fresh = TOKEN_FILE_PERIOD_MS - TOKEN_SOURCE_LEEWAY_MS;
        if (!fileToken || clock.monotonic() - fileToken.readAt >= fresh) {
          const path = creds.tokenFile;
          await tokenRead.run(() => readTokenFile(path));
        }
        if (fileToken) {
          return { agent, authorization: `Bearer ${fileToken.token}`, tokenReadAt: fileToken.readAt };
        }
      }
      return { agent, authorization: creds.authorization };
    },
    unauthorized(used, startedAt) {
      if (used.exec) exec?.unauthorized(used.exec);
      // ResetTokenOlderThan(start): a token read during the request is not thrown away.
      if (used.tokenReadAt !== undefined && fileToken && fileToken.readAt < startedAt) fileToken = undefined;
    },
    async reload() {
      fileToken = undefined;
      // A check in flight may have read the files before they changed: this one reads them after.
      await certCheck.idle();
      return certCheck.run(checkCertFiles);
    },
    closeConnections() {
      agent.destroy();
      for (const old of retired.keys()) old.destroy();
    },
    close() {
      if (certTimer) clearInterval(certTimer);
      agent.destroy();
      for (const [old, timer] of retired) {
        clearTimeout(timer);
        old.destroy();
      }
      retired.clear();
    },
  };
}
