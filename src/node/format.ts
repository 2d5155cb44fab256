/**
 * Wire formats the API server canonicalizes to: resource quantities (resource.Quantity String())
 * and timestamps (metav1.Time to the second, metav1.MicroTime to the microsecond). Producing the
 * canonical form ourselves means a status read back from the server compares equal to the one we
 * computed, so an unchanged node is not patched every 10 s.
 */

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

/** metav1.Time: RFC 3339, second precision (the API server drops anything finer). */
export function formatTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** metav1.MicroTime: RFC 3339 with six fractional digits (JS clocks give milliseconds). */
export function formatMicroTime(ms: number): string {
  return new Date(Math.floor(ms)).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
