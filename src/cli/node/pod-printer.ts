/**
 * `get pods` output as kubectl prints it: the table (`NAME READY STATUS RESTARTS AGE`, with `-o
 * wide` also `IP NODE NOMINATED NODE READINESS GATES`, with `-A` a leading `NAMESPACE`), `-o json`
 * (a `List` for several pods, 4-space indent), `-o yaml` and `-o name` (`pod/NAME`). What comes
 * from the pod is escaped for the terminal (terminal-text.ts): cells before alignment, JSON and YAML
 * with escapes that parse back to the same text.
 */
import { stringify } from 'yaml';
import type { Pod } from '../../api/types.ts';
import { podRow, type PodRow } from './pod-row.ts';
import { TABLE_TABS, tabwrite } from './tabwriter.ts';
import { escapeTerminal, jsonForTerminal, yamlForTerminal } from './terminal-text.ts';

export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml' | 'name';

const FORMATS: Readonly<Record<string, OutputFormat>> = {
  '': 'table',
  wide: 'wide',
  json: 'json',
  yaml: 'yaml',
  name: 'name',
};

/** The `-o` value, or an error naming the allowed ones (kubectl's wording). */
export function parseOutputFormat(value: string | undefined): OutputFormat {
  const f = FORMATS[value ?? ''];
  if (!f) {
    throw new Error(
      `unable to match a printer suitable for the output format "${value ?? ''}", allowed formats are: json,name,wide,yaml`,
    );
  }
  return f;
}

export interface TableOptions {
  wide: boolean;
  allNamespaces: boolean;
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
  ];
}

/** A row's cells, in the header's order, escaped for the terminal. */
export function rowCells(r: PodRow, opts: TableOptions): string[] {
  const cells = [
    ...(opts.allNamespaces ? [r.namespace] : []),
    r.name,
    r.ready,
    r.status,
    r.restarts,
    r.age,
    ...(opts.wide ? [r.ip, r.node, r.nominatedNode, r.readinessGates] : []),
  ];
  return cells.map(escapeTerminal);
}

/** The table of `pods`, header first, aligned as kubectl's tabwriter aligns it. */
export function podTable(pods: readonly Pod[], opts: TableOptions, now: number): string {
  const lines = [headerCells(opts), ...pods.map((p) => rowCells(podRow(p, now), opts))];
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
  }
}
