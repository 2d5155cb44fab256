import assert from 'node:assert/strict';
import { appendFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createChangeWaiter } from './change-waiter.ts';
import { recordingLogger } from '../util/testing.ts';
import { withTmpDir } from './testing.ts';

describe('createChangeWaiter', () => {
  it('reports a write to the file, ignores other files of the directory, times out otherwise', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, '');
      const w = createChangeWaiter(path, recordingLogger());
      try {
        const signal = new AbortController().signal;
        await writeFile(join(dir, '0.log.20240102-030405.gz.tmp'), 'x');
        assert.equal(await w.wait(100, signal), 'timeout');
        const p = w.wait(5000, signal);
        await appendFile(path, 'x');
        assert.equal(await p, 'changed');
      } finally {
        w.close();
      }
    });
  });

  it('tells a replaced file from a written one: a rename counts, a plain write does not', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, '');
      const w = createChangeWaiter(path, recordingLogger());
      try {
        const signal = new AbortController().signal;
        const written = w.wait(5000, signal);
        await appendFile(path, 'x');
        assert.equal(await written, 'changed');
        assert.equal(w.takeReplaced(), false);
        const rotated = w.wait(5000, signal);
        await rename(path, `${path}.1`);
        await writeFile(path, '');
        assert.equal(await rotated, 'changed');
        await new Promise((r) => setTimeout(r, 50));
        assert.equal(w.takeReplaced(), true);
        assert.equal(w.takeReplaced(), false, 'taken once');
      } finally {
        w.close();
      }
    });
  });

  it('remembers a change that came between two waits', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, '');
      const w = createChangeWaiter(path, recordingLogger());
      try {
        await appendFile(path, 'x');
        await new Promise((r) => setTimeout(r, 50));
        assert.equal(await w.wait(5000, new AbortController().signal), 'changed');
      } finally {
        w.close();
      }
    });
  });

  it('falls back to polling, with a warning, when the directory cannot be watched', async () => {
    const logger = recordingLogger();
    const w = createChangeWaiter('/nonexistent-dir-for-test/0.log', logger);
    assert.equal(await w.wait(20, new AbortController().signal), 'timeout');
    assert.equal(logger.lines[0]?.level, 'warn');
    assert.equal(w.takeReplaced(), true, 'without a watch, every end of file checks the path');
    w.close();
  });

  it('returns aborted when the signal aborts', async () => {
    await withTmpDir(async (dir) => {
      const w = createChangeWaiter(join(dir, '0.log'), recordingLogger());
      const ac = new AbortController();
      const p = w.wait(5000, ac.signal);
      ac.abort();
      assert.equal(await p, 'aborted');
      w.close();
    });
  });
});
