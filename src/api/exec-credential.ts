/**
 * Exec credential plugins (upstream client-go plugin/pkg/client/auth/exec/exec.go, the
 * client.authentication.k8s.io ExecCredential API, v1beta1 and v1): the kubeconfig's command is
 * run with KUBERNETES_EXEC_INFO describing the request, and its ExecCredential on stdout gives a
 * bearer token or a client certificate and key. The result is kept until its
 * expirationTimestamp (for ever without one); a 401 from the API server with these credentials
 * runs the plugin again, once however many requests saw it.
 *
 * Where we differ from client-go, on purpose: the plugin runs under a deadline (client-go waits
 * for ever) and its stderr is captured and put in the error instead of passed to our stderr (it
 * is logged on success); the kubelet never hands its stdin to a plugin, so `interactive` is always
 * false and `interactiveMode: Always` is an error, as client-go says when stdin is no terminal.
 */
import { createSecureContext } from 'node:tls';
import { parse } from 'yaml';
import { runCommand, type CommandResult, type RunOptions } from '../util/child-process.ts';
import { KubeletError, describeError, errnoCode } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { singleFlight } from '../util/single-flight.ts';
import type { ExecConfig } from './kubeconfig.ts';

/** What one run of the plugin gave. Compared by identity: a new run is a new object. */
export interface ExecCredentials {
  readonly token?: string;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  /** Wall-clock ms of expirationTimestamp; undefined when the plugin gave none. */
  readonly expiresAtMs?: number;
}

export interface ExecAuthenticator {
  /**
   * The cached credentials while they have not expired, else the plugin's new ones. Rejects with an
   * Unauthenticated KubeletError saying why the plugin gave none (not found, failed with its
   * stderr, timed out, wrong output).
   */
  get(): Promise<ExecCredentials>;
  /**
   * The API server answered 401 to a request made with `used`: runs the plugin again unless it ran
   * since `used` was handed out. A failed run is logged and the old credentials stay (client-go's
   * maybeRefreshCreds); get() waits for a run in flight.
   */
  unauthorized(used: ExecCredentials): void;
}

export interface ExecAuthenticatorDeps {
  logger: Logger;
  /** Wall clock (expirationTimestamp is a wall time). */
  now: () => number;
  timeoutMs: number;
  /** Replaced in tests; runCommand by default. */
  run?: (file: string, args: readonly string[], opts: RunOptions) => Promise<CommandResult>;
}

const EXEC_INFO_ENV = 'KUBERNETES_EXEC_INFO';
/** client-go's installHintVerboseHelp, shown when the plugin is not installed. */
const INSTALL_HINT_HELP =
  'It looks like you are trying to use a client-go credential plugin that is not installed.\n\n' +
  'To learn more about this feature, consult the documentation available at:\n' +
  '      https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins';
/** The end of the plugin's stderr kept in an error message. */
const STDERR_IN_ERROR_CHARS = 2048;

type Fields = Record<string, unknown>;

function isFields(v: unknown): v is Fields {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The ExecCredential handed to the plugin in KUBERNETES_EXEC_INFO. */
export function execInfo(config: ExecConfig): string {
  const spec: Fields = { interactive: false };
  if (config.provideClusterInfo && config.cluster) spec.cluster = config.cluster;
  return JSON.stringify({ kind: 'ExecCredential', apiVersion: config.apiVersion, spec });
}

/** Checks the plugin's stdout as client-go's refreshCredsLocked does; throws the message. */
export function parseExecOutput(config: ExecConfig, stdout: string): ExecCredentials {
  let doc: unknown;
  try {
    doc = parse(stdout);
  } catch (err) {
    throw new Error(`decoding stdout: ${describeError(err)}`, { cause: err });
  }
  if (!isFields(doc)) throw new Error('decoding stdout: not an ExecCredential object');
  if (doc.kind !== 'ExecCredential') {
    throw new Error(`decoding stdout: kind ${JSON.stringify(doc.kind ?? '')} is not ExecCredential`);
  }
  if (doc.apiVersion !== config.apiVersion) {
    throw new Error(
      `exec plugin is configured to use API version ${config.apiVersion}, plugin returned version ${typeof doc.apiVersion === 'string' ? doc.apiVersion : ''}`,
    );
  }
  const status = doc.status;
  if (!isFields(status)) throw new Error("exec plugin didn't return a status field");
  const field = (k: string): string => (typeof status[k] === 'string' ? status[k] : '');
  const token = field('token');
  const certPem = field('clientCertificateData');
  const keyPem = field('clientKeyData');
  if (token === '' && certPem === '' && keyPem === '') {
    throw new Error("exec plugin didn't return a token or cert/key pair");
  }
  if ((certPem === '') !== (keyPem === '')) {
    throw new Error('exec plugin returned only certificate or key, not both');
  }
  const out: { -readonly [K in keyof ExecCredentials]: ExecCredentials[K] } = {};
  if (token !== '') out.token = token;
  const exp = status.expirationTimestamp;
  if (exp !== undefined && exp !== null) {
    const ms = typeof exp === 'string' ? Date.parse(exp) : NaN;
    if (Number.isNaN(ms)) throw new Error(`decoding stdout: bad expirationTimestamp ${JSON.stringify(exp)}`);
    out.expiresAtMs = ms;
  }
  if (certPem !== '') {
    const cert = Buffer.from(certPem);
    const key = Buffer.from(keyPem);
    try {
      // Parses both and checks that the key is the certificate's, as tls.X509KeyPair does.
      createSecureContext({ cert, key });
    } catch (err) {
      throw new Error(`failed parsing client key/certificate: ${describeError(err)}`, { cause: err });
    }
    out.cert = cert;
    out.key = key;
  }
  return out;
}

function stderrSuffix(stderr: string): string {
  const t = stderr.trim();
  return t === ''
    ? ''
    : `; stderr: ${t.length > STDERR_IN_ERROR_CHARS ? `…${t.slice(-STDERR_IN_ERROR_CHARS)}` : t}`;
}

/** Runs `config`'s plugin; see ExecAuthenticator. Nothing runs until the first get(). */
export function createExecAuthenticator(config: ExecConfig, deps: ExecAuthenticatorDeps): ExecAuthenticator {
  const run = deps.run ?? runCommand;
  const log = deps.logger.child({ execPlugin: config.command });
  const op = 'getting credentials';
  let cached: ExecCredentials | undefined;
  const flight = singleFlight<ExecCredentials>();

  const fail = (msg: string, cause?: unknown): never => {
    throw new KubeletError('Unauthenticated', op, msg, cause === undefined ? undefined : { cause });
  };

  async function runPlugin(): Promise<ExecCredentials> {
    if (config.interactiveMode === 'Always') {
      // The kubelet's plugins never get its stdin (client-go: stdin is not a terminal).
      return fail('exec plugin cannot support interactive mode: standard input is not a terminal');
    }
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const e of config.env) env[e.name] = e.value;
    env[EXEC_INFO_ENV] = execInfo(config);
    let res: CommandResult;
    try {
      res = await run(config.command, config.args, { timeoutMs: deps.timeoutMs, env });
    } catch (err) {
      const code = errnoCode(err instanceof Error ? err.cause : undefined);
      if (code === 'ENOENT') {
        const hint = config.installHint ? `\n\n${config.installHint}` : '';
        return fail(`exec: executable ${config.command} not found\n\n${INSTALL_HINT_HELP}${hint}`, err);
      }
      return fail(`exec: ${describeError(err)}`, err);
    }
    if (res.timedOut) {
      return fail(
        `exec: executable ${config.command} did not finish within ${deps.timeoutMs / 1000}s${stderrSuffix(res.stderr)}`,
      );
    }
    if (res.code !== 0) {
      const how =
        res.code === null ? `was killed by ${res.signal ?? 'a signal'}` : `failed with exit code ${res.code}`;
      return fail(`exec: executable ${config.command} ${how}${stderrSuffix(res.stderr)}`);
    }
    // client-go passes the plugin's stderr through; ours goes to the log.
    if (res.stderr.trim() !== '')
      log.info('exec credential plugin wrote to stderr', { stderr: res.stderr.trim() });
    let creds: ExecCredentials;
    try {
      creds = parseExecOutput(config, res.stdout);
    } catch (err) {
      return fail(describeError(err), err);
    }
    log.debug('exec credential plugin gave credentials', {
      token: creds.token !== undefined,
      clientCertificate: creds.cert !== undefined,
      ...(creds.expiresAtMs !== undefined ? { expires: new Date(creds.expiresAtMs).toISOString() } : {}),
    });
    cached = creds;
    return creds;
  }

  // client-go's credsExpired: usable up to the expiry itself, no leeway.
  const expired = (c: ExecCredentials): boolean => c.expiresAtMs !== undefined && deps.now() > c.expiresAtMs;

  return {
    async get() {
      await flight.idle();
      if (cached && !expired(cached)) return cached;
      return flight.run(runPlugin);
    },
    unauthorized(used) {
      if (used !== cached || flight.busy) return;
      flight.run(runPlugin).catch((err: unknown) => {
        // client-go logs it too and keeps the old credentials; the next 401 tries again.
        log.error('refreshing exec credentials after a 401 failed; keeping the old ones', {
          err: describeError(err),
        });
      });
    },
  };
}
