import assert from 'node:assert/strict';
import { open, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { findTailStart } from './tail.ts';
import { criLine, ts, withTmpDir } from './testing.ts';

async function tailStart(dir: string, content: string, n: number, block?: number): Promise<number> {
  const path = join(dir, 'log');
  await writeFile(path, content);
  const fh = await open(path, 'r');
  try {
    return await findTailStart(fh, (await fh.stat()).size, n, block);
  } finally {
    await fh.close();
  }
}

/** Reference: offsets where logical lines start (after each newline ending a non-P record). */
function lineStarts(content: string): number[] {
  const starts = [0];
  let off = 0;
  for (const rec of content.split(/(?<=\n)/)) {
    off += Buffer.byteLength(rec);
    if (rec.endsWith('\n') && !/^\S+ \S+ P[ :]/.test(rec)) starts.push(off);
  }
  return starts;
}

describe('findTailStart', () => {
  it('finds the start of the last N lines of a file of full records', async () => {
    await withTmpDir(async (dir) => {
      const lines = [0, 1, 2, 3, 4].map((i) => criLine(ts(i), 'stdout', 'F', `line ${i}`));
      const content = lines.join('');
      assert.equal(await tailStart(dir, content, 2), content.indexOf(lines[3]!));
      assert.equal(await tailStart(dir, content, 0), content.length);
      assert.equal(await tailStart(dir, content, 5), 0);
      assert.equal(await tailStart(dir, content, 100), 0);
      assert.equal(await tailStart(dir, '', 3), 0);
    });
  });

  it('counts a line split into partial records as one line', async () => {
    await withTmpDir(async (dir) => {
      const content =
        criLine(ts(0), 'stdout', 'F', 'one') +
        criLine(ts(1), 'stdout', 'P', 'two-a') +
        criLine(ts(1), 'stdout', 'P', 'two-b') +
        criLine(ts(1), 'stdout', 'F', 'two-c') +
        criLine(ts(2), 'stderr', 'F', 'three');
      assert.equal(await tailStart(dir, content, 2), content.indexOf('2024-01-02T03:04:06Z stdout P two-a'));
      assert.equal(await tailStart(dir, content, 1), content.indexOf(ts(2)));
    });
  });

  it('always includes an unfinished last line and does not count it', async () => {
    await withTmpDir(async (dir) => {
      const full = criLine(ts(0), 'stdout', 'F', 'a') + criLine(ts(1), 'stdout', 'F', 'b');
      const noNewline = full + `${ts(2)} stdout F c`;
      assert.equal(await tailStart(dir, noNewline, 1), full.indexOf(ts(1)));
      assert.equal(await tailStart(dir, noNewline, 0), full.length);
      const onlyPartials = full + criLine(ts(2), 'stdout', 'P', 'c1');
      assert.equal(await tailStart(dir, onlyPartials, 0), full.length);
      assert.equal(await tailStart(dir, onlyPartials, 1), full.indexOf(ts(1)));
    });
  });

  it('agrees with a line-by-line count whatever the block size (lines spanning blocks)', async () => {
    await withTmpDir(async (dir) => {
      let seed = 7;
      const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
      let content = '';
      for (let i = 0; i < 120; i++) {
        const tag = rnd(3) === 0 ? 'P' : 'F';
        const body =
          rnd(10) === 0
            ? 'garbage without header'
            : criLine(ts(i), rnd(2) ? 'stdout' : 'stderr', tag, 'x'.repeat(rnd(90)));
        content += body.endsWith('\n') ? body : body + '\n';
      }
      const starts = lineStarts(content);
      const total = starts.length - 1;
      for (const block of [7, 64, 1000, 64 * 1024]) {
        for (const n of [0, 1, 2, 5, 17, total - 1, total, total + 3]) {
          const expected = n >= total ? 0 : starts[total - n]!;
          assert.equal(await tailStart(dir, content, n, block), expected, `n=${n} block=${block}`);
        }
      }
    });
  });

  it('reads only the blocks at the end of a large file', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, 'log');
      const line = criLine(ts(0), 'stdout', 'F', 'y'.repeat(200));
      await writeFile(path, line.repeat(20_000)); // ~4.5 MiB
      const fh = await open(path, 'r');
      let bytesRead = 0;
      const counting = {
        read: async (buf: Buffer, off: number, len: number, pos: number) => {
          const r = await fh.read(buf, off, len, pos);
          bytesRead += r.bytesRead;
          return r;
        },
      } as unknown as FileHandle;
      try {
        const size = (await fh.stat()).size;
        assert.equal(await findTailStart(counting, size, 3), size - 3 * line.length);
        assert.ok(bytesRead <= 64 * 1024, `read ${bytesRead} bytes`);
      } finally {
        await fh.close();
      }
    });
  });
});
