/**
 * Timestamps as the API server canonicalizes them (metav1.Time to the second, metav1.MicroTime to
 * the microsecond); quantities are api/quantity-format.ts. Producing the canonical form ourselves
 * means a status read back from the server compares equal to the one we computed, so an unchanged
 * node is not patched every 10 s.
 */

/** metav1.Time: RFC 3339, second precision (the API server drops anything finer). */
export function formatTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** metav1.MicroTime: RFC 3339 with six fractional digits (JS clocks give milliseconds). */
export function formatMicroTime(ms: number): string {
  return new Date(Math.floor(ms)).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
