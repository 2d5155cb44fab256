/**
 * The certificate manager (upstream client-go util/certificate/certificate_manager.go manager, as
 * pkg/kubelet/certificate uses it for the client and the serving certificate): holds the pair in
 * use, and from `start()` renews it at a jittered 70–90 % of its lifetime through a new key and a
 * new CertificateSigningRequest made with the current identity. The old pair stays in use until
 * the new one is issued and stored; then the store's current symlink is swapped and `onRotated`
 * listeners are told (the API client reloads its files, the kubelet API takes the new context).
 */
import { isIP } from 'node:net';
import type { ApiClient } from '../api/client-types.ts';
import { sleep } from '../util/abort.ts';
import { describeError, isCanceled } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { ipBytes, makeCsrPem, newPrivateKeyPem, parsePrivateKey, type CsrTemplate } from './csr.ts';
import { requestCertificate, waitForCertificate } from './request.ts';
import type { CertificatePair, FileStore } from './store.ts';

/** Upstream certificateWaitTimeout: how long one rotation waits for its request to be issued. */
export const CERTIFICATE_WAIT_TIMEOUT_MS = 15 * 60_000;
/** Upstream Start's back-off: 2 s doubling, 5 steps, then every 32 s until it works. */
const ROTATE_RETRY_MS = [2000, 4000, 8000, 16_000];
const ROTATE_RETRY_STEADY_MS = 32_000;
/** The longest single sleep: the deadline (wall time) is looked at again after this. */
const MAX_SLEEP_MS = 10 * 60_000;
/** How often a manager without a template (no node address yet) looks again. */
const TEMPLATE_RECHECK_MS = 5000;
/** How often the serving certificate's addresses are compared with the node's (upstream: 1 s). */
export const SERVING_TEMPLATE_RECHECK_MS = 5000;

/**
 * Owns one certificate of the kubelet. `current()` is cheap and synchronous (TLS code calls it per
 * handshake); nothing runs before `start()`, and `stop()` ends any wait or request in flight.
 */
export interface CertificateManager {
  /** The pair in use; undefined when there is none yet or it has expired (upstream Current). */
  current(): CertificatePair | undefined;
  /** Starts the rotation loop (a no-op when started). */
  start(): void;
  /** Ends the loop; resolves when it has. */
  stop(): Promise<void>;
  /** Called with each newly stored pair; returns the unsubscribe. Listeners must not throw. */
  onRotated(cb: (pair: CertificatePair) => void): () => void;
  /** One rotation now (upstream RotateCerts, for tests): true when a new pair is in use. */
  rotateNow(signal?: AbortSignal): Promise<boolean>;
}

export interface CertificateManagerOptions {
  /** For logs: `kubernetes.io/kube-apiserver-client-kubelet`, `kubernetes.io/kubelet-serving`. */
  name: string;
  store: FileStore;
  api: ApiClient;
  signerName: string;
  usages: readonly string[];
  /** What to ask for; undefined when it cannot be asked yet (a serving certificate without an IP). */
  template: () => CsrTemplate | undefined;
  logger: Logger;
  /** Wall clock (certificate times are wall times). */
  now?: () => number;
  /** [0, 1): the rotation deadline's jitter. */
  random?: () => number;
  /** Renewal failures (kubelet_certificate_manager_client_expiration_renew_errors and the server's). */
  onRenewError?: () => void;
  waitTimeoutMs?: number;
  pollMs?: number;
  /**
   * The template can change (the serving certificate's addresses): while waiting for the deadline,
   * it is compared with the certificate this often (upstream: every second). Default: never.
   */
  templateRecheckMs?: number;
  /** Retry delays after a failed rotation (test knob). */
  retryDelaysMs?: readonly number[];
  retrySteadyMs?: number;
}

/**
 * When a certificate valid from `notBefore` to `notAfter` is renewed: notBefore + (70 % + up to
 * 20 %) of its lifetime (upstream jitteryDuration: wait.Jitter(total, 0.2) − 0.3 × total).
 */
export function rotationDeadline(notBefore: number, notAfter: number, random: number): number {
  const total = notAfter - notBefore;
  return notBefore + total * (0.7 + 0.2 * random);
}

/** The subject attribute `type` of an X509Certificate subject string (`O=a\nCN=b`). */
function subjectValues(subject: string, type: string): string[] {
  return subject
    .split('\n')
    .filter((l) => l.startsWith(`${type}=`))
    .map((l) => l.slice(type.length + 1));
}

/** The SANs of a certificate: DNS names and IPs (as hex bytes, so IPv6 spellings compare). */
function sans(pair: CertificatePair): { dns: Set<string>; ips: Set<string> } {
  const dns = new Set<string>();
  const ips = new Set<string>();
  for (const part of (pair.leaf.subjectAltName ?? '').split(', ')) {
    if (part.startsWith('DNS:')) dns.add(part.slice(4));
    else if (part.startsWith('IP Address:')) {
      const ip = part.slice('IP Address:'.length);
      if (isIP(ip)) ips.add(ipBytes(ip).toString('hex'));
    }
  }
  return { dns, ips };
}

/**
 * Why `pair` does not give what `template` asks (another CN, a missing DNS name, IP or
 * organization), or undefined (upstream certSatisfiesTemplateLocked: extra names are fine).
 */
export function templateMismatch(pair: CertificatePair, template: CsrTemplate): string | undefined {
  const cn = subjectValues(pair.leaf.subject, 'CN')[0];
  if (cn !== template.commonName)
    return `current certificate CN (${cn ?? ''}) does not match requested CN (${template.commonName})`;
  const have = sans(pair);
  const missingDns = (template.dnsNames ?? []).filter((d) => !have.dns.has(d));
  if (missingDns.length > 0)
    return `current certificate is missing requested DNS names ${missingDns.join(', ')}`;
  const missingIps = (template.ips ?? []).filter((ip) => !have.ips.has(ipBytes(ip).toString('hex')));
  if (missingIps.length > 0)
    return `current certificate is missing requested IP addresses ${missingIps.join(', ')}`;
  const orgs = new Set(subjectValues(pair.leaf.subject, 'O'));
  const missingOrgs = template.organization.filter((o) => !orgs.has(o));
  if (missingOrgs.length > 0)
    return `current certificate is missing requested orgs ${missingOrgs.join(', ')}`;
  return undefined;
}

/**
 * A manager for the store's pair. Reads the store once (a missing or invalid pair is logged and
 * makes the first rotation immediate, as upstream's forceRotation).
 */
export async function createCertificateManager(opts: CertificateManagerOptions): Promise<CertificateManager> {
  const log = opts.logger.child({ certificate: opts.name });
  const now = opts.now ?? Date.now;
  const random = opts.random ?? Math.random;
  const listeners = new Set<(pair: CertificatePair) => void>();
  const stored = await opts.store.current();
  let pair: CertificatePair | undefined;
  if (stored.kind === 'pair') pair = stored.pair;
  else if (stored.kind === 'invalid') {
    log.warn('the stored certificate or key is invalid; a new one will be requested', {
      file: stored.file,
      reason: stored.reason,
    });
  } else log.info('no certificate stored yet; one will be requested', { dir: opts.store.currentPath() });
  /** The jitter is drawn once per certificate, so looking at the deadline again does not move it. */
  let jitter: { for: CertificatePair; fraction: number } | undefined;
  let lastExpiredLog = -Infinity;
  let loggedDeadline: number | undefined;
  let loop: { ac: AbortController; done: Promise<void> } | undefined;

  /** The wall time to rotate at; `now()` when there is no usable pair. */
  function nextDeadline(): number {
    if (!pair) return now();
    const template = opts.template();
    const mismatch = template ? templateMismatch(pair, template) : undefined;
    if (mismatch) {
      log.info(`${mismatch}; rotating`);
      return now();
    }
    if (jitter?.for !== pair) jitter = { for: pair, fraction: random() };
    const deadline = rotationDeadline(pair.notBefore, pair.notAfter, jitter.fraction);
    return deadline;
  }

  async function rotate(signal: AbortSignal): Promise<boolean> {
    const template = opts.template();
    if (!template) return false;
    log.info('rotating certificates');
    try {
      const keyPem = newPrivateKeyPem();
      const key = parsePrivateKey(keyPem);
      if (!key) throw new Error('the new private key does not parse');
      const { name, uid } = await requestCertificate(opts.api, {
        csrPem: makeCsrPem(key, template),
        signerName: opts.signerName,
        usages: opts.usages,
        key,
        now,
        logger: log,
        signal,
      });
      const certPem = await waitForCertificate(opts.api, name, uid, {
        timeoutMs: opts.waitTimeoutMs ?? CERTIFICATE_WAIT_TIMEOUT_MS,
        ...(opts.pollMs !== undefined ? { pollMs: opts.pollMs } : {}),
        signal,
        logger: log,
      });
      const next = await opts.store.update(certPem, keyPem);
      const old = pair;
      pair = next;
      log.info('certificate rotated', {
        csr: name,
        notAfter: new Date(next.notAfter).toISOString(),
        ...(old ? { previousNotAfter: new Date(old.notAfter).toISOString() } : {}),
      });
      for (const cb of listeners) {
        try {
          cb(next);
        } catch (err) {
          log.error('a certificate rotation listener failed', { err: describeError(err) });
        }
      }
      return true;
    } catch (err) {
      if (signal.aborted) throw err;
      opts.onRenewError?.();
      log.error('certificate rotation failed; the current certificate stays in use', {
        err: describeError(err),
      });
      return false;
    }
  }

  async function run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const deadline = nextDeadline();
      const wait = deadline - now();
      if (wait > 0) {
        if (deadline !== loggedDeadline) {
          loggedDeadline = deadline;
          log.info('waiting for next certificate rotation', {
            rotationDeadline: new Date(deadline).toISOString(),
            ...(pair ? { notAfter: new Date(pair.notAfter).toISOString() } : {}),
          });
        }
        await sleep(Math.min(wait, MAX_SLEEP_MS, opts.templateRecheckMs ?? Infinity), signal);
        continue;
      }
      if (!opts.template()) {
        await sleep(opts.templateRecheckMs ?? TEMPLATE_RECHECK_MS, signal);
        continue;
      }
      const delays = opts.retryDelaysMs ?? ROTATE_RETRY_MS;
      for (let attempt = 0; !(await rotate(signal)); attempt++) {
        const d = delays[attempt] ?? opts.retrySteadyMs ?? ROTATE_RETRY_STEADY_MS;
        if (attempt === delays.length) {
          log.error('reached backoff limit, still unable to rotate certs; retrying every 32 s');
        }
        await sleep(Math.round(d * (1 + 0.1 * random())), signal);
      }
    }
  }

  return {
    current() {
      if (pair && now() > pair.notAfter) {
        if (now() - lastExpiredLog > 60_000) {
          lastExpiredLog = now();
          log.warn('current certificate is expired', { notAfter: new Date(pair.notAfter).toISOString() });
        }
        return undefined;
      }
      return pair;
    },
    start() {
      if (loop) return;
      const ac = new AbortController();
      log.info('certificate rotation is enabled');
      const done = run(ac.signal).catch((err: unknown) => {
        if (!isCanceled(err) && !ac.signal.aborted) {
          log.error('certificate rotation loop ended', { err: describeError(err) });
        }
      });
      loop = { ac, done };
    },
    async stop() {
      if (!loop) return;
      loop.ac.abort();
      await loop.done;
      loop = undefined;
    },
    onRotated(cb) {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
    rotateNow(signal) {
      return rotate(signal ?? new AbortController().signal);
    },
  };
}
