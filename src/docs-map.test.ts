// The folder map in docs/architecture.md ("Map") is the lint rule's map (eslint/boundaries.js), not a
// copy that can drift: the table's folders, their "may import" and "types only" columns equal
// FOLDERS; every nested contract (a sub-folder with an index.ts) has a row; every stage's key file
// exists; and the page has one section per folder, in map order.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { before, describe, it } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');
const SRC = path.join(ROOT, 'src');
const DOC = path.join(ROOT, 'docs', 'architecture.md');

interface FolderRule {
  uses: string[];
  types: string[];
}

function isFolderMap(v: unknown): v is Record<string, FolderRule> {
  if (typeof v !== 'object' || v === null) return false;
  return Object.values(v).every((r: unknown) => {
    if (typeof r !== 'object' || r === null || !('uses' in r) || !('types' in r)) return false;
    return Array.isArray(r.uses) && Array.isArray(r.types);
  });
}

/** The rows of the first table under `## <heading>`, each as its trimmed cells. */
function tableUnder(doc: string, heading: string): string[][] {
  const start = doc.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `docs/architecture.md has a "## ${heading}" section`);
  const rows: string[][] = [];
  let inTable = false;
  for (const line of doc.slice(start).split('\n').slice(2)) {
    if (line.startsWith('## ')) break;
    if (!line.startsWith('|')) {
      if (inTable) break;
      continue;
    }
    inTable = true;
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  return rows.slice(2); // header and separator
}

/** The backquoted names in a cell: "`util`, `api`" → ['util', 'api']. */
function names(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');
}

/** A "may import" / "types only" cell as the rule's list (sorted; '*' for everything). */
function imports(cell: string, all: string[]): string[] {
  if (cell === 'everything') return ['*'];
  if (cell === 'nothing' || cell === '—' || cell === '') return [];
  const m = /^every folder but (.*)$/.exec(cell);
  if (m) {
    const but = new Set(names(m[1] ?? ''));
    return all.filter((f) => !but.has(f) && f !== 'kubelet').sort();
  }
  return names(cell).sort();
}

/** Every folder below src/ (nested, at any depth) that has an index.ts: a contract of its own. */
function nestedContracts(dir = SRC, rel = ''): string[] {
  const found: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (rel && existsSync(path.join(dir, e.name, 'index.ts'))) found.push(r);
    found.push(...nestedContracts(path.join(dir, e.name), r));
  }
  return found.sort();
}

describe('the folder map in docs/architecture.md', () => {
  let folders: Record<string, FolderRule>;
  let doc: string;
  let rows: string[][];

  before(async () => {
    const mod: unknown = await import(pathToFileURL(path.join(ROOT, 'eslint', 'boundaries.js')).href);
    const map = typeof mod === 'object' && mod !== null && 'FOLDERS' in mod ? mod.FOLDERS : undefined;
    assert.ok(isFolderMap(map), 'eslint/boundaries.js exports FOLDERS');
    folders = map;
    doc = readFileSync(DOC, 'utf8');
    rows = tableUnder(doc, 'Map');
  });

  it('is the first section of the page', () => {
    const first = doc.split('\n').find((l) => l.startsWith('## '));
    assert.equal(first, '## Map');
  });

  it("lists the lint rule's folders, in its order, with the same imports", () => {
    const all = Object.keys(folders);
    const top = rows.filter((r) => !(r[0] ?? '').slice(1, -2).includes('/'));
    assert.deepEqual(
      top.map((r) => (r[0] ?? '').replace(/^`|\/`$/g, '')),
      all,
      'folder column = FOLDERS (eslint/boundaries.js)',
    );
    for (const [cell, , , uses, types] of top) {
      const folder = (cell ?? '').replace(/^`|\/`$/g, '');
      const rule = folders[folder];
      assert.ok(rule, folder);
      assert.deepEqual(imports(uses ?? '', all), [...rule.uses].sort(), `${folder}/: "may import"`);
      assert.deepEqual(imports(types ?? '', all), [...rule.types].sort(), `${folder}/: "types only"`);
    }
  });

  it('has a row for every nested contract (a sub-folder with an index.ts), and no other', () => {
    const nested = rows
      .map((r) => (r[0] ?? '').replace(/^`|\/`$/g, ''))
      .filter((f) => f.includes('/'))
      .sort();
    assert.deepEqual(nested, nestedContracts());
  });

  it("names stage key files that exist in the stage's folders", () => {
    const start = doc.indexOf('\n| stage | folder | key file |');
    assert.ok(start >= 0, 'the Map section has a stage table');
    const lines = doc.slice(start + 1).split('\n');
    const end = lines.findIndex((l) => !l.startsWith('|'));
    const stageRows = lines.slice(2, end).map((l) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
    assert.equal(stageRows.length, 12, 'twelve stages');
    for (const [stage, dirs, files] of stageRows) {
      const where = names(dirs ?? '').map((d) => path.join(SRC, d));
      for (const file of names(files ?? '')) {
        const ok = where.some((d) => existsSync(path.join(d, file)));
        assert.ok(ok, `${stage}: ${file} exists in ${dirs}`);
      }
    }
  });

  it('has one section per folder, in map order', () => {
    const sections = doc
      .split('\n')
      .filter((l) => l.startsWith('## ') && /^## [a-z]+\/:/.test(l))
      .map((l) => (/^## ([a-z]+)\//.exec(l) ?? [])[1]);
    assert.deepEqual(sections, Object.keys(folders));
  });
});
