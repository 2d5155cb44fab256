/**
 * Rotation of one container's log file (upstream pkg/kubelet/logs containerLogManager.rotateLog):
 * with `<path>.*` the rotated files of `<path>`,
 *   1. remove leftovers of failed rotations (`*.tmp`, and uncompressed files whose `.gz` exists),
 *   2. remove the oldest rotated files so that, with the file rotated now and the new live file,
 *      at most `maxFiles` remain,
 *   3. gzip every remaining uncompressed rotated file (to `<f>.tmp`, renamed to `<f>.gz`),
 *   4. rename the live file to `<path>.<YYYYMMDD-hhmmss>` (left uncompressed, so readers and
 *      shippers still reading it can finish) and ask the runtime to reopen its log; if that fails,
 *      rename it back so the next pass can try again.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { describeError, KubeletError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { ROTATED_LOG_COMPRESS_SUFFIX, ROTATED_LOG_TMP_SUFFIX } from './constants.ts';
import { fsError } from './fs-error.ts';

export interface RotateLogRequest {
  /** The live log file. */
  path: string;
  /** At least 2: the live file and the one rotated now. */
  maxFiles: number;
  /** Unix milliseconds; the rotated file is named after it in local time. */
  now: number;
  /** CRI ReopenContainerLog for the container writing `path`. */
  reopen: (signal: AbortSignal) => Promise<void>;
  signal: AbortSignal;
  logger: Logger;
}

/** Upstream timestampFormat `20060102-150405`, in local time as Go's time.Now().Format. */
export function rotationTimestamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return (
    `${String(d.getFullYear()).padStart(4, '0')}${p(d.getMonth() + 1)}${p(d.getDate())}-` +
    `${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`
  );
}

/** The files named `<path>.<anything>` (upstream filepath.Glob(path + ".*")), full paths. */
export async function listRotatedLogs(path: string): Promise<string[]> {
  const dir = dirname(path);
  const prefix = `${basename(path)}.`;
  const names = await readdir(dir);
  return names.filter((n) => n.startsWith(prefix)).map((n) => join(dir, n));
}

/** Splits rotated files into those in use and leftovers of an interrupted rotation (upstream filterUnusedLogs). */
export function splitUnusedLogs(logs: readonly string[]): { inUse: string[]; unused: string[] } {
  const all = new Set(logs);
  const inUse: string[] = [];
  const unused: string[] = [];
  for (const l of logs) {
    const leftover =
      l.endsWith(ROTATED_LOG_TMP_SUFFIX) ||
      (!l.endsWith(ROTATED_LOG_COMPRESS_SUFFIX) && all.has(l + ROTATED_LOG_COMPRESS_SUFFIX));
    (leftover ? unused : inUse).push(l);
  }
  return { inUse, unused };
}

/** Rotates `req.path` as described above. Rejects with a KubeletError saying which step failed. */
export async function rotateLog(req: RotateLogRequest): Promise<{ rotatedTo: string; removed: string[] }> {
  const op = `rotate container log ${req.path}`;
  const removed: string[] = [];
  let logs: string[];
  try {
    logs = await listRotatedLogs(req.path);
  } catch (err) {
    throw fsError(err, op, 'failed to list rotated log files');
  }

  const rotatedTo = `${req.path}.${rotationTimestamp(req.now)}`;
  const taken = [rotatedTo, rotatedTo + ROTATED_LOG_COMPRESS_SUFFIX].find((f) => logs.includes(f));
  if (taken !== undefined) {
    // Two rotations within one second (a clock stepped back?): the rename, or the next pass's
    // clean-up of an uncompressed file whose .gz exists, would destroy the earlier one.
    throw new KubeletError('AlreadyExists', op, `${taken} already exists; not rotating over it`);
  }

  const { inUse, unused } = splitUnusedLogs(logs);
  for (const l of unused) await removeFile(l, op, 'failed to remove unused log', removed);

  // Oldest first: the timestamp suffix sorts by time. Removing from the oldest end keeps the
  // files an ongoing reader is most likely still in.
  inUse.sort();
  const keep = Math.max(0, req.maxFiles - 2);
  const excess = inUse.splice(0, Math.max(0, inUse.length - keep));
  for (const l of excess) await removeFile(l, op, 'failed to remove old log', removed);

  for (const l of inUse) {
    if (l.endsWith(ROTATED_LOG_COMPRESS_SUFFIX)) continue;
    await compressLog(l, req.signal, req.logger, op);
  }

  try {
    await rename(req.path, rotatedTo);
  } catch (err) {
    throw fsError(err, op, `failed to rename to ${rotatedTo}`);
  }
  try {
    await req.reopen(req.signal);
  } catch (err) {
    // Put it back, so that the next pass rotates it again rather than the container writing
    // into a file we consider rotated (or, with no new file, nowhere anyone reads).
    try {
      await rename(rotatedTo, req.path);
    } catch (renameErr) {
      req.logger.error('failed to rename the rotated log back; its content stays in the rotated file', {
        path: req.path,
        rotated: rotatedTo,
        err: describeError(renameErr),
        reopenErr: describeError(err),
      });
    }
    throw new KubeletError('Unknown', op, `failed to reopen the container log: ${describeError(err)}`, {
      cause: err,
    });
  }
  return { rotatedTo, removed };
}

/** gzip `log` to `log.gz` through `log.gz.tmp`, then remove `log` (upstream compressLog). */
async function compressLog(log: string, signal: AbortSignal, logger: Logger, op: string): Promise<void> {
  const tmp = log + ROTATED_LOG_TMP_SUFFIX;
  try {
    // Upstream writes 0644; a container's log is for root (and the log dir's group) only, as the
    // runtime's own log file is (containerd: 0640). 'wx': a leftover tmp was removed above, and an
    // existing file would keep its old mode.
    await pipeline(
      createReadStream(log),
      createGzip(),
      createWriteStream(tmp, { flags: 'wx', mode: 0o640 }),
      {
        signal,
      },
    );
    await rename(tmp, log + ROTATED_LOG_COMPRESS_SUFFIX);
  } catch (err) {
    try {
      await unlink(tmp);
    } catch (cleanupErr) {
      if ((cleanupErr as NodeJS.ErrnoException).code !== 'ENOENT') {
        // Next pass removes it as unused; say so in case it keeps failing.
        logger.warn('failed to remove temporary compressed log', { tmp, err: describeError(cleanupErr) });
      }
    }
    throw fsError(err, op, `failed to compress ${log}`);
  }
  try {
    await unlink(log);
  } catch (err) {
    throw fsError(err, op, `failed to remove ${log} after compressing it`);
  }
}

async function removeFile(path: string, op: string, what: string, removed: string[]): Promise<void> {
  try {
    await unlink(path);
    removed.push(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw fsError(err, op, `${what} ${path}`);
  }
}
