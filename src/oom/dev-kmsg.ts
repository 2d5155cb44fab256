/**
 * The kernel log reader behind the OOM watcher: `/dev/kmsg` opened non-blocking, so a read returns
 * at once (one record, or "nothing new") and never holds a libuv worker thread. Reading starts at
 * the end of the log: records already there are skipped, so a restarted kubelet does not report old
 * OOMs again (upstream 1.20 reads the whole ring buffer first; kubernetes issue #133260).
 */
import { constants, open, type FileHandle } from 'node:fs/promises';
import type { Logger } from '../util/logger.ts';
import { KubeletError, describeError, errnoCode } from '../util/errors.ts';

/** A kernel log opened at its end. Tests replace it with a fake (see testing.ts). */
export interface KmsgSource {
  /**
   * What is available now: for `/dev/kmsg` one whole record (with its newline), for other sources
   * any number of bytes. Empty when nothing new has been logged; never waits for more. Rejects when
   * the log cannot be read any more.
   */
  read(): Promise<Uint8Array>;
  /** Closes the file descriptor; idempotent. */
  close(): Promise<void>;
}

/** Opens the kernel log positioned after the records already there. */
export type OpenKmsg = () => Promise<KmsgSource>;

export const DEV_KMSG = '/dev/kmsg';
/** Larger than any record (the kernel's CONSOLE_EXT_LOG_MAX is 8 KiB); a smaller buffer gets EINVAL. */
const READ_BUFFER_BYTES = 16 * 1024;
/** Reads spent skipping the old records at most (the ring buffer holds a few MiB at most). */
const MAX_SKIP_READS = 1_000_000;
/** EPIPE in a row (records overwritten while we read) before read() gives up until the next call. */
const MAX_OVERRUNS_PER_READ = 1_000;

export interface DevKmsgOptions {
  /** `/dev/kmsg` unless a test names a file. */
  path?: string;
  logger: Logger;
}

/** The real OpenKmsg. Rejects (KubeletError) when the path cannot be opened. */
export function devKmsgOpener(opts: DevKmsgOptions): OpenKmsg {
  const path = opts.path ?? DEV_KMSG;
  const log = opts.logger;
  return async () => {
    let fh: FileHandle;
    try {
      fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (err) {
      throw new KubeletError('Unavailable', `open ${path}`, describeError(err), { cause: err });
    }
    const buf = Buffer.alloc(READ_BUFFER_BYTES);
    let closed: Promise<void> | undefined;
    let overrunLogged = false;

    /** Bytes read now; 0 when nothing is new (EAGAIN, or the end of a plain file). */
    const readOnce = async (): Promise<number> => {
      for (let overruns = 0; ; overruns++) {
        try {
          return (await fh.read(buf, 0, buf.length, null)).bytesRead;
        } catch (err) {
          const code = errnoCode(err);
          if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return 0;
          // The kernel overwrote records we had not read yet; the next read gets the oldest left.
          if (code === 'EPIPE' && overruns < MAX_OVERRUNS_PER_READ) {
            if (!overrunLogged) {
              log.warn('OOM watcher: kernel log records were overwritten before they were read', { path });
              overrunLogged = true;
            }
            continue;
          }
          throw new KubeletError('Unavailable', `read ${path}`, describeError(err), { cause: err });
        }
      }
    };

    try {
      let skipped = 0;
      while (skipped < MAX_SKIP_READS && (await readOnce()) > 0) skipped++;
      if (skipped >= MAX_SKIP_READS) {
        log.warn('OOM watcher: the kernel log kept growing while its old records were skipped; reading on', {
          path,
          skipped,
        });
      } else {
        log.debug('OOM watcher: skipped the records already in the kernel log', { path, skipped });
      }
    } catch (err) {
      await fh
        .close()
        .catch((closeErr: unknown) =>
          log.warn('OOM watcher: closing the kernel log failed', { path, err: describeError(closeErr) }),
        );
      throw err;
    }

    return {
      async read() {
        if (closed) return new Uint8Array(0);
        const n = await readOnce();
        return n === 0 ? new Uint8Array(0) : buf.subarray(0, n).slice();
      },
      close() {
        closed ??= fh.close();
        return closed;
      },
    };
  };
}
