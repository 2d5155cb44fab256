/**
 * The reliability suite's results and their report (docs/reliability.md): for every fault, what was
 * done to the kubelet, how many times, what was checked and what was seen; for every fuzzed input
 * surface, how many cases and how many crashes, hangs and unclear rejections.
 */

/** One thing a scenario checked: what should hold, what was seen, whether it held. */
export interface Check {
  what: string;
  expected: string;
  observed: string;
  ok: boolean;
}

export interface ScenarioResult {
  id: string;
  /** What was done to the kubelet (one line, for the table). */
  fault: string;
  repetitions: number;
  checks: Check[];
  durationMs: number;
  /** Figures worth keeping beside the checks (counts, latencies). */
  notes?: string[];
  /** Set by the runner: when, at which commit, in which mode. */
  recorded?: Recorded;
}

export interface Recorded {
  date: string;
  commit: string;
  mode: 'quick' | 'full';
}

export interface FuzzResult {
  surface: string;
  cases: number;
  accepted: number;
  rejected: number;
  /** Inputs that threw something other than a clear, typed rejection. */
  crashes: number;
  /** Inputs that took longer than the surface's per-case bound. */
  hangs: number;
  /** Rejections whose message does not name what was wrong. */
  unclear: number;
  durationMs: number;
  /** The first failures, shrunk, for the report. */
  examples: string[];
  recorded?: Recorded;
}

/** A check from a boolean and the two sides, so every row says what was expected and seen. */
export function check(what: string, expected: string, observed: string | number, ok: boolean): Check {
  return { what, expected, observed: String(observed), ok };
}

/** A count that must be exactly `want`. */
export function countIs(what: string, observed: number, want = 0): Check {
  return check(what, String(want), observed, observed === want);
}

/** A figure that must stay at or below `max`. */
export function atMost(what: string, observed: number, max: number, unit = ''): Check {
  const u = unit ? ` ${unit}` : '';
  return check(what, `≤ ${max}${u}`, `${round(observed)}${u}`, observed <= max);
}

export function round(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(Math.abs(n) < 10 ? 2 : 1);
}

export function passed(r: ScenarioResult): boolean {
  return r.checks.length > 0 && r.checks.every((c) => c.ok);
}

export function fuzzPassed(r: FuzzResult): boolean {
  return r.cases > 0 && r.crashes === 0 && r.hangs === 0 && r.unclear === 0;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export interface ReportMeta {
  machine: string;
  /** How to produce it again. */
  command: string;
}

const when = (r: { recorded?: Recorded }) =>
  r.recorded ? `${r.recorded.date}, ${r.recorded.commit}${r.recorded.mode === 'quick' ? ', quick' : ''}` : '';

/** The markdown report: a summary table, then each scenario's checks and notes, then fuzzing. */
export function renderReport(meta: ReportMeta, scenarios: ScenarioResult[], fuzz: FuzzResult[]): string {
  const lines: string[] = [];
  const ok = scenarios.filter(passed).length;
  const fuzzOk = fuzz.filter(fuzzPassed).length;
  lines.push('# Reliability', '');
  lines.push(
    `Written by \`${meta.command}\` on ${meta.machine}; each section says when and at which commit ` +
      'it last ran (a run of some scenarios keeps the others’ last results).',
    '',
    `Faults: ${ok}/${scenarios.length} scenarios pass. Fuzzing: ${fuzzOk}/${fuzz.length} surfaces with ` +
      `0 crashes, 0 hangs, 0 unclear rejections (${fuzz.reduce((n, f) => n + f.cases, 0)} cases).`,
    '',
  );
  if (scenarios.length > 0) {
    lines.push('## Faults', '', '| fault | repetitions | checked | result | run |', '|---|---|---|---|---|');
    for (const r of scenarios) {
      const failed = r.checks.filter((c) => !c.ok).length;
      lines.push(
        `| ${cell(r.fault)} | ${r.repetitions} | ${r.checks.length} checks | ` +
          `${passed(r) ? 'pass' : `**FAIL** (${failed} failed)`} | ${when(r)} |`,
      );
    }
    lines.push('');
    for (const r of scenarios) {
      lines.push(`### ${r.id}: ${r.fault}`, '');
      lines.push(`${r.repetitions} repetitions, ${Math.round(r.durationMs / 1000)} s (${when(r)}).`, '');
      lines.push('| check | expected | observed | |', '|---|---|---|---|');
      for (const c of r.checks) {
        lines.push(
          `| ${cell(c.what)} | ${cell(c.expected)} | ${cell(c.observed)} | ${c.ok ? 'ok' : '**FAIL**'} |`,
        );
      }
      lines.push('');
      for (const n of r.notes ?? []) lines.push(`- ${n}`);
      if ((r.notes ?? []).length > 0) lines.push('');
    }
  }
  if (fuzz.length > 0) {
    lines.push(
      '## Fuzzing (fast-check)',
      '',
      '| surface | cases | accepted | rejected | crashes | hangs | unclear | time | run |',
      '|---|---|---|---|---|---|---|---|---|',
    );
    for (const f of fuzz) {
      lines.push(
        `| ${cell(f.surface)} | ${f.cases} | ${f.accepted} | ${f.rejected} | ${f.crashes} | ${f.hangs} | ` +
          `${f.unclear} | ${Math.round(f.durationMs / 1000)} s | ${when(f)} |`,
      );
    }
    lines.push('');
    for (const f of fuzz.filter((x) => x.examples.length > 0)) {
      lines.push(`- ${f.surface}: ${f.examples.map(cell).join('; ')}`);
    }
  }
  return lines.join('\n') + '\n';
}
