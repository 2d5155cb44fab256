/**
 * Go `time.Duration` strings, as KubeletConfiguration and the kubelet's flags write them
 * (`"1m30s"`, `"250ms"`, `"1.5h"`, `"0"`), converted to and from milliseconds.
 *
 * The grammar is Go's `time.ParseDuration`: an optional sign, then one or more
 * `<decimal number><unit>` pairs with units ns, us (µs, μs), ms, s, m, h; a bare `0` is allowed.
 * Values are limited to Go's int64 nanosecond range (about 292 years).
 */
import { KubeletError } from '../util/errors.ts';

const NS_PER_UNIT: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n], // micro sign
  ['\u03bcs', 1_000n], // Greek small letter mu
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
]);

const MAX_NS = (1n << 63n) - 1n;
const NS_PER_MS = 1_000_000n;

export type DurationParseResult = { ok: true; ms: number } | { ok: false; reason: string };

/**
 * Parses a Go duration string without throwing. `ms` may be fractional (e.g. `"1us"` is 0.001)
 * and may be negative (`"-1s"`); callers that need a positive duration check that themselves.
 */
export function tryParseGoDuration(input: string): DurationParseResult {
  const invalid = (why: string): DurationParseResult => ({
    ok: false,
    reason: `invalid duration ${JSON.stringify(input)}: ${why}`,
  });
  let s = input;
  let negative = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s.startsWith('-');
    s = s.slice(1);
  }
  if (s === '0') return { ok: true, ms: 0 };
  if (s === '') return invalid('no value');

  let totalNs = 0n;
  while (s !== '') {
    const num = /^(\d*)(?:\.(\d*))?/.exec(s);
    const intDigits = num?.[1] ?? '';
    const fracDigits = num?.[2] ?? '';
    if (intDigits === '' && fracDigits === '') return invalid('expected a number');
    s = s.slice(num?.[0].length ?? 0);

    const unitText = /^[^\d.]*/.exec(s)?.[0] ?? '';
    if (unitText === '') return invalid('missing unit');
    const unitNs = NS_PER_UNIT.get(unitText);
    if (unitNs === undefined) return invalid(`unknown unit "${unitText}" (want ns, us, ms, s, m or h)`);
    s = s.slice(unitText.length);

    let partNs = intDigits === '' ? 0n : BigInt(intDigits);
    if (partNs > MAX_NS / unitNs) return invalid('value out of range');
    partNs *= unitNs;
    if (fracDigits !== '') {
      // Exact decimal fraction of the unit, truncated to whole nanoseconds as Go does.
      partNs += (BigInt(fracDigits) * unitNs) / 10n ** BigInt(fracDigits.length);
    }
    totalNs += partNs;
    if (totalNs > MAX_NS) return invalid('value out of range');
  }
  const ms = Number(totalNs / NS_PER_MS) + Number(totalNs % NS_PER_MS) / 1e6;
  return { ok: true, ms: negative ? -ms : ms };
}

/**
 * Parses a Go duration string into milliseconds; throws `KubeletError('InvalidArgument')` naming
 * `field` (a config field such as `syncFrequency` or a flag such as `--sync-frequency`).
 */
export function parseGoDuration(input: string, field: string): number {
  const result = tryParseGoDuration(input);
  if (!result.ok) throw new KubeletError('InvalidArgument', `parse ${field}`, result.reason);
  return result.ms;
}

/** Formats milliseconds the way Go's `Duration.String()` does: `"1m0s"`, `"20s"`, `"1.5s"`, `"250ms"`, `"0s"`. */
export function formatGoDuration(ms: number): string {
  let ns = BigInt(Math.round(ms * 1e6));
  if (ns === 0n) return '0s';
  const sign = ns < 0n ? '-' : '';
  if (ns < 0n) ns = -ns;
  if (ns < 1_000n) return `${sign}${ns}ns`;
  if (ns < 1_000_000n) return `${sign}${decimal(ns, 1_000n)}\u00b5s`;
  if (ns < 1_000_000_000n) return `${sign}${decimal(ns, 1_000_000n)}ms`;
  const hours = ns / 3_600_000_000_000n;
  const minutes = (ns / 60_000_000_000n) % 60n;
  const secondsNs = ns % 60_000_000_000n;
  const h = hours > 0n ? `${hours}h` : '';
  const m = hours > 0n || minutes > 0n ? `${minutes}m` : '';
  return `${sign}${h}${m}${decimal(secondsNs, 1_000_000_000n)}s`;
}

/** `value / unit` as a decimal string without trailing zeros. */
function decimal(value: bigint, unit: bigint): string {
  const whole = value / unit;
  const rest = value % unit;
  if (rest === 0n) return String(whole);
  const width = String(unit).length - 1;
  return `${whole}.${String(rest).padStart(width, '0').replace(/0+$/, '')}`;
}
