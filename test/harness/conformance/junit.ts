/**
 * Ginkgo v1 JUnit reports (one `junit_NN.xml` per parallel node, as test/e2e writes them) → one
 * outcome per spec; the summary table; the comparison of two runs. Pure functions, no I/O.
 *
 * Ginkgo's reporter writes every spec the node iterated, including those the focus/skip regexes
 * filtered out (as `<skipped/>`, never started): the caller's focus/skip decide which skipped specs
 * were in the run and which were filtered.
 */

export type Outcome = 'passed' | 'failed' | 'skipped' | 'not-run';

export interface SpecResult {
  /** Ginkgo's full spec text without "[Top Level]", e.g. `[k8s.io] Pods should get a host IP [NodeConformance]`. */
  name: string;
  outcome: Outcome;
  /** Seconds, as reported. */
  seconds: number;
  /** For failures: the whole failure text (code location, message, location). */
  failure?: string;
  /** For failures: `Failure`, `Timeout` or `Panic`. */
  failureType?: string;
}

interface RawCase {
  name: string;
  seconds: number;
  failure?: { type: string; text: string };
  skipped: boolean;
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** XML character data / attribute value → text (entities and character references). */
export function decodeXml(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, ent: string) => {
    if (ent.startsWith('#x')) return String.fromCodePoint(Number.parseInt(ent.slice(2), 16));
    if (ent.startsWith('#')) return String.fromCodePoint(Number.parseInt(ent.slice(1), 10));
    return ENTITIES[ent] ?? whole;
  });
}

function attrs(tag: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of tag.matchAll(/([A-Za-z_:][\w:.-]*)\s*=\s*("([^"]*)"|'([^']*)')/g)) {
    out.set(m[1] ?? '', decodeXml(m[3] ?? m[4] ?? ''));
  }
  return out;
}

/** Text content of an element body: CDATA sections verbatim, the rest entity-decoded. */
function textOf(body: string): string {
  let out = '';
  let rest = body;
  for (;;) {
    const i = rest.indexOf('<![CDATA[');
    if (i < 0) break;
    out += decodeXml(rest.slice(0, i));
    const end = rest.indexOf(']]>', i);
    if (end < 0) return out + rest.slice(i + 9);
    out += rest.slice(i + 9, end);
    rest = rest.slice(end + 3);
  }
  return out + decodeXml(rest);
}

/**
 * The `<testcase>` elements of one Ginkgo JUnit document. Ginkgo's reporter (encoding/xml) writes
 * a flat structure: `<testsuite>` › `<testcase name classname time>` › optional `<failure type>`,
 * `<skipped>`, `<system-out>`.
 */
function parseCases(xml: string): RawCase[] {
  const cases: RawCase[] = [];
  const re = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const m of xml.matchAll(re)) {
    const a = attrs(m[1] ?? '');
    const body = m[3] ?? '';
    const c: RawCase = {
      name: a.get('name') ?? '',
      seconds: Number.parseFloat(a.get('time') ?? '0') || 0,
      skipped: /<skipped\b/.test(body),
    };
    const f = /<failure\b([^>]*?)(\/>|>([\s\S]*?)<\/failure>)/.exec(body);
    if (f) c.failure = { type: attrs(f[1] ?? '').get('type') ?? '', text: textOf(f[3] ?? '') };
    cases.push(c);
  }
  return cases;
}

export interface Selection {
  /** Go regexp (the subset JavaScript shares) matched against the spec text. */
  focus: string;
  /** Empty: nothing is skipped by name. */
  skip: string;
}

/** Whether `name` is selected by focus and skip, as ginkgo decides before running a spec. */
export function selects(sel: Selection, name: string): boolean {
  const text = `[Top Level] ${name}`;
  if (sel.focus !== '' && !new RegExp(sel.focus).test(text)) return false;
  return sel.skip === '' || !new RegExp(sel.skip).test(text);
}

export interface RunResults {
  /** Every selected spec, by name; `not-run` for those no report mentions (the run was cut short). */
  specs: Map<string, SpecResult>;
  /** Failures outside specs: `BeforeSuite` / `AfterSuite` entries. */
  suiteFailures: SpecResult[];
}

/**
 * Merges the documents of one run. `selected` (e.g. from a dry run) lists the specs that should
 * have run; those missing from every document become `not-run`. Skipped cases outside the
 * selection are dropped (filtered by focus/skip, never started).
 */
export function mergeReports(
  xmlDocs: readonly string[],
  sel: Selection,
  selected?: readonly string[],
): RunResults {
  const specs = new Map<string, SpecResult>();
  const suiteFailures: SpecResult[] = [];
  for (const xml of xmlDocs) {
    for (const c of parseCases(xml)) {
      if (c.name === 'BeforeSuite' || c.name === 'AfterSuite') {
        suiteFailures.push({
          name: c.name,
          outcome: 'failed',
          seconds: c.seconds,
          failure: c.failure?.text ?? '',
        });
        continue;
      }
      const outcome: Outcome = c.failure ? 'failed' : c.skipped ? 'skipped' : 'passed';
      if (outcome === 'skipped' && !selects(sel, c.name)) continue;
      const r: SpecResult = { name: c.name, outcome, seconds: c.seconds };
      if (c.failure) {
        r.failure = c.failure.text;
        r.failureType = c.failure.type;
      }
      // The same name twice (a table entry, or two nodes): a failure wins over a pass.
      const prev = specs.get(c.name);
      if (!prev || rank(outcome) > rank(prev.outcome)) specs.set(c.name, r);
    }
  }
  for (const name of selected ?? []) {
    if (!specs.has(name)) specs.set(name, { name, outcome: 'not-run', seconds: 0 });
  }
  return { specs, suiteFailures };
}

function rank(o: Outcome): number {
  return { 'not-run': 0, skipped: 1, passed: 2, failed: 3 }[o];
}

const LOCATION = /^\/?[\w./@+-]+\.go:\d+$/;

/**
 * One line saying why a spec failed. Ginkgo's text is `<code location>\n<message>\n<location>`;
 * the message often starts with a generic line (`Unexpected error:`, `Expected`, gomega's
 * `Timed out after 60.001s.`), so the next substantive line (e.g. an error's `s: "..."`) is appended.
 */
export function failureReason(text: string, maxLength = 220): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !LOCATION.test(l));
  if (lines.length === 0) return '(no failure message)';
  // e2e's log prefix (`Nov 24 03:29:35.944: `) says nothing about the failure.
  let reason = (lines[0] ?? '').replace(/^[A-Z][a-z]{2} +\d{1,2} [\d:.]+: /, '');
  if (/:$|^Expected$|^Timed out after [\d.]+s\.$/.test(reason)) {
    const detail =
      lines.slice(1).find((l) => /^s: "/.test(l)) ?? lines.slice(1).find((l) => !/^[<{}[\]]/.test(l));
    if (detail) reason = `${reason} ${detail.replace(/^s: /, '')}`;
  }
  reason = reason.replace(/\s+/g, ' ');
  return reason.length > maxLength ? `${reason.slice(0, maxLength - 1)}…` : reason;
}

export interface Counts {
  selected: number;
  passed: number;
  failed: number;
  skipped: number;
  notRun: number;
}

export function countOutcomes(r: RunResults): Counts {
  const c: Counts = { selected: r.specs.size, passed: 0, failed: 0, skipped: 0, notRun: 0 };
  for (const s of r.specs.values()) {
    if (s.outcome === 'passed') c.passed++;
    else if (s.outcome === 'failed') c.failed++;
    else if (s.outcome === 'skipped') c.skipped++;
    else c.notRun++;
  }
  return c;
}

function mdCell(s: string): string {
  return s.replace(/\|/g, '\\|');
}

/** The summary as markdown: the counts, then each failed spec with its reason. */
export function summaryMarkdown(title: string, r: RunResults): string {
  const c = countOutcomes(r);
  const out = [
    `### ${title}`,
    '',
    '| selected | passed | failed | skipped | not run |',
    '|---:|---:|---:|---:|---:|',
    `| ${c.selected} | ${c.passed} | ${c.failed} | ${c.skipped} | ${c.notRun} |`,
    '',
  ];
  for (const f of r.suiteFailures)
    out.push(`**${f.name} failed**: ${mdCell(failureReason(f.failure ?? ''))}`, '');
  const failed = [...r.specs.values()].filter((s) => s.outcome === 'failed').sort(byName);
  if (failed.length > 0) {
    out.push('| failed spec | first line of the failure |', '|---|---|');
    for (const s of failed) out.push(`| ${mdCell(s.name)} | ${mdCell(failureReason(s.failure ?? ''))} |`);
    out.push('');
  }
  const notRun = [...r.specs.values()].filter((s) => s.outcome === 'not-run').sort(byName);
  if (notRun.length > 0) {
    out.push(`Not run (the run ended first): ${notRun.length}`, '');
    for (const s of notRun) out.push(`- ${s.name}`);
    out.push('');
  }
  return out.join('\n');
}

function byName(a: SpecResult, b: SpecResult): number {
  return a.name.localeCompare(b.name);
}

export interface Difference {
  name: string;
  left: Outcome | 'absent';
  right: Outcome | 'absent';
  /** Failure reason on whichever side failed (the left one if both did). */
  reason: string;
}

/** Specs whose outcome differs between two runs, sorted by name. */
export function compareRuns(left: RunResults, right: RunResults): Difference[] {
  const names = new Set([...left.specs.keys(), ...right.specs.keys()]);
  const out: Difference[] = [];
  for (const name of names) {
    const l = left.specs.get(name);
    const r = right.specs.get(name);
    const lo = l?.outcome ?? 'absent';
    const ro = r?.outcome ?? 'absent';
    if (lo === ro) continue;
    const failed = l?.outcome === 'failed' ? l : r?.outcome === 'failed' ? r : undefined;
    out.push({ name, left: lo, right: ro, reason: failed ? failureReason(failed.failure ?? '') : '' });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

export function comparisonMarkdown(
  leftName: string,
  rightName: string,
  diffs: readonly Difference[],
): string {
  if (diffs.length === 0) return `No spec has a different outcome for ${leftName} and ${rightName}.\n`;
  const out = [`| spec | ${leftName} | ${rightName} | first line of the failure |`, '|---|---|---|---|'];
  for (const d of diffs) out.push(`| ${mdCell(d.name)} | ${d.left} | ${d.right} | ${mdCell(d.reason)} |`);
  return out.join('\n') + '\n';
}
