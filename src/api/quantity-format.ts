/**
 * Resource quantities written as resource.Quantity's String() does (the API server's canonical
 * form): DecimalSI with the largest exact decimal suffix, BinarySI with the largest exact binary
 * one. Exact for any integer (BigInt).
 */
import { parseQuantity } from './quantity.ts';

const DECIMAL_SUFFIX: Record<number, string> = {
  [-9]: 'n',
  [-6]: 'u',
  [-3]: 'm',
  0: '',
  3: 'k',
  6: 'M',
  9: 'G',
  12: 'T',
  15: 'P',
  18: 'E',
};
const BINARY_SUFFIX = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/** Removes trailing factors of `base`; returns the rest and how many were removed. */
function removeFactors(value: bigint, base: bigint): [bigint, number] {
  let times = 0;
  let v = value < 0n ? -value : value;
  while (v >= base && v % base === 0n) {
    v /= base;
    times++;
  }
  return [value < 0n ? -v : v, times];
}

/**
 * A DecimalSI quantity given in thousandths (cpu millicores; use value×1000 for plain counts),
 * canonical as the API server writes it: `2`, `1500m`, `110`, `1k`.
 */
export function formatDecimalMilli(milli: number): string {
  const m = BigInt(Math.trunc(milli));
  if (m === 0n) return '0';
  const [stripped, times] = removeFactors(m, 10n);
  let amount = stripped;
  let exponent = -3 + times;
  const rem = ((exponent % 3) + 3) % 3;
  if (rem === 1) {
    amount *= 10n;
    exponent -= 1;
  } else if (rem === 2) {
    amount *= 100n;
    exponent -= 2;
  }
  if (exponent > 18) {
    amount *= 10n ** BigInt(exponent - 18);
    exponent = 18;
  }
  return `${amount}${DECIMAL_SUFFIX[exponent] ?? ''}`;
}

/** A plain DecimalSI count (pods): `110`, `1k`. */
export function formatDecimal(value: number): string {
  return formatDecimalMilli(Math.trunc(value) * 1000);
}

/**
 * A BinarySI quantity of bytes: below 1024 as a plain number, otherwise with the largest binary
 * suffix that keeps it an integer (`24000Mi`, `24575996Ki`, `47093746742`).
 */
export function formatBinary(bytes: number): string {
  const b = BigInt(Math.trunc(bytes));
  if (b > -1024n && b < 1024n) return b.toString();
  const [amount, times] = removeFactors(b, 1024n);
  const exp = Math.min(times, BINARY_SUFFIX.length - 1);
  const scaled = amount * 1024n ** BigInt(times - exp);
  return `${scaled}${BINARY_SUFFIX[exp] ?? ''}`;
}

/**
 * An integer quantity in its format's canonical form. BinarySI values within ±1024 are written in
 * DecimalSI (upstream CanonicalizeBytes: `1000` → `1k`), as the eviction messages need; node
 * status uses formatBinary, which keeps them plain.
 */
export function formatQuantity(value: number, format: 'BinarySI' | 'DecimalSI'): string {
  if (format === 'DecimalSI' || Math.abs(value) < 1024) return formatDecimal(value);
  return formatBinary(value);
}

/** A quantity string in canonical form, keeping its binary or decimal format (`2048Ki` → `2Mi`). */
export function canonicalQuantity(text: string, field: string): string {
  const format = /[KMGTPE]i$/.test(text.trim()) ? 'BinarySI' : 'DecimalSI';
  const v = parseQuantity(text, field);
  return Number.isInteger(v) ? formatQuantity(v, format) : text;
}
