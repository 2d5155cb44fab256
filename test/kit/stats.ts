/**
 * Small statistics shared by the benchmark's reports and the reliability suite's checks. No upstream
 * counterpart.
 */

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export function pct(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? NaN;
}
