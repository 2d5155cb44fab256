import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DATA_DIR_NAME, validatePayloadPath, writeAtomically, type FileProjection } from './atomic-writer.ts';
import { hasCode } from '../util/errors.ts';

const file = (text: string, mode = 0o644): FileProjection => ({ data: Buffer.from(text), mode });
const payload = (entries: Record<string, FileProjection>) => new Map(Object.entries(entries));

async function dataDirs(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.startsWith('..') && n !== DATA_DIR_NAME).sort();
}

describe('atomic writer', () => {
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'atomic-writer-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes files into a timestamped directory behind ..data and links each name to it', async () => {
    const when = new Date(Date.UTC(2026, 10, 22, 1, 23, 45));
    assert.equal(
      await writeAtomically(dir, payload({ user: file('admin'), pass: file('s3cret', 0o400) }), {
        now: () => when,
      }),
      true,
    );
    const [ts] = await dataDirs(dir);
    assert.match(ts ?? '', /^\.\.2026_11_22_01_23_45\./);
    assert.equal(await readlink(join(dir, DATA_DIR_NAME)), ts);
    assert.equal(await readlink(join(dir, 'user')), '..data/user');
    assert.equal(await readFile(join(dir, 'user'), 'utf8'), 'admin');
    assert.equal(await readFile(join(dir, 'pass'), 'utf8'), 's3cret');
    assert.equal((await stat(join(dir, 'pass'))).mode & 0o7777, 0o400);
    assert.equal((await stat(join(dir, 'user'))).mode & 0o7777, 0o644);
    assert.equal((await stat(join(dir, ts ?? ''))).mode & 0o7777, 0o755);
  });

  it('writes exact modes whatever the umask', async () => {
    const old = process.umask(0o077);
    try {
      await writeAtomically(dir, payload({ a: file('x', 0o666) }));
    } finally {
      process.umask(old);
    }
    assert.equal((await stat(join(dir, 'a'))).mode & 0o7777, 0o666);
  });

  it('switches to new content with a new data directory and removes the old one', async () => {
    await writeAtomically(dir, payload({ a: file('1'), b: file('1') }));
    const [first] = await dataDirs(dir);
    await writeAtomically(dir, payload({ a: file('2'), b: file('1') }));
    const dirs = await dataDirs(dir);
    assert.equal(dirs.length, 1);
    assert.notEqual(dirs[0], first);
    assert.equal(await readlink(join(dir, DATA_DIR_NAME)), dirs[0]);
    assert.equal(await readFile(join(dir, 'a'), 'utf8'), '2');
    assert.equal(await readFile(join(dir, 'b'), 'utf8'), '1');
  });

  it('removes the user-visible links of keys that disappeared', async () => {
    await writeAtomically(dir, payload({ a: file('1'), gone: file('1') }));
    await writeAtomically(dir, payload({ a: file('1') }));
    assert.deepEqual(
      (await readdir(dir)).filter((n) => !n.startsWith('..')),
      ['a'],
    );
    await assert.rejects(lstat(join(dir, 'gone')), { code: 'ENOENT' });
  });

  it('supports nested paths with one top-level link per first element', async () => {
    await writeAtomically(
      dir,
      payload({ 'conf/app/settings.json': file('{}'), 'conf/x': file('x'), top: file('t') }),
    );
    assert.equal(await readlink(join(dir, 'conf')), '..data/conf');
    assert.equal(await readFile(join(dir, 'conf/app/settings.json'), 'utf8'), '{}');
    assert.equal(await readFile(join(dir, 'conf/x'), 'utf8'), 'x');
    // A nested file that disappears goes away with the old version; the top-level link stays.
    await writeAtomically(dir, payload({ 'conf/x': file('x'), top: file('t') }));
    await assert.rejects(stat(join(dir, 'conf/app/settings.json')), { code: 'ENOENT' });
    assert.equal(await readFile(join(dir, 'conf/x'), 'utf8'), 'x');
  });

  it('writes nothing when the payload is unchanged', async () => {
    await writeAtomically(dir, payload({ a: file('1'), 'n/b': file('2') }));
    const before = await dataDirs(dir);
    assert.equal(await writeAtomically(dir, payload({ a: file('1'), 'n/b': file('2') })), false);
    assert.deepEqual(await dataDirs(dir), before);
  });

  it('writes a new version when only a mode changed', async () => {
    await writeAtomically(dir, payload({ a: file('1', 0o644) }));
    assert.equal(await writeAtomically(dir, payload({ a: file('1', 0o600) })), true);
    assert.equal((await stat(join(dir, 'a'))).mode & 0o7777, 0o600);
  });

  it('writes an empty payload as an empty volume', async () => {
    assert.equal(await writeAtomically(dir, new Map()), true);
    assert.equal((await dataDirs(dir)).length, 1);
    assert.equal(await writeAtomically(dir, new Map()), false);
  });

  it('rejects invalid paths before touching the directory', async () => {
    for (const bad of [
      '',
      '/etc/passwd',
      '../x',
      'a/../../x',
      '..hidden',
      '..data',
      'a/..',
      `${'n'.repeat(256)}`,
    ]) {
      await assert.rejects(
        writeAtomically(dir, payload({ [bad]: file('x') })),
        (err) => hasCode(err, 'InvalidArgument'),
        `path ${JSON.stringify(bad)} should be rejected`,
      );
    }
    assert.deepEqual(await readdir(dir), []);
  });

  it('rejects a path that is both a file and a directory', async () => {
    await assert.rejects(writeAtomically(dir, payload({ a: file('x'), 'a/b': file('y') })), (err) =>
      hasCode(err, 'InvalidArgument'),
    );
  });

  it('cleans paths as upstream does and accepts names that merely contain dots', () => {
    assert.equal(validatePayloadPath('a//b/./c'), 'a/b/c');
    assert.equal(validatePayloadPath('a.b/..c'), 'a.b/..c');
    assert.equal(validatePayloadPath('dir/'), 'dir');
  });

  it('refuses to replace a real file where a link must go', async () => {
    await writeFile(join(dir, 'a'), 'not ours');
    await assert.rejects(writeAtomically(dir, payload({ a: file('x') })), (err) =>
      hasCode(err, 'FailedPrecondition'),
    );
    assert.equal(await readFile(join(dir, 'a'), 'utf8'), 'not ours');
    assert.deepEqual(await dataDirs(dir), [], 'the unused data directory is removed');
  });

  it('recovers from leftovers of an interrupted write', async () => {
    await writeAtomically(dir, payload({ a: file('1') }));
    await mkdir(join(dir, '..2020_01_01_00_00_00.abc123'));
    await symlink('..2020_01_01_00_00_00.abc123', join(dir, '..data_tmp'));
    assert.equal(await writeAtomically(dir, payload({ a: file('2') })), true);
    assert.equal(await readFile(join(dir, 'a'), 'utf8'), '2');
    assert.equal((await dataDirs(dir)).length, 1);
  });

  it('group-owns files and directories for fsGroup, with setgid on directories', async () => {
    await writeAtomically(dir, payload({ 'd/f': file('x', 0o640) }), { gid: 1234 });
    const f = await stat(join(dir, 'd/f'));
    assert.equal(f.gid, 1234);
    assert.equal(f.mode & 0o7777, 0o640);
    const d = await stat(join(dir, 'd'));
    assert.equal(d.gid, 1234);
    assert.equal(d.mode & 0o2000, 0o2000);
    assert.equal(await writeAtomically(dir, payload({ 'd/f': file('x', 0o640) }), { gid: 1234 }), false);
  });

  it('serializes concurrent writes to the same directory', async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => writeAtomically(dir, payload({ a: file(String(i)) }))),
    );
    assert.deepEqual(results, [true, true, true, true, true]);
    assert.equal(await readFile(join(dir, 'a'), 'utf8'), '4');
    assert.equal((await dataDirs(dir)).length, 1);
  });
});
