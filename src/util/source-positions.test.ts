import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { positionTableFromSourceMap, sourcePosition, type SourceMapV3 } from './source-positions.ts';

const REPO = path.resolve(import.meta.dirname, '..', '..');

describe('source positions: the line table of a bundle', () => {
  it('maps each generated line to the source and line of its first segment, carrying the deltas across lines', () => {
    // Line 1: one segment at source 0 line 0; line 2: nothing; line 3: source 1 line 4, then source 1 line 5.
    // Segments: "AAAA" = [0,0,0,0]; "ACIA" = [0,+1,+4,0]; "AACA" = [0,0,+1,0].
    const map: SourceMapV3 = { version: 3, sources: ['a.ts', 'b.ts'], mappings: 'AAAA;;ACIA,AACA' };
    const t = positionTableFromSourceMap(map, (s) => `src/${s}`);
    assert.deepEqual(t.sources, ['src/a.ts', 'src/b.ts']);
    const b = Buffer.from(t.lines, 'base64');
    assert.deepEqual([...new Int32Array(b.buffer, b.byteOffset, b.byteLength / 4)], [0, 1, -1, -1, 1, 5]);
  });

  it('refuses a source map that is not version 3 or has a character outside base64', () => {
    assert.throws(
      () => positionTableFromSourceMap({ version: 2, sources: [], mappings: '' }, (s) => s),
      /version 2/,
    );
    assert.throws(
      () => positionTableFromSourceMap({ version: 3, sources: ['a'], mappings: 'A!AA' }, (s) => s),
      /bad character "!"/,
    );
  });

  it('leaves a file without a table (a source file) alone', () => {
    assert.equal(sourcePosition(path.join(REPO, 'src/util/logger.ts'), 10), undefined);
    assert.equal(sourcePosition('/nonexistent/x.js', 10), undefined);
  });
});

describe('source positions: the logger in an esbuild bundle, as bin/tskubelet runs it', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'source-positions-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("names the caller's TypeScript file and line (klog's file:line, what --vmodule matches), not the bundle's", async () => {
    const logger = path.join(REPO, 'src/util/logger.ts');
    const probe = path.join(dir, 'probe-caller.ts');
    await writeFile(
      probe,
      [
        `import { createLogger } from ${JSON.stringify(logger)};`,
        'export function logOnce(lines: string[]): void {',
        "  const log = createLogger({ verbosity: 0, format: 'text', destination: { write: (l: string) => lines.push(l) } });",
        "  log.info('from the probe');",
        '}',
      ].join('\n'),
    );
    const out = path.join(dir, 'out');
    execFileSync(
      path.join(REPO, 'node_modules/.bin/esbuild'),
      [
        probe,
        '--bundle',
        '--platform=node',
        '--format=esm',
        `--outdir=${out}`,
        '--sourcemap=external',
        '--log-level=warning',
      ],
      { cwd: REPO },
    );
    execFileSync(process.execPath, [path.join(REPO, 'scripts/position-tables.ts'), out], { cwd: REPO });
    assert.deepEqual((await readdir(out)).sort(), ['probe-caller.js', 'probe-caller.js.positions.json']);
    const table = JSON.parse(await readFile(path.join(out, 'probe-caller.js.positions.json'), 'utf8')) as {
      sources: string[];
    };
    assert.ok(table.sources.includes('src/util/logger.ts'), 'sources are repository-relative');
    const mod = (await import(pathToFileURL(path.join(out, 'probe-caller.js')).href)) as {
      logOnce(lines: string[]): void;
    };
    const lines: string[] = [];
    mod.logOnce(lines);
    assert.match(lines[0] ?? '', / probe-caller\.ts:4\] "from the probe"/);
  });
});
