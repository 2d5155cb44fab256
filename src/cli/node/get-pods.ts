/**
 * `tskubelet get pods [NAME] [-o wide|json|yaml|name|jsonpath=…|custom-columns=…] [-l SELECTOR]
 * [--show-labels] [--no-headers] [-w] [-A | -n NS]`: the kubelet's pods
 * (`/pods`, static ones included) printed as kubectl prints them. `-w` polls `/pods` every second
 * (the kubelet API has no watch) and prints a pod again whenever its row (or, for -o json/yaml/name,
 * its object) changes; AGE ticking alone is not a change.
 */
import type { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pod } from '../../api/types.ts';
import { listPods, namespaceOf, type GlobalOptions, type NodeClient } from './common.ts';
import { parseSelector, type LabelMatcher } from './label-selector.ts';
import {
  formatPods,
  formatTemplate,
  headerCells,
  parseOutputFormat,
  parseTemplateOutput,
  podTable,
  rowCells,
  type OutputFormat,
  type TableOptions,
} from './pod-printer.ts';
import { podRow } from './pod-row.ts';

export interface GetPodsOptions extends GlobalOptions {
  output?: string;
  watch?: boolean;
  allNamespaces?: boolean;
  /** `-l`: a label selector (label-selector.ts). */
  selector?: string;
  showLabels?: boolean;
  noHeaders?: boolean;
}

export interface CommandIO {
  out: Writable;
  /** Whether `out` is a terminal (pod text is then escaped even where it is otherwise raw: logs). */
  outIsTerminal?: boolean;
  err: Writable;
  signal: AbortSignal;
  now: () => number;
  /** Poll period of `-w` (ms). */
  watchPeriodMs?: number;
}

const WATCH_PERIOD_MS = 1_000;

function select(pods: Pod[], name: string | undefined, opts: GetPodsOptions, matches?: LabelMatcher): Pod[] {
  const ns = namespaceOf(opts);
  return pods
    .filter((p) => opts.allNamespaces || (p.metadata.namespace ?? 'default') === ns)
    .filter((p) => matches === undefined || matches(p.metadata.labels))
    .filter((p) => name === undefined || p.metadata.name === name)
    .sort((a, b) => {
      const ka = `${a.metadata.namespace ?? ''}/${a.metadata.name ?? ''}`;
      const kb = `${b.metadata.namespace ?? ''}/${b.metadata.name ?? ''}`;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
}

function keyOf(p: Pod): string {
  return p.metadata.uid ?? `${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`;
}

/** Pads a row to the widths the header and first rows set (growing them when a cell is wider). */
function paddedLine(cells: string[], widths: number[]): string {
  return cells
    .map((c, i) => {
      if (i === cells.length - 1) return c;
      widths[i] = Math.max(widths[i] ?? 0, c.length + 3, 6);
      return c.padEnd(widths[i] ?? 0);
    })
    .join('');
}

export async function runGetPods(
  client: NodeClient,
  name: string | undefined,
  opts: GetPodsOptions,
  io: CommandIO,
): Promise<number> {
  const format: OutputFormat = parseOutputFormat(opts.output);
  const template =
    format === 'jsonpath' || format === 'custom-columns' ? parseTemplateOutput(opts.output ?? '') : undefined;
  const matches = opts.selector !== undefined ? parseSelector(opts.selector) : undefined;
  const table: TableOptions = {
    wide: format === 'wide',
    allNamespaces: opts.allNamespaces === true,
    showLabels: opts.showLabels === true,
    noHeaders: opts.noHeaders === true,
  };
  const ns = namespaceOf(opts);
  const pods = select(await listPods(client, io.signal), name, opts, matches);
  if (name !== undefined && pods.length === 0 && !opts.watch) {
    io.err.write(`Error from server (NotFound): pods "${name}" not found\n`);
    return 1;
  }
  const seen = new Map<string, string>();
  const widths: number[] = [];
  /** What makes a pod worth printing again: its row without the ages, or its object. */
  const fingerprint = (p: Pod): string => {
    if (format !== 'table' && format !== 'wide') return JSON.stringify(p);
    const r = podRow(p, 0);
    const restarts = r.restarts.split(' ')[0] ?? '';
    return [
      r.namespace,
      r.name,
      r.ready,
      r.status,
      restarts,
      r.ip,
      r.node,
      r.nominatedNode,
      r.readinessGates,
    ].join('\t');
  };

  if (pods.length === 0 && !opts.watch) {
    io.err.write(opts.allNamespaces ? 'No resources found\n' : `No resources found in ${ns} namespace.\n`);
    return 0;
  }
  const print = (batch: Pod[], withHeader: boolean): void => {
    if (batch.length === 0 && !withHeader) return;
    if (template) {
      io.out.write(
        formatTemplate(batch, template, name !== undefined, table.noHeaders === true || !withHeader),
      );
      return;
    }
    if (format === 'table' || format === 'wide') {
      if (!opts.watch) {
        io.out.write(podTable(batch, table, io.now()));
        return;
      }
      const now = io.now();
      const lines = [
        ...(withHeader && !table.noHeaders ? [headerCells(table)] : []),
        ...batch.map((p) => rowCells(podRow(p, now), table, p.metadata.labels)),
      ];
      // The first screen sets the widths, as one tabwriter flush would.
      if (withHeader) {
        for (const cells of lines)
          cells.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length + 3, 6)));
      }
      for (const cells of lines) io.out.write(`${paddedLine(cells, widths)}\n`);
      return;
    }
    if (format === 'yaml' && opts.watch && !withHeader) io.out.write('---\n');
    io.out.write(formatPods(batch, format, name !== undefined || opts.watch === true));
  };

  if (!opts.watch) {
    print(pods, true);
    return 0;
  }
  // Watch: the current pods first (one by one for json/yaml, as kubectl's watch prints objects).
  for (const p of pods) seen.set(keyOf(p), fingerprint(p));
  if (format === 'table' || format === 'wide') print(pods, true);
  else pods.forEach((p, i) => print([p], i === 0));
  const period = io.watchPeriodMs ?? WATCH_PERIOD_MS;
  while (!io.signal.aborted) {
    try {
      await sleep(period, undefined, { signal: io.signal });
    } catch {
      break; // interrupted: a watch ends quietly, as kubectl's does on Ctrl-C
    }
    let current: Pod[];
    try {
      current = select(await listPods(client, io.signal), name, opts, matches);
    } catch (err) {
      if (io.signal.aborted) break;
      throw err;
    }
    const changed: Pod[] = [];
    for (const p of current) {
      const f = fingerprint(p);
      if (seen.get(keyOf(p)) !== f) changed.push(p);
      seen.set(keyOf(p), f);
    }
    print(changed, false);
  }
  return 0;
}
