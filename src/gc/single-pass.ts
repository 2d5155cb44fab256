import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';

/** A periodic pass that never runs twice at once; see singlePass. */
export interface SinglePass<R> {
  /** Runs one pass, or joins the one in flight. Never rejects. */
  collect(): Promise<R>;
  /** Resolves when no pass is running. */
  idle(): Promise<void>;
}

/**
 * One pass at a time (the GCs' timers fire whether or not the last pass has finished): a call
 * while a pass runs joins it. A pass that rejects is a bug (each step catches its own errors): it
 * is logged as `<what>: pass failed` and answered with `failed(err)`, never thrown at the timer.
 */
export function singlePass<R>(
  run: () => Promise<R>,
  failed: (err: unknown) => R,
  log: Logger,
  what: string,
): SinglePass<R> {
  let current: Promise<R> | undefined;
  return {
    collect() {
      current ??= run()
        .catch((err: unknown): R => {
          log.error(`${what}: pass failed`, { err: describeError(err) });
          return failed(err);
        })
        .finally(() => {
          current = undefined;
        });
      return current;
    },
    async idle() {
      await current;
    },
  };
}
