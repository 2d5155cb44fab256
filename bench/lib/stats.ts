/** Percentiles and markdown tables for the benchmark reports. */

import { pct } from '../../test/kit/stats.ts';

export { pct };

export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  max: number;
  min: number;
}

export function summarize(values: readonly number[]): Summary {
  const s = [...values].sort((a, b) => a - b);
  return {
    n: s.length,
    p50: pct(s, 50),
    p90: pct(s, 90),
    p95: pct(s, 95),
    p99: pct(s, 99),
    max: s[s.length - 1] ?? NaN,
    min: s[0] ?? NaN,
  };
}

/** Milliseconds as seconds with two decimals ("—" for NaN). */
export function sec(ms: number): string {
  return Number.isFinite(ms) ? (ms / 1000).toFixed(2) : '—';
}

export function msText(ms: number): string {
  return Number.isFinite(ms) ? `${ms < 10 ? ms.toFixed(1) : Math.round(ms)}` : '—';
}

export function mib(kib: number): string {
  return Number.isFinite(kib) && kib > 0 ? (kib / 1024).toFixed(1) : '—';
}

export function cores(c: number): string {
  return Number.isFinite(c) ? c.toFixed(3) : '—';
}

/** a / b as "1.23×" ("—" when either is missing). */
export function ratio(a: number, b: number): string {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : '—';
}

export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
