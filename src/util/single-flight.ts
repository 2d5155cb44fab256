/**
 * One pass at a time (the role of golang.org/x/sync/singleflight's Group.Do in upstream, and of
 * the `wait.Until` loops' "never two runs at once"): the periodic passes of the GCs, the
 * housekeeping's background cleanups, log rotation and the event recorder's drain all go through it.
 */

/** A slot that runs at most one pass at a time; see singleFlight. */
export interface SingleFlight<R> {
  /**
   * Starts `pass` when none is in flight; otherwise joins the pass in flight (and `pass` is not
   * run). Settles as that pass does: a rejection reaches every caller that joined it.
   */
  run(pass: () => Promise<R>): Promise<R>;
  /** True while a pass is in flight. */
  readonly busy: boolean;
  /** Resolves when no pass is in flight; never rejects (a failed pass is its callers' to handle). */
  idle(): Promise<void>;
}

export function singleFlight<R>(): SingleFlight<R> {
  let current: Promise<R> | undefined;
  return {
    run(pass) {
      current ??= pass().finally(() => {
        current = undefined;
      });
      return current;
    },
    get busy() {
      return current !== undefined;
    },
    async idle() {
      // The pass's outcome was handed to the callers of run(); waiting for it is all idle() does.
      await current?.then(
        () => undefined,
        () => undefined,
      );
    },
  };
}
