import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readStatic, STATIC_DIR } from './static-files.ts';

void describe('console static files', () => {
  void it('serves the page, its script, its style and its icon with their media types', async () => {
    const want = {
      '': 'text/html; charset=utf-8',
      'index.html': 'text/html; charset=utf-8',
      'console.js': 'text/javascript; charset=utf-8',
      'console.css': 'text/css; charset=utf-8',
      'icon.svg': 'image/svg+xml',
    };
    for (const [name, type] of Object.entries(want)) {
      const r = await readStatic(name);
      assert.equal(r.status, 200, name);
      assert.equal(r.status === 200 && r.type, type, name);
      assert.ok(r.status === 200 && r.body.length > 0, name);
    }
  });

  void it('names files by key only: a path, a parent, a prototype key or another file is 404', async () => {
    for (const name of [
      '../package.json',
      '../../package.json',
      'static/index.html',
      '/etc/passwd',
      'node-console.ts',
      'constructor',
      '__proto__',
      'hasOwnProperty',
      'index.html\0',
      'INDEX.HTML',
      'console.js/',
    ]) {
      assert.equal((await readStatic(name)).status, 404, JSON.stringify(name));
    }
  });

  void it('reports a missing file as a 500 naming it (a broken install), not as a 404', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'console-static-'));
    try {
      await writeFile(join(dir, 'index.html'), '<!doctype html>');
      assert.equal((await readStatic('', dir)).status, 200);
      const r = await readStatic('console.js', dir);
      assert.equal(r.status, 500);
      assert.match(r.status === 500 ? r.body : '', /cannot read console\.js/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('lives beside the module (scripts/build.sh copies it into dist/)', () => {
    assert.ok(STATIC_DIR.endsWith(join('console', 'static')));
  });
});
