/**
 * The certificate file store (upstream client-go util/certificate/certificate_store.go fileStore):
 * each issued pair is one dated file `<prefix>-YYYY-MM-DD-HH-MM-SS.pem` (certificates, then the
 * key; mode 0600) in the certificate directory, and `<prefix>-current.pem` is a symlink to the one
 * in use, swapped through `<prefix>-updated.pem` so it never points nowhere. Kubeconfigs and the
 * kubelet API name the symlink, so they follow a rotation by reading the file again.
 */
import { X509Certificate, type KeyObject } from 'node:crypto';
import { lstat, mkdir, open, readFile, rename, rm, stat, symlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { KubeletError, describeError, errnoCode } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { parsePrivateKey } from './csr.ts';

/** A certificate and its key as in use: PEM text for TLS, the parsed leaf for times and names. */
export interface CertificatePair {
  /** The certificate chain, leaf first (PEM). */
  certPem: string;
  keyPem: string;
  leaf: X509Certificate;
  key: KeyObject;
  /** Wall-clock milliseconds. */
  notBefore: number;
  notAfter: number;
  /** The file it was read from (the pair file, or the certificate file). */
  file: string;
}

/** What the store holds: nothing, a pair, or files that do not make one (and why). */
export type StoreContents =
  | { kind: 'none' }
  | { kind: 'pair'; pair: CertificatePair }
  | { kind: 'invalid'; file: string; reason: string };

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n[\s\S]*?-----END \1-----\r?\n?/g;

/** The PEM blocks of `text` by type, in order. */
export function pemBlocks(text: string): { type: string; pem: string }[] {
  return [...text.matchAll(PEM_BLOCK)].map((m) => ({
    type: m[1] ?? '',
    pem: m[0].endsWith('\n') ? m[0] : `${m[0]}\n`,
  }));
}

/**
 * Parses a certificate chain and a key into a pair; throws a KubeletError saying what is wrong
 * (no certificate, no key, a key that is not the certificate's).
 */
export function parsePair(certText: string, keyText: string, file: string): CertificatePair {
  const fail = (msg: string, cause?: unknown): never => {
    throw new KubeletError(
      'InvalidArgument',
      `load certificate ${file}`,
      msg,
      cause === undefined ? undefined : { cause },
    );
  };
  const certs = pemBlocks(certText).filter((b) => b.type === 'CERTIFICATE');
  if (certs.length === 0) return fail('no CERTIFICATE block');
  const keyBlock = pemBlocks(keyText).find((b) => b.type.endsWith('PRIVATE KEY'));
  if (!keyBlock) return fail('no PRIVATE KEY block');
  const key = parsePrivateKey(keyBlock.pem);
  if (!key) return fail('the private key does not parse');
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(certs[0]?.pem ?? '');
  } catch (err) {
    return fail(`the certificate does not parse: ${describeError(err)}`, err);
  }
  if (!leaf.checkPrivateKey(key)) return fail('the private key does not match the certificate');
  return {
    certPem: certs.map((c) => c.pem).join(''),
    keyPem: keyBlock.pem,
    leaf,
    key,
    notBefore: leaf.validFromDate.getTime(),
    notAfter: leaf.validToDate.getTime(),
    file,
  };
}

export interface FileStoreOptions {
  /** `kubelet-client` or `kubelet-server`. */
  prefix: string;
  /** --cert-dir. */
  dir: string;
  /** A certificate and key given by hand (the kubeconfig's or tlsCertFile/tlsPrivateKeyFile), tried second. */
  certFile?: string;
  keyFile?: string;
  /** Wall clock, for the dated file name. */
  now?: () => number;
  logger: Logger;
}

export interface FileStore {
  /** `<dir>/<prefix>-current.pem`, absolute. */
  currentPath(): string;
  /**
   * The pair in use (upstream fileStore.Current): the current symlink's file, else the given
   * certFile/keyFile, else `<prefix>.crt`/`<prefix>.key` in the directory. Never throws: files
   * that are there but do not make a pair are `invalid`, with the reason.
   */
  current(): Promise<StoreContents>;
  /**
   * Writes a new dated pair file (0600) and points the current symlink at it (upstream Update).
   * Rejects when the certificate and key do not make a pair; the symlink is then left alone.
   */
  update(certPem: string, keyPem: string): Promise<CertificatePair>;
}

/** `2006-01-02-15-04-05` in local time, as Go's time.Now().Format in the store. */
function stamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}-${p(d.getHours())}-${p(d.getMinutes())}-${p(d.getSeconds())}`;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return false;
    throw err;
  }
}

export function createFileStore(opts: FileStoreOptions): FileStore {
  const dir = resolve(opts.dir);
  const now = opts.now ?? Date.now;
  const file = (qualifier: string) => join(dir, `${opts.prefix}-${qualifier}.pem`);
  const currentPath = file('current');
  const updatedPath = file('updated');

  async function load(certFile: string, keyFile: string): Promise<StoreContents> {
    try {
      const [cert, key] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
      return { kind: 'pair', pair: parsePair(cert, key, certFile) };
    } catch (err) {
      return { kind: 'invalid', file: certFile, reason: describeError(err) };
    }
  }

  /** Moves a left-over `updated` symlink to `current` when the swap was cut short (upstream recover). */
  async function recover(): Promise<void> {
    if (await exists(currentPath)) return;
    try {
      const st = await lstat(updatedPath);
      if (st.isSymbolicLink()) await rename(updatedPath, currentPath);
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
  }

  async function updateSymlink(target: string): Promise<void> {
    for (const p of [currentPath, updatedPath]) {
      try {
        const st = await lstat(p);
        if (!st.isSymbolicLink()) {
          throw new KubeletError(
            'FailedPrecondition',
            'update certificate symlink',
            `expected ${p} to be a symlink but it is a file`,
          );
        }
        if (p === updatedPath) await rm(p);
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw err;
      }
    }
    await symlink(resolve(target), updatedPath);
    // rename(2) replaces the old link in one step: readers see the old pair or the new one.
    await rename(updatedPath, currentPath);
  }

  return {
    currentPath: () => currentPath,
    async current() {
      try {
        await recover();
        if (await exists(currentPath)) return await load(currentPath, currentPath);
        if (opts.certFile && opts.keyFile && (await exists(opts.certFile)) && (await exists(opts.keyFile))) {
          return await load(opts.certFile, opts.keyFile);
        }
        const crt = join(dir, `${opts.prefix}.crt`);
        const key = join(dir, `${opts.prefix}.key`);
        if ((await exists(crt)) && (await exists(key))) return await load(crt, key);
        return { kind: 'none' };
      } catch (err) {
        return { kind: 'invalid', file: currentPath, reason: describeError(err) };
      }
    },
    async update(certPem, keyPem) {
      const path = file(stamp(now()));
      // Checked before anything is written: a bad issue never replaces a working pair.
      parsePair(certPem, keyPem, path);
      const certs = pemBlocks(certPem).filter((b) => b.type === 'CERTIFICATE');
      const key = pemBlocks(keyPem).find((b) => b.type.endsWith('PRIVATE KEY'));
      await mkdir(dir, { recursive: true, mode: 0o755 });
      const fh = await open(path, 'w', 0o600);
      try {
        await fh.writeFile(certs.map((c) => c.pem).join('') + (key?.pem ?? ''));
        await fh.sync();
      } finally {
        await fh.close();
      }
      const pair = parsePair(await readFile(path, 'utf8'), await readFile(path, 'utf8'), path);
      await updateSymlink(path);
      opts.logger.info('certificate stored', {
        file: path,
        current: currentPath,
        notAfter: new Date(pair.notAfter).toISOString(),
      });
      return { ...pair, file: currentPath };
    },
  };
}
