/**
 * Reads a CRI container log file for `kubectl logs` (upstream kuberuntime/logs ReadLogs), with
 * follow across rotations (the file at the path replaced by a new one; upstream's fsnotify
 * Create/Rename handling).
 */
import { realpath, open, stat, type FileHandle } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { untilAborted } from '../util/abort.ts';
import { describeError, isKubeletError, KubeletError } from '../util/errors.ts';
import { nullLogger, type Logger } from '../util/logger.ts';
import { createChangeWaiter, type ChangeWaiter } from './change-waiter.ts';
import { LOG_FORCE_CHECK_PERIOD_MS, READ_CHUNK_BYTES } from './constants.ts';
import { parseCriRecord } from './cri-format.ts';
import { fsError } from './fs-error.ts';
import type { LogOptions } from './log-options.ts';
import { LogWriter } from './log-writer.ts';
import { RecordSplitter } from './record-splitter.ts';
import { findTailStart } from './tail.ts';

export interface ReadContainerLogsRequest {
  /** The container's CRI log file (ContainerStatus.logPath); symlinks are resolved once, at start. */
  path: string;
  options: LogOptions;
  stdout: Writable;
  stderr: Writable;
  /** Aborting (client gone) ends the read promptly; the promise then resolves with `aborted`. */
  signal: AbortSignal;
  /** Whether the container still runs; asked, when following, each time the file has been idle. */
  isRunning: () => Promise<boolean>;
  /** Unix milliseconds, for `sinceSeconds`. Defaults to Date.now. */
  now?: () => number;
  /** Where skipped records and watch problems are reported. */
  logger?: Logger;
  /** How long an idle followed file waits before re-reading it anyway (default 1 s). */
  pollIntervalMs?: number;
}

export interface ReadContainerLogsResult {
  /**
   * Why it stopped: `eof` (not following), `limit` (limitBytes reached), `not-running` (following
   * and the container stopped), `aborted` (the signal).
   */
  ended: 'eof' | 'limit' | 'not-running' | 'aborted';
  bytesWritten: number;
  /** Records that were not valid CRI log records (or too long), skipped. */
  skippedRecords: number;
}

/** Malformed records logged one by one per read; the rest only count (a garbage file must not flood the log). */
const MAX_REPORTED_MALFORMED = 5;

function sameFile(a: { dev: number; ino: number }, b: { dev: number; ino: number }): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/**
 * Writes the container's log lines to `stdout` / `stderr` by the stream each was logged on, as
 * `options` ask (tailLines, since*, limitBytes, timestamps, follow). Lines split by the runtime
 * into partial records are written whole. A malformed record is skipped and reported, never
 * fatal. With `follow`, waits at the end of the file for more (watch + 1 s poll), moves to the new
 * file when the path is replaced (rotation) once the old one is read to its end, and ends when
 * `isRunning()` says no (after reading what was left) or `signal` aborts.
 *
 * Resolves with why it ended; rejects only with a KubeletError (file missing → NotFound, output
 * closed → Canceled, `isRunning` failing → its error). Every descriptor and watcher it opened is
 * closed before it settles. It never writes to, truncates or ends the writables.
 */
export async function readContainerLogs(req: ReadContainerLogsRequest): Promise<ReadContainerLogsResult> {
  const { options, signal } = req;
  const logger = req.logger ?? nullLogger;
  const pollMs = req.pollIntervalMs ?? LOG_FORCE_CHECK_PERIOD_MS;
  let since = options.sinceTime;
  if (options.sinceSeconds !== undefined) {
    const ms = (req.now ?? Date.now)() - options.sinceSeconds * 1000;
    const sec = Math.floor(ms / 1000);
    since = { sec, nsec: Math.round((ms - sec * 1000) * 1e6) };
  }
  const writer = new LogWriter({
    stdout: req.stdout,
    stderr: req.stderr,
    timestamps: options.timestamps,
    since,
    limitBytes: options.limitBytes,
  });
  const splitter = new RecordSplitter();
  let skipped = 0;
  const result = (ended: ReadContainerLogsResult['ended']): ReadContainerLogsResult => ({
    ended,
    bytesWritten: writer.bytesWritten,
    skippedRecords: skipped + splitter.dropped,
  });
  if (signal.aborted) return result('aborted');

  let path: string;
  try {
    path = await realpath(req.path);
  } catch (err) {
    throw fsError(err, 'read container log', `failed to resolve symlinks in ${req.path}`);
  }
  const op = `read container log ${path}`;
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    throw fsError(err, op, 'failed to open log file');
  }
  let waiter: ChangeWaiter | undefined;
  let next: FileHandle | undefined; // the file that replaced ours, once ours is read to its end

  const handle = (rec: Buffer) => {
    const parsed = parseCriRecord(rec);
    if (parsed.ok) {
      writer.add(parsed.record);
      return;
    }
    skipped++;
    if (skipped <= MAX_REPORTED_MALFORMED) {
      logger.warn('skipping a malformed container log record', {
        path,
        reason: parsed.reason,
        record: rec.toString('utf8', 0, Math.min(rec.length, 200)),
        ...(skipped === MAX_REPORTED_MALFORMED ? { note: 'further ones are only counted' } : {}),
      });
    }
  };
  /** The end of a file: its unfinished last record counts as it is (upstream: "incomplete line"). */
  const endOfFile = () => {
    const rest = splitter.takeRest();
    if (rest) handle(rest);
  };

  try {
    let pos = 0;
    if (options.tailLines !== undefined) {
      try {
        pos = await findTailStart(fh, (await fh.stat()).size, options.tailLines);
      } catch (err) {
        throw fsError(err, op, `failed to find the last ${options.tailLines} lines`);
      }
    }
    let notRunning = false;
    let checkRunning = true; // at the first end of file, as upstream
    // Whether the path may name another (or a truncated) file: at the first end of file, after an
    // idle poll period, a rename event, or a wake that brought no data.
    let verify = true;
    let progressed = false;
    // One read buffer for the life of the read; what is handed on is copied out at its exact size
    // (writables may keep what they were given), so an idle follower costs no 64 KiB allocations.
    const scratch = Buffer.allocUnsafe(READ_CHUNK_BYTES);
    for (;;) {
      if (signal.aborted) return result('aborted');
      let bytesRead: number;
      try {
        ({ bytesRead } = await fh.read(scratch, 0, scratch.length, pos));
      } catch (err) {
        throw fsError(err, op, `failed to read at offset ${pos}`);
      }
      if (bytesRead > 0) {
        pos += bytesRead;
        progressed = true;
        for (const rec of splitter.push(Buffer.from(scratch.subarray(0, bytesRead)))) {
          handle(rec);
          if (writer.limitReached) break;
        }
        await writer.flush(signal);
        if (writer.limitReached) return result('limit');
        continue;
      }

      // End of file.
      if (!options.follow || notRunning) {
        endOfFile();
        writer.endOpenLines();
        await writer.flush(signal);
        return result(writer.limitReached ? 'limit' : options.follow ? 'not-running' : 'eof');
      }
      if (next) {
        // Ours was replaced and is now read to its end: continue at the start of the new one.
        endOfFile();
        await writer.flush(signal);
        const old = fh;
        fh = next;
        next = undefined;
        pos = 0;
        await closeQuietly(old, logger, path);
        continue;
      }
      if (verify || !progressed || (waiter?.takeReplaced() ?? true)) {
        verify = false;
        const found = await replacement(path, fh, op);
        if (found.next) {
          next = found.next;
          continue; // read ours once more: the runtime may have written until it reopened
        }
        if (found.size < pos) {
          // Truncated in place (copytruncate): start over.
          logger.info('container log was truncated, reading it from the start', { path });
          splitter.reset();
          pos = 0;
          continue;
        }
      }
      if (!waiter) {
        waiter = createChangeWaiter(path, logger);
        continue; // a write may have come before the watch: look once more
      }
      if (checkRunning) {
        checkRunning = false;
        if (!(await askRunning(req.isRunning, signal, op))) {
          // Read whatever was written before it stopped, then end.
          notRunning = true;
          continue;
        }
      }
      progressed = false;
      const outcome = await waiter.wait(pollMs, signal);
      if (outcome === 'aborted') return result('aborted');
      // Idle for a whole poll period: the next end of file asks whether the container still runs.
      if (outcome === 'timeout') {
        checkRunning = true;
        verify = true;
      }
    }
  } catch (err) {
    // Whatever failed once the client is gone (a write to a closed stream) is part of going away.
    if (signal.aborted) return result('aborted');
    throw fsError(err, op, 'failed');
  } finally {
    waiter?.close();
    await closeQuietly(next, logger, path);
    await closeQuietly(fh, logger, path);
  }
}

/**
 * A different file now at `path` (opened), if any, and the size of ours (to spot a truncation).
 * No file at the path (renamed away, not yet recreated): keep following ours meanwhile.
 */
async function replacement(
  path: string,
  fh: FileHandle,
  op: string,
): Promise<{ next: FileHandle | undefined; size: number }> {
  const ours = await fh.stat();
  let now;
  try {
    now = await stat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { next: undefined, size: ours.size };
    throw fsError(err, op, 'failed to stat log file');
  }
  if (sameFile(now, ours)) return { next: undefined, size: ours.size };
  try {
    return { next: await open(path, 'r'), size: ours.size };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { next: undefined, size: ours.size };
    throw fsError(err, op, 'failed to open the new log file');
  }
}

async function askRunning(
  isRunning: () => Promise<boolean>,
  signal: AbortSignal,
  op: string,
): Promise<boolean> {
  try {
    return await untilAborted(isRunning(), signal);
  } catch (err) {
    if (signal.aborted) throw err;
    if (isKubeletError(err)) throw err;
    const msg = `failed to check whether the container runs: ${describeError(err)}`;
    throw new KubeletError('Unknown', op, msg, { cause: err });
  }
}

async function closeQuietly(fh: FileHandle | undefined, logger: Logger, path: string): Promise<void> {
  if (!fh) return;
  try {
    await fh.close();
  } catch (err) {
    // Nothing to do about a failed close of a read-only descriptor but to say so.
    logger.warn('failed to close container log file', { path, err: describeError(err) });
  }
}
