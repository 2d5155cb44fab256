import assert from 'node:assert/strict';
import { watch } from 'node:fs';
import { appendFile, open, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { LogOptions } from './log-options.ts';
import { readContainerLogs, type ReadContainerLogsRequest } from './read-logs.ts';
import { recordingLogger } from '../util/testing.ts';
import { criLine, openFds, Sink, ts, until, withTmpDir } from './testing.ts';

const base: LogOptions = { follow: false, previous: false, timestamps: false };

function request(path: string, options: Partial<LogOptions>, extra: Partial<ReadContainerLogsRequest> = {}) {
  const stdout = new Sink();
  const stderr = new Sink();
  const req: ReadContainerLogsRequest = {
    path,
    options: { ...base, ...options },
    stdout,
    stderr,
    signal: new AbortController().signal,
    isRunning: () => Promise.resolve(false),
    pollIntervalMs: 50,
    ...extra,
  };
  return { req, stdout, stderr };
}

const lines = (from: number, to: number, stream: 'stdout' | 'stderr' = 'stdout') =>
  Array.from({ length: to - from }, (_, k) => criLine(ts(from + k), stream, 'F', `line ${from + k}`)).join(
    '',
  );

describe('readContainerLogs', () => {
  it('writes stdout and stderr lines to their own streams and joins partial records', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(
        path,
        criLine(ts(0), 'stdout', 'F', 'out 1') +
          criLine(ts(1), 'stderr', 'P', 'err ') +
          criLine(ts(2), 'stdout', 'F', 'out 2') +
          criLine(ts(3), 'stderr', 'F', 'joined'),
      );
      const { req, stdout, stderr } = request(path, {});
      const res = await readContainerLogs(req);
      assert.equal(res.ended, 'eof');
      assert.equal(stdout.text(), 'out 1\nout 2\n');
      assert.equal(stderr.text(), 'err joined\n');
      assert.equal(res.bytesWritten, 23);
    });
  });

  it('prefixes each line with its RFC3339Nano timestamp when asked', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, criLine('2024-01-02T03:04:05.0000001Z', 'stdout', 'F', 'hi'));
      const { req, stdout } = request(path, { timestamps: true });
      await readContainerLogs(req);
      assert.equal(stdout.text(), '2024-01-02T03:04:05.000000100Z hi\n');
    });
  });

  it('skips lines older than sinceSeconds before now, and older than sinceTime', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, lines(0, 10));
      const now = () => Date.parse(ts(10)); // sinceSeconds=3 → from ts(7)
      const a = request(path, { sinceSeconds: 3 }, { now });
      await readContainerLogs(a.req);
      assert.equal(a.stdout.text(), 'line 7\nline 8\nline 9\n');
      const b = request(path, { sinceTime: { sec: Date.parse(ts(8)) / 1000, nsec: 1 } });
      await readContainerLogs(b.req);
      assert.equal(b.stdout.text(), 'line 9\n');
    });
  });

  it('stops after limitBytes bytes of output, cutting the last line', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, lines(0, 1000));
      const { req, stdout } = request(
        path,
        { limitBytes: 10, follow: true },
        { isRunning: () => Promise.resolve(true) },
      );
      const res = await readContainerLogs(req);
      assert.equal(res.ended, 'limit');
      assert.equal(stdout.text(), 'line 0\nlin');
    });
  });

  it('tailLines 3 returns the last three lines of a file larger than one block (several MiB)', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      const fh = await open(path, 'w');
      const pad = 'x'.repeat(80);
      for (let chunk = 0; chunk < 40; chunk++) {
        let s = '';
        for (let i = 0; i < 1000; i++)
          s += criLine(ts(chunk * 1000 + i), 'stdout', 'F', `${chunk * 1000 + i} ${pad}`);
        await fh.write(s);
      }
      await fh.close();
      const { req, stdout } = request(path, { tailLines: 3, timestamps: true });
      await readContainerLogs(req);
      const out = stdout.text().split('\n');
      assert.equal(out.length, 4);
      assert.match(out[0]!, /^\S+ 39997 x+$/);
      assert.match(out[2]!, /^\S+ 39999 x+$/);
      assert.equal(out[3], '');
      const zero = request(path, { tailLines: 0 });
      await readContainerLogs(zero.req);
      assert.equal(zero.stdout.text(), '');
    });
  });

  it('skips and reports malformed records without failing', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, 'garbage\n' + criLine(ts(0), 'stdout', 'F', 'ok') + `${ts(1)} stdin F nope\n`);
      const logger = recordingLogger();
      const { req, stdout } = request(path, {}, { logger });
      const res = await readContainerLogs(req);
      assert.equal(stdout.text(), 'ok\n');
      assert.equal(res.skippedRecords, 2);
      assert.equal(logger.lines.filter((l) => l.level === 'warn').length, 2);
      assert.match(String(logger.lines[1]!.fields.reason), /stream type/);
    });
  });

  it('respects backpressure of a slow writable and keeps every line in order', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, lines(0, 3000));
      const stdout = new Sink({ highWaterMark: 1024, delayMs: 1 });
      const { req } = request(path, {}, { stdout });
      let maxBuffered = 0;
      const spy = setInterval(() => (maxBuffered = Math.max(maxBuffered, stdout.writableLength)), 1);
      await readContainerLogs(req);
      clearInterval(spy);
      const got = stdout.text().split('\n');
      assert.equal(got.length, 3001);
      assert.equal(got[2999], 'line 2999');
      assert.ok(maxBuffered <= 128 * 1024, `buffered ${maxBuffered}`);
    });
  });

  it('resolves symlinks and rejects a missing file with NotFound', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, lines(0, 1));
      await symlink(path, join(dir, 'link.log'));
      const { req, stdout } = request(join(dir, 'link.log'), {});
      await readContainerLogs(req);
      assert.equal(stdout.text(), 'line 0\n');
      await assert.rejects(readContainerLogs(request(join(dir, 'missing.log'), {}).req), {
        name: 'KubeletError',
        code: 'NotFound',
      });
    });
  });
});

describe('readContainerLogs with follow', () => {
  it('ends at once for a container that is not running, after writing everything', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, lines(0, 2) + criLine(ts(2), 'stdout', 'P', 'unfinished'));
      const { req, stdout } = request(path, { follow: true });
      const res = await readContainerLogs(req);
      assert.equal(res.ended, 'not-running');
      assert.equal(stdout.text(), 'line 0\nline 1\nunfinished');
    });
  });

  it('sees a line written later, and ends when isRunning() turns false', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, lines(0, 1));
      let running = true;
      let asked = 0;
      const isRunning = () => {
        asked++;
        return Promise.resolve(running);
      };
      const { req, stdout } = request(path, { follow: true }, { isRunning });
      const done = readContainerLogs(req);
      await until(() => stdout.text() === 'line 0\n', 2000, 'first line');
      await appendFile(path, criLine(ts(1), 'stdout', 'P', 'late '));
      await appendFile(path, criLine(ts(1), 'stdout', 'F', 'line'));
      await until(() => stdout.text() === 'line 0\nlate line\n', 2000, 'late line');
      // Written just before it stops: still delivered.
      await appendFile(path, lines(2, 3));
      running = false;
      const res = await done;
      assert.equal(res.ended, 'not-running');
      assert.equal(stdout.text(), 'line 0\nlate line\nline 2\n');
      assert.ok(asked >= 2);
    });
  });

  it('wakes on a write through the file watch, long before the poll period', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, lines(0, 1));
      const ac = new AbortController();
      const { req, stdout } = request(
        path,
        { follow: true },
        { signal: ac.signal, isRunning: () => Promise.resolve(true), pollIntervalMs: 60_000 },
      );
      const done = readContainerLogs(req);
      await until(() => stdout.text() === 'line 0\n', 2000, 'first line');
      await new Promise((r) => setTimeout(r, 50)); // let it settle into waiting
      await appendFile(path, lines(1, 2));
      await until(() => stdout.text().endsWith('line 1\n'), 2000, 'line seen via the watch');
      ac.abort();
      assert.equal((await done).ended, 'aborted');
    });
  });

  it('abort ends follow with no file descriptor or watcher leaked', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, lines(0, 5));
      watch(dir).close(); // libuv opens its inotify descriptor once per process; not ours to count
      const before = openFds();
      const ac = new AbortController();
      const { req, stdout } = request(
        path,
        { follow: true },
        { signal: ac.signal, isRunning: () => Promise.resolve(true) },
      );
      const done = readContainerLogs(req);
      await until(() => stdout.text().endsWith('line 4\n'), 2000, 'lines');
      assert.ok(openFds() > before, 'the log file is open while following');
      ac.abort();
      const res = await done;
      assert.equal(res.ended, 'aborted');
      assert.equal(openFds(), before);
    });
  });

  it('follows a file across a rotation', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, lines(0, 2));
      let running = true;
      const before = openFds();
      const { req, stdout } = request(path, { follow: true }, { isRunning: () => Promise.resolve(running) });
      const done = readContainerLogs(req);
      await until(() => stdout.text() === 'line 0\nline 1\n', 2000, 'first lines');
      // As the log manager does: rename the live file away, the runtime writes its last record
      // to the old file, then reopens and writes to a new file at the same path.
      await rename(path, `${path}.20240102-030405`);
      await appendFile(`${path}.20240102-030405`, lines(2, 3));
      await writeFile(path, lines(3, 5));
      await until(() => stdout.text().endsWith('line 4\n'), 3000, 'lines from the new file');
      await appendFile(path, lines(5, 6));
      await until(() => stdout.text().endsWith('line 5\n'), 3000, 'appended line');
      running = false;
      await done;
      assert.equal(stdout.text(), [0, 1, 2, 3, 4, 5].map((i) => `line ${i}\n`).join(''));
      assert.equal(openFds(), before, 'old and new file both closed');
    });
  });

  it('starts over when the file is truncated in place', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, lines(0, 3));
      let running = true;
      const { req, stdout } = request(path, { follow: true }, { isRunning: () => Promise.resolve(running) });
      const done = readContainerLogs(req);
      await until(() => stdout.text().endsWith('line 2\n'), 2000, 'lines');
      await writeFile(path, lines(7, 8));
      await until(() => stdout.text().endsWith('line 7\n'), 3000, 'line after truncation');
      running = false;
      await done;
    });
  });

  it('rejects with a typed error when isRunning fails, closing the file', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, lines(0, 1));
      const before = openFds();
      const { req } = request(
        path,
        { follow: true },
        { isRunning: () => Promise.reject(new Error('runtime down')) },
      );
      await assert.rejects(readContainerLogs(req), (err: Error & { code?: string }) => {
        assert.equal(err.name, 'KubeletError');
        assert.equal(err.code, 'Unknown');
        assert.match(err.message, /runtime down/);
        return true;
      });
      assert.equal(openFds(), before);
    });
  });
});
