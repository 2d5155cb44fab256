/** Plain-language formatting of durations, clock times and quantities for `why`. */

/** `0.4 s`, `37 s`, `4 min 10 s`. */
export function seconds(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return `${Math.round(s * 10) / 10} s`;
  if (s < 120) return `${Math.round(s)} s`;
  const m = Math.floor(s / 60);
  const rest = Math.round(s - m * 60);
  return rest === 0 ? `${m} min` : `${m} min ${rest} s`;
}

/** Whole seconds until `at`, never negative (a retry due now is in 0 s). */
export function secondsUntil(at: number, now: number): number {
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/** `20:01:02` (UTC, as the RFC 3339 stamps the API carries). */
export function clockTime(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19);
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Wall ms of an RFC 3339 stamp; undefined when absent or unparsable. */
export function parseTime(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const t = Date.parse(text);
  return Number.isNaN(t) ? undefined : t;
}

/** `512Mi`, `1.5Gi`, `300Ki`, `12` bytes. */
export function bytes(n: number): string {
  const units = ['', 'Ki', 'Mi', 'Gi', 'Ti'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  const r = Math.round(v * 10) / 10;
  return i === 0 ? `${r} bytes` : `${r}${units[i] ?? ''}`;
}

/** The first line of a probe's or hook's output, trimmed and bounded, for a sentence. */
export function firstLine(text: string, max = 200): string {
  const line = text.trim().split('\n')[0]?.trim() ?? '';
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

/** `main` / `main and side` / `a, b and c`. */
export function list(items: readonly string[]): string {
  if (items.length <= 1) return items[0] ?? '';
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1) ?? ''}`;
}

/** Lower-cases the first letter, for a message used after a colon. */
export function lowerFirst(s: string): string {
  return s.length > 0 ? `${s[0]?.toLowerCase() ?? ''}${s.slice(1)}` : s;
}

/** Ends a sentence with a full stop unless it already has one. */
export function sentence(s: string): string {
  return /[.!?…]$/.test(s) ? s : `${s}.`;
}
