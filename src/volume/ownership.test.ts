import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, stat, symlink, writeFile, lstat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nullLogger } from '../util/logger.ts';
import { setVolumeOwnership } from './ownership.ts';

describe('setVolumeOwnership (upstream SetVolumeOwnership)', () => {
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'owner-'));
    await mkdir(join(dir, 'd'));
    await writeFile(join(dir, 'd', 'f'), 'x', { mode: 0o600 });
    await writeFile(join(tmpdir(), 'owner-target'), 'x', { mode: 0o600 });
    await symlink(join(tmpdir(), 'owner-target'), join(dir, 'link'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(join(tmpdir(), 'owner-target'), { force: true });
  });

  it('walks the tree: group, group bits, setgid on directories, and never chmods through a symlink', async () => {
    assert.equal(await setVolumeOwnership({ dir, fsGroup: 2000, readOnly: false, logger: nullLogger }), true);
    assert.equal((await stat(join(dir, 'd', 'f'))).mode & 0o777, 0o660);
    assert.equal((await stat(join(dir, 'd'))).mode & 0o2070, 0o2070);
    assert.equal((await lstat(join(dir, 'link'))).gid, 2000);
    assert.equal(
      (await stat(join(tmpdir(), 'owner-target'))).mode & 0o777,
      0o600,
      'the link target is untouched',
    );
  });

  it('OnRootMismatch skips the walk when the root already matches, and walks when it does not', async () => {
    await setVolumeOwnership({ dir, fsGroup: 2000, readOnly: false, logger: nullLogger });
    await chmod(join(dir, 'd', 'f'), 0o600);
    const skip = await setVolumeOwnership({
      dir,
      fsGroup: 2000,
      readOnly: false,
      changePolicy: 'OnRootMismatch',
      logger: nullLogger,
    });
    assert.equal(skip, false);
    assert.equal((await stat(join(dir, 'd', 'f'))).mode & 0o777, 0o600);
    const walk = await setVolumeOwnership({
      dir,
      fsGroup: 3000,
      readOnly: false,
      changePolicy: 'OnRootMismatch',
      logger: nullLogger,
    });
    assert.equal(walk, true);
    assert.equal((await stat(join(dir, 'd', 'f'))).gid, 3000);
  });
});
