/**
 * Waits for a log file to change: an fs.watch on its directory (which, unlike a watch on the file,
 * also sees a new file replace the old one at the same path), with a timeout as the poll fallback.
 * If the watch cannot be set up or fails, waiting degrades to polling (logged once), as inotify
 * limits are a node-wide resource a busy node can run out of.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';

export type WaitOutcome = 'changed' | 'timeout' | 'aborted';

export interface ChangeWaiter {
  /** Resolves when the file changed since the last call (or during this one), on timeout, or on abort. */
  wait(timeoutMs: number, signal: AbortSignal): Promise<WaitOutcome>;
  /**
   * Whether the path may now name another file or a shorter one: a rename/create event for it
   * since the last call, an event without a file name, or no working watch (polling). A plain
   * write event does not count, so a followed file is stat'ed only when it may have been replaced.
   */
  takeReplaced(): boolean;
  /** Stops watching. Idempotent. */
  close(): void;
}

export function createChangeWaiter(path: string, logger: Logger): ChangeWaiter {
  const name = basename(path);
  let changed = false;
  let replaced = false;
  let wake: (() => void) | undefined;
  let watcher: FSWatcher | undefined;

  const notify = () => {
    changed = true;
    wake?.();
  };
  const fallBack = (err: unknown) => {
    logger.warn('cannot watch the container log, polling it instead', {
      path,
      err: describeError(err),
    });
    watcher?.close();
    watcher = undefined;
  };

  try {
    watcher = watch(dirname(path), { persistent: false }, (event, file) => {
      // Rotation writes other files of the same directory (.gz, .tmp); only ours matters.
      if (file !== null && file !== name) return;
      if (event === 'rename' || file === null) replaced = true;
      notify();
    });
    watcher.on('error', fallBack);
  } catch (err) {
    fallBack(err);
  }

  return {
    wait(timeoutMs, signal) {
      if (signal.aborted) return Promise.resolve('aborted');
      if (changed) {
        changed = false;
        return Promise.resolve('changed');
      }
      return new Promise<WaitOutcome>((resolve) => {
        const finish = (outcome: WaitOutcome) => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          wake = undefined;
          if (outcome === 'changed') changed = false;
          resolve(outcome);
        };
        const onAbort = () => finish('aborted');
        const timer = setTimeout(() => finish('timeout'), timeoutMs);
        wake = () => finish('changed');
        signal.addEventListener('abort', onAbort, { once: true });
      });
    },
    takeReplaced() {
      const r = replaced || watcher === undefined;
      replaced = false;
      return r;
    },
    close() {
      wake = undefined;
      watcher?.close();
      watcher = undefined;
    },
  };
}
