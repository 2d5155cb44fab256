/** Polling and small statistics for the reliability scenarios. */
import { until } from '../../kit/poll.ts';
import { pct } from '../../kit/stats.ts';

/**
 * The kit's poll-until (test/kit/poll.ts) every 250 ms: a probe that throws counts as "not yet"
 * (its error named on failure), except that the kubelet exited, which fails at once.
 */
export function waitFor<T>(
  what: string,
  timeoutMs: number,
  signal: AbortSignal,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  return until(what, probe, {
    timeoutMs,
    intervalMs: 250,
    signal,
    retryError: (err) => !(err instanceof Error && /tskubelet exited/.test(err.message)),
  });
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
