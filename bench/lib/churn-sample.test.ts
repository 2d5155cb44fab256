import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countMountsUnder, dirUsage, podLogUsage } from './churn-sample.ts';

describe('dirUsage', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'churn-usage-'));
    await mkdir(join(dir, 'pods', 'uid1', 'volumes'), { recursive: true });
    await writeFile(join(dir, 'pods', 'uid1', 'etc-hosts'), 'x'.repeat(100));
    await writeFile(join(dir, 'pods', 'uid1', 'volumes', 'blob'), Buffer.alloc(4096));
    await symlink('/etc/passwd', join(dir, 'link'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('sums regular files and counts every entry, links not followed', async () => {
    // entries: pods, uid1, volumes, etc-hosts, blob, link
    assert.deepEqual(await dirUsage(dir), { bytes: 4196, files: 6 });
  });

  it('is empty for a directory that does not exist', async () => {
    assert.deepEqual(await dirUsage(join(dir, 'gone')), { bytes: 0, files: 0 });
  });

  it('counts only the pod log directories of the given prefix, each directory as an entry', async () => {
    const logs = join(dir, 'logs');
    await mkdir(join(logs, 'default_bk-ch-r0001-0-sleep-n_uid1', 'main'), { recursive: true });
    await writeFile(join(logs, 'default_bk-ch-r0001-0-sleep-n_uid1', 'main', '0.log'), 'a\n');
    await mkdir(join(logs, 'default_other_uid2', 'main'), { recursive: true });
    await writeFile(join(logs, 'default_other_uid2', 'main', '0.log'), 'bbbb\n');
    assert.deepEqual(await podLogUsage(logs, 'bk-ch-'), { bytes: 2, files: 3 });
    assert.deepEqual(await podLogUsage(join(dir, 'nologs'), 'bk-ch-'), { bytes: 0, files: 0 });
  });
});

describe('countMountsUnder', () => {
  it('counts mount points at or below the directory only', () => {
    const info = [
      '22 1 0:21 / / rw - ext4 /dev/vda rw',
      '30 22 0:40 / /var/lib/k/root rw - tmpfs tmpfs rw',
      '31 22 0:41 / /var/lib/k/root/pods/u/volumes/kubernetes.io~empty-dir/data rw - tmpfs tmpfs rw',
      '32 22 0:42 / /var/lib/k/rootfs rw - tmpfs tmpfs rw',
      '33 22 0:43 / /var/lib/k/root/with\\040space rw - tmpfs tmpfs rw',
      '',
    ].join('\n');
    assert.equal(countMountsUnder(info, '/var/lib/k/root'), 3);
    assert.equal(countMountsUnder(info, '/nowhere'), 0);
  });
});
