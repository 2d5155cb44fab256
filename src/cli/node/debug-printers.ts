/**
 * `timeline` and `why`: the kubelet API's `/debug/pods/{ns}/{name}/timeline` (PodTimeline) and
 * `/why` (PodWhy) documents (tskubelet.io/v1alpha1) printed for people.
 * Their text comes from pods (log lines, messages, names): it is escaped for the terminal
 * (terminal-text.ts), table cells before alignment.
 */
import type { PodTimeline, TimelineStepView } from '../../timeline/index.ts';
import { TABLE_TABS, tabwrite } from './tabwriter.ts';
import { escapeTerminal } from './terminal-text.ts';

export type { PodTimeline };

export type EvidenceValue = string | number | boolean | string[];

export interface WhyFinding {
  reason: string;
  container?: string;
  message: string;
  evidence?: Record<string, EvidenceValue>;
  since?: string;
}

export interface PodWhy {
  apiVersion: string;
  kind: 'PodWhy';
  namespace: string;
  name: string;
  uid: string;
  phase?: string;
  ready?: boolean;
  summary: string;
  findings: WhyFinding[];
}

/** `+812ms`, `+1.25s`, `+2m03s`: an offset or a gap, in the unit that reads best. */
export function formatMs(ms: number, sign = ''): string {
  if (!Number.isFinite(ms)) return '-';
  const neg = ms < 0;
  const a = Math.abs(ms);
  let s: string;
  if (a < 1000) s = `${a < 10 ? a.toFixed(1) : Math.round(a)}ms`;
  else if (a < 60_000) s = `${(a / 1000).toFixed(a < 10_000 ? 2 : 1)}s`;
  else {
    const total = Math.round(a / 1000);
    s = `${Math.floor(total / 60)}m${String(total % 60).padStart(2, '0')}s`;
  }
  return `${neg ? '-' : sign}${s}`;
}

function what(s: TimelineStepView): string {
  if (s.container) return s.container;
  if (s.volume) return `volume ${s.volume}`;
  return '';
}

function detail(s: TimelineStepView): string {
  const parts: string[] = [];
  if (s.source) parts.push(`source=${s.source}`);
  if (s.image) parts.push(`image=${s.image}`);
  if (s.bytes !== undefined) parts.push(`bytes=${s.bytes}`);
  if (s.cached !== undefined) parts.push(s.cached ? 'cached' : 'pulled');
  if (s.podIP) parts.push(`ip=${s.podIP}`);
  if (s.error) parts.push(`error: ${s.error}`);
  return parts.join(' ');
}

/** The timeline as one table per attempt: STEP, CONTAINER/VOLUME, +OFFSET, SINCE PREVIOUS, DETAIL. */
export function formatTimeline(t: PodTimeline): string {
  const out: string[] = [`Pod ${t.namespace}/${t.name} (${t.uid})`];
  if (t.attempts.length === 0) out.push('No steps recorded yet.');
  let previous: number | undefined;
  for (const a of t.attempts) {
    out.push('', `Attempt ${a.attempt}:`);
    const rows = [['STEP', 'CONTAINER/VOLUME', 'OFFSET', 'SINCE PREVIOUS', 'DETAIL']];
    for (const s of a.steps) {
      const cells = [
        s.step,
        what(s) || '-',
        formatMs(s.offsetMs, '+'),
        previous === undefined ? '-' : formatMs(s.offsetMs - previous, '+'),
        detail(s),
      ];
      rows.push(cells.map(escapeTerminal));
      previous = s.offsetMs;
    }
    const table = tabwrite(rows.map((r) => r.join('\t')).join('\n'), TABLE_TABS);
    out.push(...table.split('\n').map((l) => l.trimEnd()));
  }
  if (t.droppedSteps > 0)
    out.push('', `(${t.droppedSteps} older steps were dropped: the per-pod record is bounded)`);
  return escapeTerminal(`${out.join('\n')}\n`);
}

function evidenceLines(e: Record<string, EvidenceValue> | undefined): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(e ?? {})) {
    if (Array.isArray(v)) {
      out.push(`      ${k}:`);
      for (const line of v) out.push(`        ${line}`);
    } else {
      out.push(`      ${k}: ${String(v)}`);
    }
  }
  return out;
}

/** The summary, then each finding: reason, container, since, message, evidence. */
export function formatWhy(w: PodWhy): string {
  const state = [w.phase, w.ready === undefined ? undefined : w.ready ? 'Ready' : 'not Ready']
    .filter((x) => x)
    .join(', ');
  const out = [`Pod ${w.namespace}/${w.name} (${w.uid})${state ? `: ${state}` : ''}`, '', w.summary];
  if (w.findings.length > 0) {
    out.push('', 'Findings:');
    for (const f of w.findings) {
      const head = [
        f.reason,
        f.container ? `container ${f.container}` : '',
        f.since ? `since ${f.since}` : '',
      ]
        .filter((x) => x)
        .join('  ');
      out.push(`  ${head}`, `    ${f.message}`);
      const ev = evidenceLines(f.evidence);
      if (ev.length > 0) out.push('    Evidence:', ...ev);
    }
  }
  return escapeTerminal(`${out.join('\n')}\n`);
}
