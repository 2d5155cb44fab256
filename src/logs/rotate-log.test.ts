import assert from 'node:assert/strict';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { rotateLog, rotationTimestamp, splitUnusedLogs } from './rotate-log.ts';
import { recordingLogger } from '../util/testing.ts';
import { openFds, withTmpDir } from './testing.ts';

process.env.TZ = 'UTC';
const T0 = Date.UTC(2024, 0, 2, 3, 4, 5);

describe('rotation of one log file', () => {
  it('names rotated files after the time, as Go formats 20060102-150405', () => {
    assert.equal(rotationTimestamp(T0), '20240102-030405');
    assert.equal(rotationTimestamp(Date.UTC(2024, 11, 31, 23, 59, 59, 999)), '20241231-235959');
  });

  it('tells leftovers of an interrupted rotation from files in use', () => {
    const r = splitUnusedLogs(['a.1', 'a.1.gz', 'a.2.gz', 'a.3', 'a.3.gz.tmp', 'a.4']);
    assert.deepEqual(r.inUse, ['a.1.gz', 'a.2.gz', 'a.3', 'a.4']);
    assert.deepEqual(r.unused, ['a.1', 'a.3.gz.tmp']);
  });

  it('keeps maxFiles files, compresses older rotated ones and leaves the newest uncompressed', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(`${path}.20240101-000001.gz`, 'oldest');
      await writeFile(`${path}.20240101-000002.gz`, 'old');
      await writeFile(`${path}.20240101-000003`, 'previous rotation\n');
      await writeFile(`${path}.20240101-000003.gz.tmp`, 'half-written');
      await writeFile(join(dir, '1.log.20240101-000000'), 'another container attempt');
      await writeFile(path, 'live\n');
      const reopened: string[] = [];
      const before = openFds();
      const res = await rotateLog({
        path,
        maxFiles: 3,
        now: T0,
        reopen: async () => {
          reopened.push('reopen');
          await writeFile(path, '');
        },
        signal: new AbortController().signal,
        logger: recordingLogger(),
      });
      assert.equal(openFds(), before);
      assert.deepEqual(reopened, ['reopen']);
      assert.equal(res.rotatedTo, `${path}.20240102-030405`);
      assert.deepEqual((await readdir(dir)).sort(), [
        '0.log',
        '0.log.20240101-000003.gz',
        '0.log.20240102-030405',
        '1.log.20240101-000000',
      ]);
      assert.equal(
        gunzipSync(await readFile(`${path}.20240101-000003.gz`)).toString(),
        'previous rotation\n',
      );
      assert.equal(await readFile(`${path}.20240102-030405`, 'utf8'), 'live\n');
      assert.equal(await readFile(path, 'utf8'), '');
    });
  });

  it('with maxFiles 2 keeps only the live file and the one rotated now', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(`${path}.20240101-000001`, 'x');
      await writeFile(path, 'live\n');
      await rotateLog({
        path,
        maxFiles: 2,
        now: T0,
        reopen: () => writeFile(path, ''),
        signal: new AbortController().signal,
        logger: recordingLogger(),
      });
      assert.deepEqual((await readdir(dir)).sort(), ['0.log', '0.log.20240102-030405']);
    });
  });

  it('renames the file back when the runtime cannot reopen its log', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(path, 'live\n');
      await assert.rejects(
        rotateLog({
          path,
          maxFiles: 5,
          now: T0,
          reopen: () => Promise.reject(new Error('container is stopping')),
          signal: new AbortController().signal,
          logger: recordingLogger(),
        }),
        (err: Error & { code?: string }) => {
          assert.equal(err.name, 'KubeletError');
          assert.match(err.message, /failed to reopen the container log: container is stopping/);
          return true;
        },
      );
      assert.deepEqual(await readdir(dir), ['0.log']);
      assert.equal(await readFile(path, 'utf8'), 'live\n');
    });
  });

  it('never rotates over a rotated file of the same second, compressed or not', async () => {
    for (const suffix of ['', '.gz']) {
      await withTmpDir(async (dir) => {
        const path = join(dir, '0.log');
        await writeFile(path, 'live\n');
        await writeFile(`${path}.20240102-030405${suffix}`, 'earlier');
        await assert.rejects(
          rotateLog({
            path,
            maxFiles: 5,
            now: T0,
            reopen: () => Promise.resolve(),
            signal: new AbortController().signal,
            logger: recordingLogger(),
          }),
          { code: 'AlreadyExists' },
        );
        assert.equal(await readFile(path, 'utf8'), 'live\n');
        assert.equal(await readFile(`${path}.20240102-030405${suffix}`, 'utf8'), 'earlier');
      });
    }
  });

  it('removes the temporary file when compression is cancelled', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(`${path}.20240101-000001`, 'x'.repeat(1 << 20));
      await writeFile(path, 'live\n');
      const ac = new AbortController();
      ac.abort();
      const before = openFds();
      await assert.rejects(
        rotateLog({
          path,
          maxFiles: 5,
          now: T0,
          reopen: () => Promise.resolve(),
          signal: ac.signal,
          logger: recordingLogger(),
        }),
        { name: 'KubeletError', code: 'Canceled' },
      );
      assert.deepEqual((await readdir(dir)).sort(), ['0.log', '0.log.20240101-000001']);
      assert.equal(openFds(), before);
    });
  });

  it('compresses a rotated log to a file others cannot read (0640, as the runtime writes the log), whatever the umask', async () => {
    await withTmpDir(async (dir) => {
      const path = join(dir, '0.log');
      await writeFile(`${path}.20240101-000001`, 'secret output\n', { mode: 0o640 });
      await writeFile(path, 'live\n', { mode: 0o640 });
      const umask = process.umask(0);
      try {
        await rotateLog({
          path,
          maxFiles: 5,
          now: T0,
          reopen: () => writeFile(path, ''),
          signal: new AbortController().signal,
          logger: recordingLogger(),
        });
      } finally {
        process.umask(umask);
      }
      assert.equal((await stat(`${path}.20240101-000001.gz`)).mode & 0o777, 0o640);
      assert.equal((await stat(`${path}.20240102-030405`)).mode & 0o777, 0o640, 'renamed, mode kept');
    });
  });
});
