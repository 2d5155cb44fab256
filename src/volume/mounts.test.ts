import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mountAt, mountTmpfs, mountsUnder, parseMountInfo, tmpfsOptions, unmountAllUnder } from './mounts.ts';

describe('mount table', () => {
  it('parses mountinfo lines, optional fields and octal escapes included', () => {
    const text = [
      '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw',
      '99 22 0:50 / /var/lib/kubelet/pods/a\\040b/vol rw,relatime shared:7 master:2 - tmpfs tmpfs rw,size=1024k',
      '',
    ].join('\n');
    assert.deepEqual(parseMountInfo(text), [
      { mountPoint: '/', fsType: 'ext4', source: '/dev/sda1' },
      { mountPoint: '/var/lib/kubelet/pods/a b/vol', fsType: 'tmpfs', source: 'tmpfs' },
    ]);
  });

  it('mounts tmpfs once, then unmounts everything below a directory, deepest first', async () => {
    const root = await mkdtemp(join(tmpdir(), 'mounts-test-'));
    try {
      const outer = join(root, 'with space');
      await mkdir(outer);
      await mountTmpfs(outer, { mode: 0o755, sizeBytes: 1 << 20 });
      await mountTmpfs(outer, { mode: 0o755 }); // idempotent: already tmpfs
      const inner = join(outer, 'inner');
      await mkdir(inner);
      await mountTmpfs(inner, { mode: 0o777 });
      await writeFile(join(inner, 'f'), 'x');
      assert.equal((await mountAt(outer))?.fsType, 'tmpfs');
      assert.deepEqual(
        (await mountsUnder(root)).map((m) => m.mountPoint),
        [inner, outer],
      );
      const stacked = (await readFile('/proc/self/mountinfo', 'utf8'))
        .split('\n')
        .filter((l) => l.includes(root));
      assert.equal(stacked.length, 2, 'mounting again did not stack a second tmpfs');

      assert.deepEqual(await unmountAllUnder(root), [inner, outer]);
      assert.equal(await mountAt(outer), undefined);
      assert.ok(!(await readFile('/proc/mounts', 'utf8')).includes(root));
    } finally {
      await unmountAllUnder(root);
      await rm(root, { recursive: true, force: true });
    }
  });

  it('mounts tmpfs with the given root mode, never the tmpfs default 1777', async () => {
    assert.equal(tmpfsOptions({ mode: 0o755 }), 'mode=0755');
    assert.equal(tmpfsOptions({ mode: 0o777, sizeBytes: 1536.5 }), 'mode=0777,size=1537');
    const root = await mkdtemp(join(tmpdir(), 'mounts-test-'));
    try {
      await mountTmpfs(root, { mode: 0o755 });
      assert.equal((await stat(root)).mode & 0o7777, 0o755);
    } finally {
      await unmountAllUnder(root);
      await rm(root, { recursive: true, force: true });
    }
  });

  it('treats a directory that does not exist as having no mounts', async () => {
    assert.deepEqual(await mountsUnder('/nonexistent/tskubelet/pod'), []);
    assert.deepEqual(await unmountAllUnder('/nonexistent/tskubelet/pod'), []);
  });
});
