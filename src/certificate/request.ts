/**
 * The CertificateSigningRequest API (upstream client-go util/certificate/csr: RequestCertificate,
 * WaitForCertificate, ensureCompatible), certificates.k8s.io/v1 only: the API servers tskubelet
 * joins (1.19+) all serve it. Waiting polls the object (upstream watches it): a request is
 * answered within seconds by the approver and the signer, and one GET a second is nothing.
 */
import { X509Certificate, type KeyObject } from 'node:crypto';
import { ApiError, type ApiClient } from '../api/client-types.ts';
import { sleep } from '../util/abort.ts';
import { KubeletError, describeError, isCanceled } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { publicKeyDer } from './csr.ts';
import { pemBlocks } from './store.ts';

export const CSR_PATH = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

/** certificates.k8s.io/v1 signer names (upstream KubeAPIServerClientKubeletSignerName, KubeletServingSignerName). */
export const CLIENT_KUBELET_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';

/** The usages a 1.20 kubelet asks for (bootstrap.go requestNodeCertificate; kubelet-serving: server auth). */
export const CLIENT_USAGES: readonly string[] = ['digital signature', 'key encipherment', 'client auth'];
export const SERVING_USAGES: readonly string[] = ['digital signature', 'key encipherment', 'server auth'];

interface CsrCondition {
  type?: string;
  reason?: string;
  message?: string;
}

/** The parts of a CertificateSigningRequest read here. */
export interface CsrObject {
  metadata?: { name?: string; uid?: string };
  spec?: { request?: string; signerName?: string; usages?: string[] };
  status?: { conditions?: CsrCondition[]; certificate?: string };
}

export interface CertificateRequest {
  /** PEM `CERTIFICATE REQUEST`. */
  csrPem: string;
  /** A fixed name (bootstrap's digestedName) or undefined for `generateName: csr-`. */
  name?: string;
  signerName: string;
  usages: readonly string[];
  /** The request's key: an existing object of the same name must be for it. */
  key: KeyObject;
  signal?: AbortSignal;
  now?: () => number;
  logger: Logger;
}

/**
 * Creates the CSR object and returns its name and UID. When `name` is taken (a restart while the
 * request was pending), the existing object is reused if it is for the same key and signer and
 * its certificate (if issued) has not expired (upstream ensureCompatible); otherwise rejects.
 * API errors are passed on as they came (the caller decides whether to retry).
 */
export async function requestCertificate(
  api: ApiClient,
  req: CertificateRequest,
): Promise<{ name: string; uid: string }> {
  const body = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: req.name ? { name: req.name } : { generateName: 'csr-' },
    spec: {
      request: Buffer.from(req.csrPem).toString('base64'),
      signerName: req.signerName,
      usages: [...req.usages],
    },
  };
  try {
    const created = await api.request<CsrObject>({
      method: 'POST',
      path: CSR_PATH,
      body,
      ...(req.signal ? { signal: req.signal } : {}),
    });
    return identity(created, 'created');
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 409 && req.name)) throw err;
  }
  req.logger.info('csr for this node already exists, reusing', { csr: req.name });
  const existing = await api.request<CsrObject>({
    method: 'GET',
    path: `${CSR_PATH}/${req.name}`,
    ...(req.signal ? { signal: req.signal } : {}),
  });
  const why = incompatibility(existing, req);
  if (why) {
    throw new KubeletError(
      'FailedPrecondition',
      `reuse certificate signing request ${req.name}`,
      `retrieved csr is not compatible: ${why}`,
    );
  }
  return identity(existing, 'found');
}

function identity(o: CsrObject, what: string): { name: string; uid: string } {
  const name = o.metadata?.name;
  const uid = o.metadata?.uid;
  if (!name || !uid) {
    throw new KubeletError(
      'Internal',
      'request certificate',
      `the ${what} CertificateSigningRequest has no name or uid`,
    );
  }
  return { name, uid };
}

/** Why an existing CSR object cannot be taken for ours, or undefined when it can. */
function incompatibility(o: CsrObject, req: CertificateRequest): string | undefined {
  if (o.spec?.signerName && o.spec.signerName !== req.signerName) {
    return `csr signerNames differ: new ${JSON.stringify(o.spec.signerName)}, orig: ${JSON.stringify(req.signerName)}`;
  }
  // The request embeds its SubjectPublicKeyInfo: the same key, byte for byte, or not ours.
  const pem = Buffer.from(o.spec?.request ?? '', 'base64').toString('utf8');
  const der = pemBlocks(pem).find((b) => b.type === 'CERTIFICATE REQUEST');
  const body = der ? Buffer.from(der.pem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64') : Buffer.alloc(0);
  if (body.indexOf(publicKeyDer(req.key)) < 0) return 'the request is for another key';
  const issued = o.status?.certificate;
  if (issued) {
    const now = (req.now ?? Date.now)();
    for (const b of pemBlocks(Buffer.from(issued, 'base64').toString('utf8'))) {
      if (b.type !== 'CERTIFICATE') continue;
      const notAfter = new X509Certificate(b.pem).validToDate;
      if (notAfter.getTime() < now)
        return `one of the certificates for the CSR has expired: ${notAfter.toISOString()}`;
    }
  }
  return undefined;
}

export interface WaitOptions {
  signal?: AbortSignal;
  /** Upstream: 3600 s for bootstrap, 15 min (certificateWaitTimeout) for rotation. */
  timeoutMs: number;
  /** Between two reads of the object. Default 1 s. */
  pollMs?: number;
  logger: Logger;
}

/**
 * Waits until the CSR `name` is approved and issued and returns the certificate (PEM). Rejects
 * with a FailedPrecondition KubeletError when it is denied or failed (upstream's messages), or
 * deleted or replaced (another UID); DeadlineExceeded after `timeoutMs`; Canceled on `signal`.
 * Errors reading the object (the API server restarting) are logged and the wait goes on.
 */
export async function waitForCertificate(
  api: ApiClient,
  name: string,
  uid: string,
  opts: WaitOptions,
): Promise<string> {
  const op = `wait for certificate signing request ${name}`;
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  const pollMs = opts.pollMs ?? 1000;
  let approvedLogged = false;
  for (;;) {
    let o: CsrObject | undefined;
    try {
      o = await api.request<CsrObject>({ method: 'GET', path: `${CSR_PATH}/${name}`, signal });
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        throw new KubeletError('FailedPrecondition', op, `csr ${JSON.stringify(name)} was deleted`, {
          cause: err,
        });
      }
      if (!signal.aborted) {
        opts.logger.info('reading the certificate signing request failed; retrying', {
          csr: name,
          err: describeError(err),
        });
      }
    }
    if (o) {
      if (o.metadata?.uid !== uid)
        throw new KubeletError('FailedPrecondition', op, `csr ${JSON.stringify(name)} changed UIDs`);
      let approved = false;
      for (const c of o.status?.conditions ?? []) {
        if (c.type === 'Denied') {
          throw new KubeletError(
            'FailedPrecondition',
            op,
            `certificate signing request is denied, reason: ${c.reason ?? ''}, message: ${c.message ?? ''}`,
          );
        }
        if (c.type === 'Failed') {
          throw new KubeletError(
            'FailedPrecondition',
            op,
            `certificate signing request failed, reason: ${c.reason ?? ''}, message: ${c.message ?? ''}`,
          );
        }
        if (c.type === 'Approved') approved = true;
      }
      if (approved && o.status?.certificate) {
        opts.logger.info('certificate signing request is issued', { csr: name });
        return Buffer.from(o.status.certificate, 'base64').toString('utf8');
      }
      if (approved && !approvedLogged) {
        approvedLogged = true;
        opts.logger.info('certificate signing request is approved, waiting to be issued', { csr: name });
      }
    }
    try {
      await sleep(pollMs, signal);
    } catch (err) {
      if (deadline.aborted && !opts.signal?.aborted) {
        const s = Math.round(opts.timeoutMs / 1000);
        throw new KubeletError(
          'DeadlineExceeded',
          op,
          `not issued within ${s} s (timed out waiting for the condition)`,
        );
      }
      throw isCanceled(err) ? err : new KubeletError('Canceled', op, 'aborted', { cause: err });
    }
  }
}
