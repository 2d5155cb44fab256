/**
 * Summaries of results folders written earlier (`--report DIR [DIR2]`): each pass folder holds the
 * JUnit reports and `selection.json` (the focus, skip and the specs the dry run selected).
 */
import { readFile, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { KubeletError } from '../../../src/util/errors.ts';
import { compareRuns, comparisonMarkdown, mergeReports, summaryMarkdown, type RunResults } from './junit.ts';
import type { Pass } from './passes.ts';

export const SELECTION_FILE = 'selection.json';

interface SavedSelection extends Pass {
  selected: string[];
}

/** Every pass folder of one results folder → its results. */
export async function loadResults(dir: string): Promise<Map<string, RunResults>> {
  const out = new Map<string, RunResults>();
  const entries = await readdir(dir, { withFileTypes: true }).catch((err: unknown) => {
    throw new KubeletError('NotFound', 'read results', `cannot list ${dir}`, { cause: err });
  });
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    const passDir = join(dir, e.name);
    const sel = await readFile(join(passDir, SELECTION_FILE), 'utf8').then(
      (t) => JSON.parse(t) as SavedSelection,
      () => undefined, // not a pass folder
    );
    if (!sel) continue;
    const files = (await readdir(passDir)).filter((f) => /^junit.*\.xml$/.test(f)).sort();
    const docs = await Promise.all(files.map((f) => readFile(join(passDir, f), 'utf8')));
    out.set(e.name, mergeReports(docs, sel, sel.selected));
  }
  if (out.size === 0)
    throw new KubeletError('NotFound', 'read results', `no pass folder with ${SELECTION_FILE} in ${dir}`);
  return out;
}

/** The summary of one folder, or of two and the specs whose outcome differs between them. */
export async function reprint(dirs: readonly string[]): Promise<string> {
  const loaded = await Promise.all(
    dirs.map(async (d) => ({ name: basename(d), results: await loadResults(d) })),
  );
  const out: string[] = [];
  for (const l of loaded)
    for (const [pass, r] of l.results) out.push(summaryMarkdown(`${l.name} · ${pass}`, r));
  const [a, b] = loaded;
  if (a && b) {
    for (const [pass, ra] of a.results) {
      const rb = b.results.get(pass);
      if (rb)
        out.push(
          `### ${pass}: ${a.name} vs ${b.name}`,
          '',
          comparisonMarkdown(a.name, b.name, compareRuns(ra, rb)),
        );
    }
  }
  return out.join('\n');
}
