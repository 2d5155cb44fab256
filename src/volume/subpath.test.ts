import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeletPod, Volume, VolumeMount } from '../api/types.ts';
import { hasCode } from '../util/errors.ts';
import { recordingLogger } from '../util/testing.ts';
import { mountAt, mountsUnder, unmountAllUnder } from './mounts.ts';
import {
  bindSubPath,
  checkSubPath,
  makeSubPathDirs,
  subPathTarget,
  type BindSubPathRequest,
} from './subpath.ts';
import { createVolumeManager, emptyDirPath, type VolumeManager } from './volume-manager.ts';
import { volumePod } from './testing.ts';

describe('subPath: lexical check', () => {
  it('refuses an absolute subPath and any `..` element, in upstream’s words', () => {
    assert.throws(
      () => checkSubPath('/etc', 'v'),
      (err) =>
        hasCode(err, 'InvalidArgument') && /SubPath `\/etc` must not be an absolute path/.test(String(err)),
    );
    for (const bad of ['..', '../x', 'a/../../b', 'a/..']) {
      assert.throws(
        () => checkSubPath(bad, 'v'),
        (err) => hasCode(err, 'InvalidArgument') && /must not contain '\.\.'/.test(String(err)),
        bad,
      );
    }
    assert.equal(checkSubPath('a//b/./c', 'v'), 'a/b/c');
    assert.equal(checkSubPath('..data', 'v'), '..data', 'a name starting with dots is not a backstep');
  });
});

describe('subPath: safe directories and binds', () => {
  let dir = '';
  let vol = '';
  let outside = '';
  const req = (subPath: string, over: Partial<BindSubPathRequest> = {}): BindSubPathRequest => ({
    rootDir: join(dir, 'kubelet'),
    podUID: 'uid-1',
    volume: 'scratch',
    container: 'c',
    index: 0,
    volumeRoot: vol,
    subPath,
    ...over,
  });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'subpath-'));
    vol = join(dir, 'volume');
    outside = join(dir, 'host');
    await mkdir(vol);
    await chmod(vol, 0o777);
    await mkdir(outside);
    await writeFile(join(outside, 'secret'), 'host secret');
    await writeFile(join(vol, 'file'), 'in volume');
  });
  afterEach(async () => {
    await unmountAllUnder(dir);
    await rm(dir, { recursive: true, force: true });
  });

  it('binds a file of the volume at the container’s target, and returns the same bind on a restart', async () => {
    const target = await bindSubPath(req('file'));
    assert.equal(target, subPathTarget(req('file')));
    assert.ok(target.includes('/pods/uid-1/volume-subpaths/scratch/c/0'));
    assert.equal(await readFile(target, 'utf8'), 'in volume');
    assert.equal(await bindSubPath(req('file')), target);
    assert.equal((await mountsUnder(target)).length, 1, 'no second bind stacked on the first');
  });

  it('follows a symlink that stays inside the volume', async () => {
    await mkdir(join(vol, 'real'));
    await writeFile(join(vol, 'real', 'f'), 'through a link');
    await symlink('real', join(vol, 'link'));
    const target = await bindSubPath(req('link'));
    assert.equal(await readFile(join(target, 'f'), 'utf8'), 'through a link');
  });

  it('refuses a symlink to the host’s root or to a file outside, and mounts nothing', async () => {
    await symlink('/', join(vol, 'escape'));
    await symlink(join(outside, 'secret'), join(vol, 'leak'));
    await symlink('../host', join(vol, 'up'));
    for (const [name, sub] of [
      ['escape', 'escape'],
      ['leak', 'leak'],
      ['up', 'up/secret'],
    ] as const) {
      await assert.rejects(
        bindSubPath(req(sub, { container: name })),
        (err) => hasCode(err, 'FailedPrecondition') && /not within the volume/.test(String(err)),
        sub,
      );
      assert.equal(await mountAt(subPathTarget(req(sub, { container: name }))), undefined, sub);
    }
  });

  it('makes missing directories with the volume root’s mode, and never through a symlink out', async () => {
    await makeSubPathDirs(vol, 'a/b/c');
    const st = await stat(join(vol, 'a/b/c'));
    assert.ok(st.isDirectory());
    assert.equal(st.mode & 0o777, 0o777, 'the root’s mode, whatever the umask');

    await symlink(outside, join(vol, 'out'));
    await assert.rejects(makeSubPathDirs(vol, 'out/made'), (err) => hasCode(err, 'FailedPrecondition'));
    await symlink(join(outside, 'missing'), join(vol, 'dangling'));
    await assert.rejects(makeSubPathDirs(vol, 'dangling/made'), (err) => hasCode(err, 'FailedPrecondition'));
    assert.deepEqual((await readdir(outside)).sort(), ['secret'], 'nothing made outside the volume');
  });
});

describe('subPath: through the volume manager', () => {
  let root = '';
  let vm: VolumeManager;
  let logger: ReturnType<typeof recordingLogger>;
  const pod = (mounts: VolumeMount[]): KubeletPod => {
    const volumes: Volume[] = [{ name: 'scratch', emptyDir: {} }];
    return volumePod('p', 'uid-sp', volumes, mounts);
  };

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'subpath-vm-'));
    logger = recordingLogger();
    vm = createVolumeManager({ rootDir: root, logger });
  });
  afterEach(async () => {
    await unmountAllUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  it('tells the pod upstream’s short message for an escaping symlink, and logs the detail', async () => {
    const p = pod([{ name: 'scratch', mountPath: '/mnt', subPath: 'escape' }]);
    await vm.setUpPodVolumes(p);
    // What a first container of the pod could do in its emptyDir.
    await symlink('/', join(emptyDirPath(root, 'uid-sp', 'scratch'), 'escape'));
    await assert.rejects(vm.mountsFor(p, p.spec.containers[0] ?? { name: '' }), (err) => {
      const text = String(err);
      return (
        hasCode(err, 'FailedPrecondition') &&
        text.includes('failed to prepare subPath for volumeMount "scratch" of container "c"') &&
        !text.includes(root)
      );
    });
    const line = logger.lines.find((l) => l.msg === 'failed to prepare subPath');
    assert.equal(line?.fields.podUID, 'uid-sp');
    assert.match(String(line?.fields.err), /resolves to \//);
  });

  it('unmounts the subPath binds when the pod’s volumes are torn down', async () => {
    const p = pod([{ name: 'scratch', mountPath: '/data', subPath: 'data/deeper' }]);
    await vm.setUpPodVolumes(p);
    const [m] = await vm.mountsFor(p, p.spec.containers[0] ?? { name: '' });
    assert.ok(m && (await mountAt(m.hostPath)), 'bound');
    await vm.tearDownVolumes('uid-sp');
    assert.deepEqual(await mountsUnder(root), []);
    await assert.rejects(lstat(join(root, 'pods', 'uid-sp', 'volume-subpaths')), { code: 'ENOENT' });
  });
});
