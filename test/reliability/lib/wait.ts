/** Polling and small statistics for the reliability scenarios. */
import { sleep } from '../../../src/util/abort.ts';
import { describeError } from '../../../src/util/errors.ts';
import { pct } from '../../../bench/lib/stats.ts';

/** Polls `probe` every 250 ms until it returns a value, or throws after `timeoutMs` naming `what`. */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  signal: AbortSignal,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    signal.throwIfAborted();
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
      if (err instanceof Error && /tskubelet exited/.test(err.message)) throw err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last === undefined ? '' : `: ${describeError(last)}`}`,
      );
    }
    await sleep(250, signal);
  }
}

/** The q-quantile (0..1) of `xs` by nearest rank; 0 for none. */
export function percentile(xs: readonly number[], q: number): number {
  return xs.length === 0
    ? 0
    : pct(
        [...xs].sort((a, b) => a - b),
        q * 100,
      );
}
