/**
 * Poll-until for tests of every kind (unit, integration, reliability, bench): the one copy of the
 * loop. Upstream counterpart: k8s.io/apimachinery/pkg/util/wait (PollUntilContextTimeout) as the
 * kubelet's tests use it, and gomega's Eventually.
 */
import { inspect } from 'node:util';
import { sleep } from '../../src/util/abort.ts';
import { monotonicNow } from '../../src/util/clock.ts';
import { describeError } from '../../src/util/errors.ts';

export interface UntilOptions {
  /** Gives up after this long (default 5 s). */
  timeoutMs?: number;
  /** Waits this long between polls (default 20 ms); 0 yields one event-loop turn (setImmediate). */
  intervalMs?: number;
  /** Stops waiting (rejecting with the signal's reason) when aborted. */
  signal?: AbortSignal;
  /** Extra state for the failure message, called once when the wait times out. */
  describe?: () => unknown;
  /**
   * Whether an error thrown by `get` counts as "not yet" (kept for the failure message) rather than
   * failing at once; by default every error fails at once.
   */
  retryError?: (err: unknown) => boolean;
}

/** What `until` fails with when the time is up (an error `get` threw otherwise passes through). */
export class UntilTimeout extends Error {
  override name = 'UntilTimeout';
}

/** What `until` treats as "not yet": undefined and false. */
export type NotYet = undefined | false;

/**
 * Polls `get` until it gives a value (neither undefined nor false) and returns that value. Fails
 * with `timed out waiting for <what>` after `timeoutMs`, with the last value seen (or the last error
 * `get` threw, when `retryError` let it count as "not yet"). Time is monotonic: a wall-clock step
 * (the reliability suite's clock scenario makes them) neither ends a wait early nor stretches it.
 */
export async function until<T>(
  what: string,
  get: () => T | NotYet | Promise<T | NotYet>,
  opts: UntilOptions = {},
): Promise<T> {
  const { timeoutMs = 5_000, intervalMs = 20, signal, describe, retryError } = opts;
  const deadline = monotonicNow() + timeoutMs;
  let last: { value: unknown } | { error: unknown } = { value: undefined };
  for (;;) {
    signal?.throwIfAborted();
    let v: T | NotYet;
    try {
      v = await get();
      last = { value: v };
    } catch (error) {
      if (!retryError?.(error)) throw error;
      v = undefined;
      last = { error };
    }
    if (v !== undefined && v !== false) return v;
    if (monotonicNow() > deadline) {
      const seen =
        'error' in last ? `last error: ${describeError(last.error)}` : `last value: ${short(last.value)}`;
      const state = describe ? `\n${JSON.stringify(describe(), null, 1).slice(0, 4000)}` : '';
      throw new UntilTimeout(`timed out waiting for ${what} (after ${timeoutMs} ms; ${seen})${state}`, {
        cause: 'error' in last ? last.error : undefined,
      });
    }
    if (intervalMs === 0) await new Promise<void>((r) => setImmediate(r));
    else await sleep(intervalMs, signal);
  }
}

/** `until` with a fixed default timeout, for a file whose waits share one: `const until = untilWithin(8_000)`. */
export function untilWithin(defaultTimeoutMs: number, defaults: Omit<UntilOptions, 'timeoutMs'> = {}) {
  return <T>(
    what: string,
    get: () => T | NotYet | Promise<T | NotYet>,
    timeoutMs = defaultTimeoutMs,
  ): Promise<T> => until(what, get, { ...defaults, timeoutMs });
}

/** {@link untilAlive}'s options: `until`'s, and the process to watch. */
export interface AliveUntilOptions extends Omit<UntilOptions, 'retryError'> {
  /** Runs before each poll (a process's `assertRunning`): its rejection fails the wait at once. */
  alive?: () => Promise<void>;
}

/**
 * `until` every 100 ms unless told, for a wait on what a process does: `alive` runs first at each
 * poll, so a kubelet that exited fails the wait at once (with its log) instead of at the timeout.
 */
export function untilAlive<T>(
  what: string,
  get: () => T | NotYet | Promise<T | NotYet>,
  opts: AliveUntilOptions = {},
): Promise<T> {
  const { alive, ...untilOpts } = opts;
  return until(
    what,
    async () => {
      await alive?.();
      return get();
    },
    { intervalMs: 100, ...untilOpts },
  );
}

/**
 * The suites' poll on the bed (integration, security): `until` every 100 ms, 30 s unless told, with
 * the state seen on failure.
 */
export function eventually<T>(
  what: string,
  check: () => T | NotYet | Promise<T | NotYet>,
  timeoutMs = 30_000,
  describe?: () => unknown,
): Promise<T> {
  return until(what, check, { timeoutMs, intervalMs: 100, ...(describe ? { describe } : {}) });
}

function short(v: unknown): string {
  return inspect(v, { depth: 3, breakLength: Infinity, maxStringLength: 200, maxArrayLength: 10 });
}
