/**
 * TLS bootstrap (upstream pkg/kubelet/certificate/bootstrap/bootstrap.go LoadClientCert): when
 * the kubeconfig does not exist or its client certificate is unusable, the bootstrap kubeconfig's
 * credentials (a bootstrap token) ask the API server for a node client certificate through a
 * CertificateSigningRequest, and a kubeconfig pointing at `<cert-dir>/kubelet-client-current.pem`
 * is written. Where it differs: creating the request is retried with back-off while the API
 * server cannot be reached (upstream waits up to a minute for /healthz, tries once, and exits for
 * its service manager to restart it).
 */
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import { ApiError, type ApiClient } from '../api/client-types.ts';
import { createApiClient } from '../api/client.ts';
import { readKubeconfig } from '../api/kubeconfig.ts';
import { sleep } from '../util/abort.ts';
import { backoffSteps } from '../util/backoff.ts';
import { KubeletError, describeError, errnoCode, hasCode } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { digestedName, makeCsrPem, newPrivateKeyPem, parsePrivateKey, type CsrTemplate } from './csr.ts';
import { CLIENT_KUBELET_SIGNER, CLIENT_USAGES, requestCertificate, waitForCertificate } from './request.ts';
import { createFileStore, parsePair, pemBlocks, type CertificatePair } from './store.ts';

/** Upstream tmpPrivateKeyFile: the key kept across restarts until its request is issued. */
export const TMP_PRIVATE_KEY_FILE = 'kubelet-client.key.tmp';
/** Upstream requestNodeCertificate's wait for the issued certificate. */
export const BOOTSTRAP_WAIT_TIMEOUT_MS = 3600_000;
/** Retries of the request while the API server is unreachable: 2 s doubling to 32 s (upstream rotation's back-off). */
const RETRY_INITIAL_MS = 2000;
const RETRY_MAX_MS = 32_000;

export interface BootstrapOptions {
  /** --kubeconfig: read when it exists, written when bootstrapping. */
  kubeconfigPath: string;
  /** --bootstrap-kubeconfig. */
  bootstrapKubeconfigPath: string;
  /** --cert-dir. */
  certDir: string;
  nodeName: string;
  logger: Logger;
  /** Ends the wait (kubelet shutdown). */
  signal?: AbortSignal;
  /** An API client for a kubeconfig (default: createApiClient at client-go's 5 QPS / burst 10). */
  connect?: (kubeconfig: string) => Promise<ApiClient>;
  now?: () => number;
  /** Test knobs: retry back-off, the wait for issue and its poll period. */
  retryInitialMs?: number;
  retryMaxMs?: number;
  waitTimeoutMs?: number;
  pollMs?: number;
}

export type BootstrapResult =
  { bootstrapped: false; reason: string } | { bootstrapped: true; pair: CertificatePair; csr: string };

/** The subject every node client certificate has (upstream requestNodeCertificate). */
export function nodeClientTemplate(nodeName: string): CsrTemplate {
  return { commonName: `system:node:${nodeName}`, organization: ['system:nodes'] };
}

/**
 * Why the kubeconfig's client certificate cannot be used (missing file, no certificate, expired),
 * or undefined when it can (upstream isClientConfigStillValid).
 */
export async function kubeconfigProblem(path: string, now: number): Promise<string | undefined> {
  try {
    await stat(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return 'the kubeconfig does not exist';
    throw new KubeletError('InvalidArgument', `read kubeconfig ${path}`, describeError(err), { cause: err });
  }
  let cert: Buffer | undefined;
  let key: Buffer | undefined;
  try {
    ({ cert, key } = await readKubeconfig(path));
  } catch (err) {
    return `unable to read existing kubeconfig: ${describeError(err)}`;
  }
  // The pair must load, as upstream's transport.TLSConfigFor checks: a corrupt key is a bootstrap too.
  if (cert && key) {
    try {
      parsePair(cert.toString('utf8'), key.toString('utf8'), path);
    } catch (err) {
      return describeError(err);
    }
  }
  const certs = pemBlocks(cert?.toString('utf8') ?? '').filter((b) => b.type === 'CERTIFICATE');
  if (certs.length === 0) return 'the kubeconfig has no client certificate';
  for (const b of certs) {
    let notAfter: Date;
    try {
      notAfter = new X509Certificate(b.pem).validToDate;
    } catch (err) {
      return `the client certificate does not parse: ${describeError(err)}`;
    }
    if (notAfter.getTime() < now) {
      return `part of the existing client certificate is expired: ${notAfter.toISOString()}`;
    }
  }
  return undefined;
}

/**
 * Makes sure `kubeconfigPath` holds a usable client certificate, bootstrapping one when it does
 * not (see the file comment). Resolves without a request when the kubeconfig is valid. Rejects
 * with a clear KubeletError when the request is denied or failed, the issued certificate is
 * already expired, the bootstrap kubeconfig cannot be read or is refused (401/403), or `signal`
 * aborts; never because the API server is down.
 */
export async function loadClientCert(opts: BootstrapOptions): Promise<BootstrapResult> {
  const log = opts.logger.child({ component: 'tls-bootstrap' });
  const now = opts.now ?? Date.now;
  const problem = await kubeconfigProblem(opts.kubeconfigPath, now());
  if (problem === undefined) {
    log.info('kubeconfig exists and is valid, skipping bootstrap', { path: opts.kubeconfigPath });
    return { bootstrapped: false, reason: 'valid' };
  }
  log.info('using bootstrap kubeconfig to generate TLS client cert, key and kubeconfig file', {
    why: problem,
    bootstrapKubeconfig: opts.bootstrapKubeconfigPath,
  });

  const connect =
    opts.connect ?? ((kubeconfig: string) => createApiClient({ kubeconfig, qps: 5, burst: 10 }));
  let api: ApiClient;
  try {
    api = await connect(opts.bootstrapKubeconfigPath);
  } catch (err) {
    throw new KubeletError(
      'InvalidArgument',
      'TLS bootstrap',
      `unable to load bootstrap kubeconfig: ${describeError(err)}`,
      { cause: err },
    );
  }
  try {
    const store = createFileStore({ prefix: 'kubelet-client', dir: opts.certDir, now, logger: log });
    const keyPem = await bootstrapKey(opts.certDir, store, log);
    const key = parsePrivateKey(keyPem);
    if (!key) throw new KubeletError('Internal', 'TLS bootstrap', 'the new private key does not parse');
    const template = nodeClientTemplate(opts.nodeName);
    const name = digestedName(key, template, CLIENT_USAGES);
    const csrPem = makeCsrPem(key, template);
    const { uid } = await withRetries(
      () =>
        requestCertificate(api, {
          csrPem,
          name,
          signerName: CLIENT_KUBELET_SIGNER,
          usages: CLIENT_USAGES,
          key,
          now,
          logger: log,
          ...(opts.signal ? { signal: opts.signal } : {}),
        }),
      opts,
      log,
    );
    log.info('waiting for client certificate to be issued', { csr: name });
    const certPem = await waitForCertificate(api, name, uid, {
      timeoutMs: opts.waitTimeoutMs ?? BOOTSTRAP_WAIT_TIMEOUT_MS,
      ...(opts.pollMs !== undefined ? { pollMs: opts.pollMs } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      logger: log,
    });
    const expired = pemBlocks(certPem)
      .filter((b) => b.type === 'CERTIFICATE')
      .map((b) => new X509Certificate(b.pem).validToDate)
      .find((d) => d.getTime() < now());
    if (expired) {
      throw new KubeletError(
        'FailedPrecondition',
        'TLS bootstrap',
        `the certificate issued for ${name} has already expired (notAfter ${expired.toISOString()}); check the signer's clock and --cluster-signing-duration`,
      );
    }
    const pair = await store.update(certPem, keyPem);
    await rm(join(opts.certDir, TMP_PRIVATE_KEY_FILE), { force: true }).catch((err: unknown) => {
      log.info('failed cleaning up private key file', {
        path: TMP_PRIVATE_KEY_FILE,
        err: describeError(err),
      });
    });
    await writeKubeconfigFromBootstrapping(
      opts.bootstrapKubeconfigPath,
      opts.kubeconfigPath,
      store.currentPath(),
    );
    log.info('TLS bootstrap done: wrote the kubeconfig', {
      kubeconfig: opts.kubeconfigPath,
      certificate: store.currentPath(),
      notAfter: new Date(pair.notAfter).toISOString(),
    });
    return { bootstrapped: true, pair, csr: name };
  } finally {
    api.close();
  }
}

/**
 * The key to request with: the stored pair's (upstream reuses it), else the one kept in
 * `kubelet-client.key.tmp` from an earlier attempt, else a new one written there first so a
 * restart while the request is pending asks with the same key (and finds the same CSR name).
 */
async function bootstrapKey(
  certDir: string,
  store: ReturnType<typeof createFileStore>,
  log: Logger,
): Promise<string> {
  const stored = await store.current();
  if (stored.kind === 'pair') return stored.pair.keyPem;
  if (stored.kind === 'invalid') {
    log.warn('the stored client certificate or key is invalid; requesting a new one', {
      file: stored.file,
      reason: stored.reason,
    });
  }
  const tmp = join(certDir, TMP_PRIVATE_KEY_FILE);
  try {
    const pem = await readFile(tmp, 'utf8');
    if (parsePrivateKey(pem)) return pem;
    log.warn('the kept bootstrap private key does not parse; making a new one', { path: tmp });
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') {
      log.warn('the kept bootstrap private key cannot be read; making a new one', {
        path: tmp,
        err: describeError(err),
      });
    }
  }
  const pem = newPrivateKeyPem();
  await mkdir(certDir, { recursive: true, mode: 0o755 });
  await writeFile(`${tmp}.new`, pem, { mode: 0o600 });
  await rename(`${tmp}.new`, tmp);
  return pem;
}

/** True for failures that mean "the API server is not there (yet)": worth waiting out. */
function retryable(err: unknown): boolean {
  if (err instanceof ApiError) return err.status >= 500 || err.status === 429;
  return hasCode(err, 'Unavailable') || hasCode(err, 'DeadlineExceeded');
}

async function withRetries<T>(fn: () => Promise<T>, opts: BootstrapOptions, log: Logger): Promise<T> {
  const steps = backoffSteps({
    initialMs: opts.retryInitialMs ?? RETRY_INITIAL_MS,
    maxMs: opts.retryMaxMs ?? RETRY_MAX_MS,
  });
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (opts.signal?.aborted || !retryable(err)) {
        throw err instanceof KubeletError
          ? new KubeletError(
              err.code,
              'TLS bootstrap',
              `cannot create certificate signing request: ${describeError(err)}`,
              { cause: err },
            )
          : err;
      }
      // Jittered by up to 10% (upstream wait.Backoff Jitter 0.1), so a fleet restarting together spreads.
      const delay = Math.round(steps.step() * (1 + Math.random() * 0.1));
      log.warn('failed to connect to the API server for TLS bootstrap; retrying', {
        err: describeError(err),
        attempt,
        retryInMs: delay,
      });
      await sleep(delay, opts.signal);
    }
  }
}

/**
 * Writes the kubeconfig the kubelet runs with (upstream writeKubeconfigFromBootstrapping): the
 * bootstrap kubeconfig's server and CA (its file when it names one, else its data), and the
 * client certificate and key both at `pemPath`. Mode 0600, replaced in one rename.
 */
export async function writeKubeconfigFromBootstrapping(
  bootstrapPath: string,
  kubeconfigPath: string,
  pemPath: string,
): Promise<void> {
  const ctx = await readKubeconfig(bootstrapPath);
  if (!ctx.server)
    throw new KubeletError(
      'InvalidArgument',
      `load kubeconfig ${bootstrapPath}`,
      'the bootstrap kubeconfig names no server',
    );
  const caFile = await clusterCAFile(bootstrapPath);
  const cluster: Record<string, unknown> = { server: ctx.server };
  if (ctx.insecureSkipTLSVerify) cluster['insecure-skip-tls-verify'] = true;
  if (caFile) cluster['certificate-authority'] = caFile;
  else if (ctx.ca) cluster['certificate-authority-data'] = ctx.ca.toString('base64');
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'default-cluster', cluster }],
    users: [{ name: 'default-auth', user: { 'client-certificate': pemPath, 'client-key': pemPath } }],
    contexts: [
      {
        name: 'default-context',
        context: { cluster: 'default-cluster', user: 'default-auth', namespace: 'default' },
      },
    ],
    'current-context': 'default-context',
    preferences: {},
  };
  await mkdir(dirname(kubeconfigPath), { recursive: true });
  const tmp = `${kubeconfigPath}.tmp`;
  await writeFile(tmp, stringify(doc), { mode: 0o600 });
  await rename(tmp, kubeconfigPath);
}

/** The current context's cluster `certificate-authority` file of a kubeconfig, made absolute. */
async function clusterCAFile(path: string): Promise<string | undefined> {
  const doc: unknown = parse(await readFile(path, 'utf8'));
  const obj = (v: unknown): Record<string, unknown> | undefined =>
    typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  const root = obj(doc);
  const named = (list: unknown, name: unknown) =>
    Array.isArray(list) ? obj(list.find((e) => obj(e)?.name === name)) : undefined;
  const contexts = root?.contexts;
  const ctxName = root?.['current-context'] ?? (Array.isArray(contexts) ? obj(contexts[0])?.name : undefined);
  const cluster = obj(named(root?.clusters, obj(named(contexts, ctxName)?.context)?.cluster)?.cluster);
  const file = cluster?.['certificate-authority'];
  if (typeof file !== 'string' || file === '' || cluster?.['certificate-authority-data']) return undefined;
  return isAbsolute(file) ? file : resolve(dirname(path), file);
}

/**
 * True when the kubeconfig's user takes its client certificate from `<certDir>/kubelet-client-current.pem`
 * (as a bootstrapped or kubeadm-written kubeconfig does), so a rotation reaches the API client.
 */
export async function kubeconfigUsesStore(kubeconfigPath: string, certDir: string): Promise<boolean> {
  let doc: unknown;
  try {
    doc = parse(await readFile(kubeconfigPath, 'utf8'));
  } catch {
    // Unreadable here means the API client failed on it already; nothing to say about rotation.
    return false;
  }
  const want = resolve(certDir, 'kubelet-client-current.pem');
  const users = typeof doc === 'object' && doc !== null && 'users' in doc ? doc.users : undefined;
  if (!Array.isArray(users)) return false;
  return users.some((u: unknown) => {
    const user = typeof u === 'object' && u !== null && 'user' in u ? u.user : undefined;
    const file =
      typeof user === 'object' && user !== null && 'client-certificate' in user
        ? user['client-certificate']
        : undefined;
    return typeof file === 'string' && resolve(dirname(kubeconfigPath), file) === want;
  });
}
