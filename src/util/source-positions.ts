/**
 * Source positions of the bundled build (no upstream counterpart: Go binaries carry their file
 * names and lines, and klog prints them). bin/tskubelet and the Debian package run one esbuild
 * bundle, whose code sits in `main.js` and a few chunks; scripts/build.sh writes beside each of
 * them a line table, `<file>.positions.json`, made from esbuild's source map: for every line of
 * the bundle, the source file and line it came from. The logger names its caller from it (klog's
 * `file:line`, and what `--vmodule` matches), and the profile summaries name their frames.
 *
 * The table is read once per bundle file, on first use: ~0.6 MiB for the whole bundle, against the
 * source map's ~5 MiB that Node's --enable-source-maps would keep. Files without a table (the .ts
 * sources the tests run) keep their own names and lines.
 */
import { readFileSync } from 'node:fs';
import { errnoCode } from './errors.ts';

/** A position in a source file (repository-relative path, 1-based line). */
export interface SourcePosition {
  file: string;
  line: number;
}

/** What scripts/build.sh writes beside a bundle file. */
export interface PositionTable {
  /** Repository-relative source paths, indexed by the table. */
  sources: string[];
  /**
   * Per bundle line (0-based index = line − 1), two little-endian int32s: the source's index and
   * its 1-based line; −1, −1 for a line that maps to nothing (its predecessor's position counts).
   */
  lines: string;
}

export const POSITION_TABLE_SUFFIX = '.positions.json';

interface Loaded {
  sources: string[];
  lines: Int32Array;
}

const tables = new Map<string, Loaded | null>();

function load(file: string): Loaded | null {
  let raw: string;
  try {
    raw = readFileSync(file + POSITION_TABLE_SUFFIX, 'utf8');
  } catch (err) {
    // No table: a source file, or a build without one. Remembered, so it is looked for once.
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return null;
    throw err;
  }
  const t = JSON.parse(raw) as PositionTable;
  const bytes = Buffer.from(t.lines, 'base64');
  return { sources: t.sources, lines: new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4) };
}

/**
 * The source position of line `line` (1-based) of JavaScript file `file` (a path), when `file` is
 * part of the bundle; undefined otherwise (and for a line before any mapped one).
 */
export function sourcePosition(file: string, line: number): SourcePosition | undefined {
  let t = tables.get(file);
  if (t === undefined) {
    t = file.endsWith('.js') ? load(file) : null;
    tables.set(file, t);
  }
  if (!t) return undefined;
  for (let i = Math.min(line, t.lines.length / 2) - 1; i >= 0; i--) {
    const src = t.lines[2 * i] ?? -1;
    if (src >= 0) return { file: t.sources[src] ?? '???', line: t.lines[2 * i + 1] ?? 1 };
  }
  return undefined;
}

/** The fields of a source map (version 3) the table is made from. */
export interface SourceMapV3 {
  version: number;
  sources: string[];
  sourceRoot?: string;
  mappings: string;
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64_VALUE = new Map([...BASE64].map((c, i) => [c, i]));

/** Decodes one segment's base64 VLQ fields. */
function decodeSegment(segment: string): number[] {
  const out: number[] = [];
  let value = 0;
  let shift = 0;
  for (const c of segment) {
    const digit = BASE64_VALUE.get(c);
    if (digit === undefined) throw new Error(`source map: bad character ${JSON.stringify(c)} in mappings`);
    value += (digit & 31) * 2 ** shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    out.push(value % 2 === 1 ? -(value - 1) / 2 : value / 2);
    value = 0;
    shift = 0;
  }
  return out;
}

/**
 * The line table of one bundle file from its source map: per generated line, the source and line
 * of its first mapped segment. `resolveSource` turns a map's source entry into the path the
 * table records (repository-relative).
 */
export function positionTableFromSourceMap(
  map: SourceMapV3,
  resolveSource: (source: string) => string,
): PositionTable {
  if (map.version !== 3) throw new Error(`source map: version ${map.version}, not 3`);
  const lines = map.mappings.split(';');
  const table = new Int32Array(lines.length * 2).fill(-1);
  // Source index, original line and column carry over from segment to segment, across lines.
  let source = 0;
  let originalLine = 0;
  lines.forEach((text, i) => {
    let first = true;
    for (const segment of text.split(',')) {
      if (segment === '') continue;
      const f = decodeSegment(segment);
      if (f.length < 4) continue;
      source += f[1] ?? 0;
      originalLine += f[2] ?? 0;
      if (first) {
        table[2 * i] = source;
        table[2 * i + 1] = originalLine + 1;
        first = false;
      }
    }
  });
  const root = map.sourceRoot ?? '';
  return {
    sources: map.sources.map((s) => resolveSource(root + s)),
    lines: Buffer.from(table.buffer, table.byteOffset, table.byteLength).toString('base64'),
  };
}
