/**
 * `get pods` output as kubectl prints it: the table (`NAME READY STATUS RESTARTS AGE`, with `-o
 * wide` also `IP NODE NOMINATED NODE READINESS GATES`, with `-A` a leading `NAMESPACE`), `-o json`
 * (a `List` for several pods, 4-space indent), `-o yaml`, `-o name` (`pod/NAME`), `-o jsonpath=`
 * and `-o custom-columns=` (jsonpath.ts; kubectl's printers/jsonpath.go, customcolumn.go), and the
 * table options `--show-labels` (a last LABELS column) and `--no-headers`. What comes
 * from the pod is escaped for the terminal (terminal-text.ts): cells before alignment, JSON and YAML
 * with escapes that parse back to the same text.
 */
import { stringify } from 'yaml';
import type { Pod } from '../../api/types.ts';
import { executeTemplate, findValues, parseTemplate, textOf } from './jsonpath.ts';
import { podRow, type PodRow } from './pod-row.ts';
import { TABLE_TABS, tabwrite } from './tabwriter.ts';
import { escapeTerminal, jsonForTerminal, yamlForTerminal } from './terminal-text.ts';

export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml' | 'name' | 'jsonpath' | 'custom-columns';

const FORMATS: Readonly<Record<string, OutputFormat>> = {
  '': 'table',
  wide: 'wide',
  json: 'json',
  yaml: 'yaml',
  name: 'name',
};

/** The `-o` value's format (`jsonpath=…`, `custom-columns=…` by their prefix), or kubectl's error. */
export function parseOutputFormat(value: string | undefined): OutputFormat {
  const v = value ?? '';
  if (v.startsWith('jsonpath=')) return 'jsonpath';
  if (v.startsWith('custom-columns=')) return 'custom-columns';
  const f = FORMATS[v];
  if (!f) {
    throw new Error(
      `unable to match a printer suitable for the output format "${v}", allowed formats are: custom-columns,json,jsonpath,name,wide,yaml`,
    );
  }
  return f;
}

/** A parsed `-o jsonpath=` or `-o custom-columns=` argument. */
export type TemplateOutput =
  | { kind: 'jsonpath'; template: ReturnType<typeof parseTemplate> }
  | { kind: 'custom-columns'; columns: { header: string; template: ReturnType<typeof parseTemplate> }[] };

/**
 * kubectl's custom-columns spec `HEADER:PATH,...` (printers/customcolumn.go NewCustomColumnsPrinterFromSpec;
 * a path without braces is wrapped in `{}`, one without a leading dot gets one: RelaxedJSONPathExpression).
 */
function relaxed(path: string): string {
  const p = path.trim();
  if (p.startsWith('{') && p.endsWith('}')) return p;
  return `{${p.startsWith('.') || p.startsWith('$') ? p : `.${p}`}}`;
}

export function parseTemplateOutput(value: string): TemplateOutput {
  if (value.startsWith('jsonpath=')) {
    const t = value.slice('jsonpath='.length);
    if (t === '') throw new Error('template format specified but no template given');
    return { kind: 'jsonpath', template: parseTemplate(t) };
  }
  const spec = value.slice('custom-columns='.length);
  if (spec === '') throw new Error('custom-columns format specified but no custom columns given');
  const columns = spec.split(',').map((part) => {
    const idx = part.indexOf(':');
    if (idx <= 0)
      throw new Error(`unexpected custom-columns spec: ${part}, expected <header>:<json-path-expr>`);
    return { header: part.slice(0, idx), template: parseTemplate(relaxed(part.slice(idx + 1))) };
  });
  return { kind: 'custom-columns', columns };
}

/** The object a template sees: the pod when one was asked for, else the `v1 List`. */
function templateData(pods: readonly Pod[], single: boolean): unknown {
  const items = pods.map((p) => ({ apiVersion: 'v1', kind: 'Pod', ...p }));
  return single && items.length === 1 ? items[0] : listOf(items);
}

/**
 * `-o jsonpath=` (printed as it comes, no newline added, as kubectl) or `-o custom-columns=` (a
 * column per spec entry, values joined by `,`, `<none>` when a path finds nothing).
 */
export function formatTemplate(
  pods: readonly Pod[],
  out: TemplateOutput,
  single: boolean,
  noHeaders = false,
): string {
  if (out.kind === 'jsonpath')
    return escapeTerminal(executeTemplate(out.template, templateData(pods, single)));
  const rows = noHeaders ? [] : [out.columns.map((c) => c.header)];
  for (const p of pods) {
    const obj = { apiVersion: 'v1', kind: 'Pod', ...p };
    rows.push(
      out.columns.map((c) => {
        const values = findValues(c.template, obj).flat();
        return values.length === 0 ? '<none>' : escapeTerminal(values.map(textOf).join(','));
      }),
    );
  }
  return tabwrite(rows.map((cells) => `${cells.join('\t')}\n`).join(''), TABLE_TABS);
}

export interface TableOptions {
  wide: boolean;
  allNamespaces: boolean;
  /** `--show-labels`: a last LABELS column. */
  showLabels?: boolean;
  /** `--no-headers`. */
  noHeaders?: boolean;
}

/** apimachinery labels.FormatLabels: `k=v` sorted by key, joined by `,`; `<none>` when none. */
export function formatLabels(labels: Readonly<Record<string, string>> | undefined): string {
  const keys = Object.keys(labels ?? {}).sort();
  return keys.length === 0 ? '<none>' : keys.map((k) => `${k}=${labels?.[k] ?? ''}`).join(',');
}

/** The header cells of the table. */
export function headerCells(opts: TableOptions): string[] {
  return [
    ...(opts.allNamespaces ? ['NAMESPACE'] : []),
    'NAME',
    'READY',
    'STATUS',
    'RESTARTS',
    'AGE',
    ...(opts.wide ? ['IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES'] : []),
    ...(opts.showLabels ? ['LABELS'] : []),
  ];
}

/** A row's cells, in the header's order, escaped for the terminal. */
export function rowCells(r: PodRow, opts: TableOptions, labels?: Readonly<Record<string, string>>): string[] {
  const cells = [
    ...(opts.allNamespaces ? [r.namespace] : []),
    r.name,
    r.ready,
    r.status,
    r.restarts,
    r.age,
    ...(opts.wide ? [r.ip, r.node, r.nominatedNode, r.readinessGates] : []),
    ...(opts.showLabels ? [formatLabels(labels)] : []),
  ];
  return cells.map(escapeTerminal);
}

/** The table of `pods`, header first, aligned as kubectl's tabwriter aligns it. */
export function podTable(pods: readonly Pod[], opts: TableOptions, now: number): string {
  const lines = [
    ...(opts.noHeaders ? [] : [headerCells(opts)]),
    ...pods.map((p) => rowCells(podRow(p, now), opts, p.metadata.labels)),
  ];
  return tabwrite(lines.map((cells) => `${cells.join('\t')}\n`).join(''), TABLE_TABS);
}

/** kubectl's JSON: 4-space indent; a list of pods is a `v1 List`. */
export function podsJSON(pods: readonly Pod[], single: boolean): string {
  const items = pods.map((p) => ({ apiVersion: 'v1', kind: 'Pod', ...p }));
  const doc = single && items.length === 1 ? items[0] : listOf(items);
  return `${jsonForTerminal(doc, 4)}\n`;
}

export function podsYAML(pods: readonly Pod[], single: boolean): string {
  const items = pods.map((p) => ({ apiVersion: 'v1', kind: 'Pod', ...p }));
  const doc = single && items.length === 1 ? items[0] : listOf(items);
  return yamlForTerminal(stringify(doc, { indentSeq: false, lineWidth: 0 }));
}

function listOf(items: unknown[]): Record<string, unknown> {
  return { apiVersion: 'v1', items, kind: 'List', metadata: { resourceVersion: '' } };
}

export function podNames(pods: readonly Pod[]): string {
  return pods.map((p) => `pod/${escapeTerminal(p.metadata.name ?? '')}\n`).join('');
}

/** Everything but the table (which `get` prints itself, to keep its column widths for `-w`). */
export function formatPods(pods: readonly Pod[], format: OutputFormat, single: boolean): string {
  switch (format) {
    case 'json':
      return podsJSON(pods, single);
    case 'yaml':
      return podsYAML(pods, single);
    case 'name':
      return podNames(pods);
    case 'table':
    case 'wide':
      throw new Error(`formatPods: ${format} is printed by podTable`);
    case 'jsonpath':
    case 'custom-columns':
      throw new Error(`formatPods: ${format} is printed by formatTemplate`);
  }
}
