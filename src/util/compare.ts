/**
 * Orders strings by UTF-16 code unit, as `sort()` does by default and as Go's `sort.Strings` (bytes)
 * does for the names and timestamps the kubelet sorts. Not `localeCompare`: it goes through ICU's
 * collation, whose data (~2 MiB) then stays resident in the process for good (measured,
 * bench/results/2026-11-24-lean-process.md), and its order depends on the locale.
 */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
