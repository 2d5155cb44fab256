/**
 * The kubelet API's serving certificate: the configured `tlsCertFile`/`tlsPrivateKeyFile`, or (as
 * upstream) a self-signed pair kept at `<certDir>/kubelet.crt` / `kubelet.key` (`--cert-dir`, default `<rootDir>/pki`), made once and
 * reused on restart. Node has no X.509 writer, so the pair is made with the `openssl` command
 * (present on every Debian system); an expired pair is replaced.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeletError, describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';

export interface ServingCert {
  cert: Buffer;
  key: Buffer;
  certFile: string;
  keyFile: string;
  selfSigned: boolean;
}

export interface ServingCertOptions {
  /** Where the self-signed pair is kept (`--cert-dir`, default `<rootDir>/pki`). */
  certDir: string;
  nodeName: string;
  /** Node IPs to put in the certificate's SANs (besides the node name). */
  ips: readonly string[];
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  logger: Logger;
  now?: () => number;
}

const run = promisify(execFile);
/** Upstream GenerateSelfSignedCertKey validity. */
const VALIDITY_DAYS = 365;

export async function loadServingCert(opts: ServingCertOptions): Promise<ServingCert> {
  if (opts.tlsCertFile && opts.tlsPrivateKeyFile) {
    const [cert, key] = await Promise.all([
      readOrFail(opts.tlsCertFile, 'tlsCertFile'),
      readOrFail(opts.tlsPrivateKeyFile, 'tlsPrivateKeyFile'),
    ]);
    return { cert, key, certFile: opts.tlsCertFile, keyFile: opts.tlsPrivateKeyFile, selfSigned: false };
  }
  const dir = opts.certDir;
  const certFile = join(dir, 'kubelet.crt');
  const keyFile = join(dir, 'kubelet.key');
  const existing = await readPair(certFile, keyFile);
  const now = (opts.now ?? Date.now)();
  if (existing) {
    const validTo = Date.parse(new X509Certificate(existing.cert).validTo);
    if (validTo > now) return { ...existing, certFile, keyFile, selfSigned: true };
    opts.logger.warn('self-signed serving certificate expired; making a new one', { certFile });
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const cn = `${opts.nodeName}@${Math.floor(now / 1000)}`;
  const sans = [`DNS:${opts.nodeName}`, ...opts.ips.filter((ip) => isIP(ip)).map((ip) => `IP:${ip}`)];
  const tmpCert = `${certFile}.tmp`;
  const tmpKey = `${keyFile}.tmp`;
  try {
    await makeSelfSignedPair({
      keyFile: tmpKey,
      certFile: tmpCert,
      subject: `/CN=${cn}`,
      days: VALIDITY_DAYS,
      extensions: [`subjectAltName=${sans.join(',')}`, 'extendedKeyUsage=serverAuth'],
    });
    await rename(tmpKey, keyFile);
    await rename(tmpCert, certFile);
  } catch (err) {
    await Promise.all([rm(tmpCert, { force: true }), rm(tmpKey, { force: true })]);
    throw new KubeletError(
      'Internal',
      'make self-signed serving certificate',
      `openssl failed (${describeError(err)}); give tlsCertFile/tlsPrivateKeyFile instead`,
      { cause: err },
    );
  }
  opts.logger.info('made a self-signed serving certificate', { certFile, subject: cn, sans });
  const made = await readPair(certFile, keyFile);
  if (!made)
    throw new KubeletError('Internal', 'make self-signed serving certificate', `${certFile} not readable`);
  return { ...made, certFile, keyFile, selfSigned: true };
}

/** `openssl req` arguments for a new unencrypted EC P-256 key (the kind of key the kubelet makes). */
export const NEW_EC_KEY: readonly string[] = [
  '-newkey',
  'ec',
  '-pkeyopt',
  'ec_paramgen_curve:prime256v1',
  '-nodes',
];

/**
 * A self-signed certificate and its unencrypted EC P-256 key (`openssl req -x509`), written to
 * `certFile` and `keyFile`; `extensions` are `-addext` values. Rejects with openssl's error.
 */
export async function makeSelfSignedPair(opts: {
  keyFile: string;
  certFile: string;
  /** The subject, as openssl takes it: `/CN=…/O=…`. */
  subject: string;
  days: number;
  extensions?: readonly string[];
}): Promise<void> {
  await run(
    'openssl',
    [
      'req',
      '-x509',
      ...NEW_EC_KEY,
      '-keyout',
      opts.keyFile,
      '-out',
      opts.certFile,
      '-days',
      String(opts.days),
      '-subj',
      opts.subject,
      ...(opts.extensions ?? []).flatMap((e) => ['-addext', e]),
    ],
    { timeout: 30_000 },
  );
}

async function readOrFail(file: string, field: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    throw new KubeletError('InvalidArgument', `read ${field}`, `${file}: ${describeError(err)}`, {
      cause: err,
    });
  }
}

async function readPair(
  certFile: string,
  keyFile: string,
): Promise<{ cert: Buffer; key: Buffer } | undefined> {
  try {
    const [cert, key] = await Promise.all([readFile(certFile), readFile(keyFile)]);
    return { cert, key };
  } catch {
    // Missing or unreadable: the caller makes a new pair.
    return undefined;
  }
}
