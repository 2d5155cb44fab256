/**
 * The client CA bundle of authentication.x509.clientCAFile, reloaded when the file changes
 * (upstream apiserver pkg/server/dynamiccertificates/dynamic_cafile_content.go, which the kubelet's
 * BuildAuthn runs as "client-ca-bundle"): read at start (a missing or broken file stops the start),
 * then re-read on every change the file's directory reports (an in-place write, a rename over it, a
 * ConfigMap's symlink swap) and every minute whatever happens. A new bundle that parses is put in
 * force and handed to the listeners; one that does not (missing, empty, not PEM certificates) is
 * logged as an error and the bundle in force stays, as upstream keeps its last good content.
 */
import { X509Certificate } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { describeError, KubeletError } from '../../util/errors.ts';
import type { Logger } from '../../util/logger.ts';

/** A bundle that parsed: its PEM text and its certificates' SHA-256 fingerprints. */
interface Bundle {
  pem: Buffer;
  fingerprints: ReadonlySet<string>;
}

export interface ClientCA {
  /** The bundle in force, as read from the file. */
  current(): Buffer;
  /** `listener` gets every new bundle once it is in force. */
  onChange(listener: (pem: Buffer) => void): void;
  /** Watches the file and re-reads it every `checkPeriodMs`. */
  start(): void;
  stop(): void;
  /** Reads the file now: a change is put in force, a broken file is logged and ignored. */
  check(): Promise<void>;
}

export interface ClientCAOptions {
  path: string;
  logger: Logger;
  /** Re-read period whatever the watch reports (upstream's FileRefreshDuration, 1 minute). */
  checkPeriodMs?: number;
}

/** Upstream dynamiccertificates.FileRefreshDuration. */
const CHECK_PERIOD_MS = 60_000;
/** Events of one write come in bursts: one read after they settle. */
const SETTLE_MS = 100;

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/**
 * The certificates of a PEM bundle (upstream cert.NewPoolFromBytes: other PEM blocks are skipped,
 * a certificate that does not parse and a bundle without one are errors).
 */
export function parseCABundle(pem: Buffer): ReadonlySet<string> {
  const blocks = pem.toString('latin1').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new Error('it holds no PEM certificate');
  const fingerprints = new Set<string>();
  for (const [i, block] of blocks.entries()) {
    try {
      fingerprints.add(new X509Certificate(block).fingerprint256);
    } catch (err) {
      throw new Error(`certificate ${i + 1} does not parse: ${describeError(err)}`, { cause: err });
    }
  }
  return fingerprints;
}

async function readBundle(path: string): Promise<Bundle> {
  const pem = await readFile(path);
  if (pem.length === 0) throw new Error('it is empty');
  return { pem, fingerprints: parseCABundle(pem) };
}

/** Reads and checks the file (failure: a KubeletError naming it), ready to `start()` watching. */
export async function loadClientCA(opts: ClientCAOptions): Promise<ClientCA> {
  let bundle: Bundle;
  try {
    bundle = await readBundle(opts.path);
  } catch (err) {
    throw new KubeletError(
      'InvalidArgument',
      'read client CA',
      `${opts.path} (authentication.x509.clientCAFile): ${describeError(err)}`,
      { cause: err },
    );
  }
  const log = opts.logger.child({ component: 'client-ca', path: opts.path });
  const listeners: ((pem: Buffer) => void)[] = [];
  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  let settle: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = true;

  async function checkOnce(): Promise<void> {
    let next: Bundle;
    try {
      const pem = await readFile(opts.path);
      if (pem.equals(bundle.pem)) return;
      if (pem.length === 0) throw new Error('it is empty');
      next = { pem, fingerprints: parseCABundle(pem) };
    } catch (err) {
      log.error('the client CA file cannot be used; the client CA in force stays', {
        err: describeError(err),
      });
      return;
    }
    bundle = next;
    log.info('client CA reloaded', { certificates: next.fingerprints.size });
    for (const l of listeners) l(next.pem);
  }

  /** One read at a time; a change reported during a read is read again after it. */
  function check(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await checkOnce();
      } while (again);
    })().finally(() => {
      running = undefined;
    });
    return running;
  }

  function startWatch(): void {
    // The directory, not the file: a rename over the file or a symlink swap replaces its inode.
    try {
      watcher = watch(dirname(opts.path), { persistent: false }, (_event, name) => {
        if (name !== null && name !== basename(opts.path) && !name.startsWith('..')) return;
        clearTimeout(settle);
        settle = setTimeout(() => void check(), SETTLE_MS);
        settle.unref();
      });
      watcher.on('error', (err) => {
        log.warn('watching the client CA file failed; it is still re-read every period', {
          err: describeError(err),
        });
        watcher?.close();
        watcher = undefined;
      });
    } catch (err) {
      log.warn('cannot watch the client CA file; it is re-read every period', { err: describeError(err) });
      watcher = undefined;
    }
  }

  return {
    current: () => bundle.pem,
    onChange(listener) {
      listeners.push(listener);
    },
    start() {
      if (!stopped) return;
      stopped = false;
      startWatch();
      timer = setInterval(() => {
        // A watch that failed is tried again, as upstream restarts its watch every minute.
        if (!watcher) startWatch();
        void check();
      }, opts.checkPeriodMs ?? CHECK_PERIOD_MS);
      timer.unref();
    },
    stop() {
      stopped = true;
      clearInterval(timer);
      clearTimeout(settle);
      watcher?.close();
      watcher = undefined;
    },
    check,
  };
}
