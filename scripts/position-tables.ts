/**
 * Writes the bundle's line tables (src/util/source-positions.ts) from esbuild's source maps, then
 * removes the maps (~5 MiB that nothing reads): for each DIR/X.js.map, DIR/X.js.positions.json.
 * Called by scripts/build.sh.
 *
 *   node scripts/position-tables.ts DIR
 */
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  POSITION_TABLE_SUFFIX,
  positionTableFromSourceMap,
  type SourceMapV3,
} from '../src/util/source-positions.ts';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node scripts/position-tables.ts DIR');
const repo = path.resolve(import.meta.dirname, '..');
const maps = (await readdir(dir)).filter((n) => n.endsWith('.js.map'));
if (maps.length === 0) throw new Error(`no source maps in ${dir}`);
for (const name of maps) {
  const file = path.join(dir, name);
  const map = JSON.parse(await readFile(file, 'utf8')) as SourceMapV3;
  const table = positionTableFromSourceMap(map, (s) => path.relative(repo, path.resolve(dir, s)));
  await writeFile(
    path.join(dir, name.slice(0, -'.map'.length) + POSITION_TABLE_SUFFIX),
    JSON.stringify(table),
  );
  await rm(file);
}
