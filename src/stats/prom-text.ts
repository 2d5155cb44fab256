/**
 * A small writer of the Prometheus text format (0.0.4) for metrics computed at scrape time with
 * their own sample timestamps, which prom-client cannot carry. Families are written in name order,
 * and a family without samples is left out, as client_golang does.
 */
import { compareStrings } from '../util/compare.ts';

export const PROMETHEUS_TEXT_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface Sample {
  labels?: Record<string, string>;
  value: number;
  /** ms since the epoch. */
  timestampMs?: number;
}

export interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: Sample[];
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

export function renderFamilies(families: Family[]): string {
  const lines: string[] = [];
  for (const f of [...families].sort((a, b) => compareStrings(a.name, b.name))) {
    if (f.samples.length === 0) continue;
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) {
      const labels = Object.entries(s.labels ?? {});
      const l = labels.length > 0 ? `{${labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}` : '';
      const ts = s.timestampMs !== undefined ? ` ${Math.round(s.timestampMs)}` : '';
      lines.push(`${f.name}${l} ${formatValue(s.value)}${ts}`);
    }
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}
