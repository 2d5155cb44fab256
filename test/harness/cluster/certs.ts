/**
 * The cluster bed's TLS material, made with the openssl CLI: a CA, the apiserver's serving cert,
 * the service-account key pair, and client certs whose subject is the identity Kubernetes
 * authenticates (CN = user, O = groups). Idempotent: an existing cert is kept while it is signed
 * by the current CA, matches its key, carries the wanted subject and SANs, and is not about to expire;
 * otherwise it is made again. A new CA therefore re-issues every leaf on the next start.
 */
import { X509Certificate, createPrivateKey, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { run } from '../exec.ts';

const VALID_DAYS = 3650;
/** Re-issue a cert that expires within this long, so a test never meets an expiry mid-run. */
const RENEW_BEFORE_MS = 7 * 24 * 3600 * 1000;

export interface KeyPair {
  cert: string;
  key: string;
}

export interface CertSpec {
  /** File stem: `<dir>/<name>.crt` and `<dir>/<name>.key`. */
  name: string;
  commonName: string;
  /** Subject O entries: Kubernetes maps them to groups. */
  organizations?: readonly string[];
  /** `server` needs SANs; `client` certs identify a user. */
  usage: 'client' | 'server';
  dnsNames?: readonly string[];
  ipAddresses?: readonly string[];
}

function pairIn(dir: string, name: string): KeyPair {
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** `O=a\nCN=b` (node's format) → sorted `key=value` entries, to compare subjects regardless of order. */
function subjectEntries(subject: string): string[] {
  return subject
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .sort();
}

function wantedSubject(spec: CertSpec): string[] {
  return [...(spec.organizations ?? []).map((o) => `O=${o}`), `CN=${spec.commonName}`].sort();
}

function wantedSans(spec: CertSpec): string[] {
  return [
    ...(spec.dnsNames ?? []).map((d) => `DNS:${d}`),
    ...(spec.ipAddresses ?? []).map((ip) => `IP Address:${ip}`),
  ].sort();
}

function sansOf(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .sort();
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Why the existing pair cannot be kept, or undefined when it can. */
async function staleReason(
  pair: KeyPair,
  ca: X509Certificate | undefined,
  spec?: CertSpec,
): Promise<string | undefined> {
  const [certPem, keyPem] = await Promise.all([readOptional(pair.cert), readOptional(pair.key)]);
  if (certPem === undefined || keyPem === undefined) return 'missing';
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) return 'key does not match certificate';
  } catch (err) {
    return `unreadable: ${describeError(err)}`;
  }
  if (Date.parse(cert.validTo) - Date.now() < RENEW_BEFORE_MS) return `expires ${cert.validTo}`;
  if (ca !== undefined && (!cert.checkIssued(ca) || !cert.verify(ca.publicKey)))
    return 'not signed by the CA';
  if (spec !== undefined) {
    if (!sameList(subjectEntries(cert.subject), wantedSubject(spec))) return `subject ${cert.subject}`;
    if (!sameList(sansOf(cert), wantedSans(spec))) return `SANs ${cert.subjectAltName ?? 'none'}`;
  }
  return undefined;
}

/** Escapes a value for openssl's `-subj /K=V/...` syntax. */
function subjValue(v: string): string {
  return v.replace(/[\\/=+,]/g, (c) => `\\${c}`);
}

function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f; // a positive serial
  return `0x${bytes.toString('hex')}`;
}

async function genKey(path: string): Promise<void> {
  await run('openssl', ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', path]);
}

/** Runs `fn` with a scratch directory inside `dir` (same filesystem: its files can be renamed into place). */
async function withScratch<T>(dir: string, fn: (scratch: string) => Promise<T>): Promise<T> {
  const scratch = await mkdtemp(join(dir, '.tmp-'));
  try {
    return await fn(scratch);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** A CA (`<name>.crt`, `<name>.key` in `dir`, subject CN=`commonName`); made when missing or unusable. */
export async function ensureCa(
  dir: string,
  name: string,
  commonName: string,
  logger: Logger,
): Promise<KeyPair & { created: boolean }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const pair = pairIn(dir, name);
  const reason = await staleReason(pair, undefined);
  if (reason === undefined) return { ...pair, created: false };
  logger.info('creating a cluster bed CA', { dir, name, reason });
  await withScratch(dir, async (scratch) => {
    const cnf = join(scratch, 'ca.cnf');
    await writeFile(
      cnf,
      [
        '[req]',
        'distinguished_name = dn',
        '[dn]',
        '[v3_ca]',
        'basicConstraints = critical, CA:TRUE',
        'keyUsage = critical, keyCertSign, cRLSign, digitalSignature',
        'subjectKeyIdentifier = hash',
        '',
      ].join('\n'),
    );
    const key = join(scratch, 'ca.key');
    const crt = join(scratch, 'ca.crt');
    await genKey(key);
    await run('openssl', [
      'req',
      '-x509',
      '-new',
      '-key',
      key,
      '-subj',
      `/CN=${subjValue(commonName)}`,
      '-days',
      String(VALID_DAYS),
      '-sha256',
      '-config',
      cnf,
      '-extensions',
      'v3_ca',
      '-set_serial',
      serial(),
      '-out',
      crt,
    ]);
    await rename(key, pair.key);
    await rename(crt, pair.cert);
  });
  return { ...pair, created: true };
}

async function loadCa(ca: KeyPair): Promise<X509Certificate> {
  try {
    return new X509Certificate(await readFile(ca.cert));
  } catch (err) {
    throw new KubeletError('Internal', 'load cluster bed CA', `cannot read ${ca.cert}`, { cause: err });
  }
}

/**
 * A key and a certificate signed by `ca`, at `<dir>/<spec.name>.{crt,key}`; kept when still right.
 * Returns the paths and whether it was (re)issued.
 */
export async function ensureCert(
  ca: KeyPair,
  dir: string,
  spec: CertSpec,
  logger: Logger,
): Promise<KeyPair & { created: boolean }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const pair = pairIn(dir, spec.name);
  const reason = await staleReason(pair, await loadCa(ca), spec);
  if (reason === undefined) return { ...pair, created: false };
  logger.info('issuing cluster bed certificate', { name: spec.name, commonName: spec.commonName, reason });
  await withScratch(dir, async (scratch) => {
    const ext = join(scratch, 'ext.cnf');
    const sans = [
      ...(spec.dnsNames ?? []).map((d) => `DNS:${d}`),
      ...(spec.ipAddresses ?? []).map((ip) => `IP:${ip}`),
    ];
    await writeFile(
      ext,
      [
        'basicConstraints = critical, CA:FALSE',
        'keyUsage = critical, digitalSignature, keyEncipherment',
        `extendedKeyUsage = ${spec.usage === 'server' ? 'serverAuth' : 'clientAuth'}`,
        'authorityKeyIdentifier = keyid',
        ...(sans.length > 0 ? [`subjectAltName = ${sans.join(', ')}`] : []),
        '',
      ].join('\n'),
    );
    const key = join(scratch, 'leaf.key');
    const csr = join(scratch, 'leaf.csr');
    const crt = join(scratch, 'leaf.crt');
    const subj =
      (spec.organizations ?? []).map((o) => `/O=${subjValue(o)}`).join('') +
      `/CN=${subjValue(spec.commonName)}`;
    await genKey(key);
    await run('openssl', ['req', '-new', '-key', key, '-subj', subj, '-out', csr]);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      ca.cert,
      '-CAkey',
      ca.key,
      '-set_serial',
      serial(),
      '-days',
      String(VALID_DAYS),
      '-sha256',
      '-extfile',
      ext,
      '-out',
      crt,
    ]);
    await rename(key, pair.key);
    await rename(crt, pair.cert);
  });
  return { ...pair, created: true };
}

/**
 * The service-account key pair (`sa.key` private, `sa.pub` public): the apiserver signs and
 * verifies tokens with it, the controller-manager's token controller signs with the private half.
 */
export async function ensureServiceAccountKey(
  dir: string,
  logger: Logger,
): Promise<{ key: string; pub: string; created: boolean }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const key = join(dir, 'sa.key');
  const pub = join(dir, 'sa.pub');
  let created = false;
  let keyPem = await readOptional(key);
  if (keyPem !== undefined) {
    try {
      createPrivateKey(keyPem);
    } catch (err) {
      logger.warn('service-account key unreadable; making a new one', { path: key, err: describeError(err) });
      keyPem = undefined;
    }
  }
  if (keyPem === undefined) {
    logger.info('creating the service-account key pair', { path: key });
    await withScratch(dir, async (scratch) => {
      const tmp = join(scratch, 'sa.key');
      await genKey(tmp);
      await rename(tmp, key);
    });
    await rm(pub, { force: true });
    created = true;
  }
  if ((await readOptional(pub)) === undefined) {
    created = true;
    await withScratch(dir, async (scratch) => {
      const tmp = join(scratch, 'sa.pub');
      await run('openssl', ['pkey', '-in', key, '-pubout', '-out', tmp]);
      await rename(tmp, pub);
    });
  }
  return { key, pub, created };
}
