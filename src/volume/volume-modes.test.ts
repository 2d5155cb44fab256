import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { KubeletPod } from '../api/types.ts';
import { mountAt, unmountAllUnder } from './mounts.ts';
import { b64, fakeObjectSource, volumePod } from './testing.ts';
import { createVolumeManager, emptyDirPath, podDir, projectedVolumePath } from './volume-manager.ts';

const run = promisify(execFile);
const modeOf = async (p: string) => (await stat(p)).mode & 0o7777;

/** Whether `nobody` can read `file` (runuser, as the attacker on the node would). */
async function nobodyReads(file: string): Promise<boolean> {
  try {
    await run('runuser', ['-u', 'nobody', '--', 'cat', file], { timeout: 10_000 });
    return true;
  } catch {
    return false; // cat failed: Permission denied (the point of the test)
  }
}

// A umask of 000 for the whole file: every mode below is the one the kubelet asked for.
let umask = 0;
before(() => void (umask = process.umask(0)));
after(() => void process.umask(umask));

describe('volume file modes: nothing of a pod readable by other local users', () => {
  let root = '';
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'volume-modes-'));
    // A root dir open to everyone (made 0755 by hand, or before the kubelet tightens it): what
    // keeps others out must be the directories the volume manager makes below it.
    await chmod(root, 0o755);
  });
  afterEach(async () => {
    await unmountAllUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  it('makes the pod dir, volumes/ and each plugin dir 0750, so nobody cannot read a secret; the volume roots keep what containers need', async () => {
    const objects = fakeObjectSource();
    objects.secrets.set('ns/creds', { metadata: { name: 'creds' }, data: { pass: b64('s3cret') } });
    objects.configMaps.set('ns/conf', { metadata: { name: 'conf' }, data: { 'app.conf': 'x=1\n' } });
    const vm = createVolumeManager({ rootDir: root, objects });
    const uid = 'uid-modes';
    const pod: KubeletPod = volumePod('p', uid, [
      { name: 'creds', secret: { secretName: 'creds' } },
      { name: 'conf', configMap: { name: 'conf' } },
      {
        name: 'info',
        downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] },
      },
      { name: 'scratch', emptyDir: {} },
      { name: 'mem', emptyDir: { medium: 'Memory' } },
    ]);
    await vm.setUpPodVolumes(pod);

    const volumes = join(podDir(root, uid), 'volumes');
    for (const d of [
      join(root, 'pods'),
      podDir(root, uid),
      volumes,
      join(volumes, 'kubernetes.io~secret'),
      join(volumes, 'kubernetes.io~configmap'),
      join(volumes, 'kubernetes.io~downward-api'),
      join(volumes, 'kubernetes.io~empty-dir'),
    ]) {
      assert.equal(await modeOf(d), 0o750, d);
    }
    const secret = projectedVolumePath(root, uid, 'secret', 'creds');
    assert.equal((await mountAt(secret))?.fsType, 'tmpfs');
    // A tmpfs root is 1777 unless mounted with a mode; read-only volumes need no write bit.
    assert.equal(await modeOf(secret), 0o755, 'secret tmpfs root');
    assert.equal(await modeOf(projectedVolumePath(root, uid, 'downwardAPI', 'info')), 0o755);
    assert.equal(await modeOf(projectedVolumePath(root, uid, 'configMap', 'conf')), 0o755);
    assert.equal(await modeOf(emptyDirPath(root, uid, 'scratch')), 0o777, 'emptyDir: upstream perm');
    const mem = emptyDirPath(root, uid, 'mem');
    assert.equal((await mountAt(mem))?.fsType, 'tmpfs');
    assert.equal(await modeOf(mem), 0o1777, 'Memory emptyDir tmpfs root: 1777, as upstream');

    const file = join(secret, 'pass');
    assert.equal(await readFile(file, 'utf8'), 's3cret');
    assert.equal(await modeOf(file), 0o644, 'defaultMode: a non-root container user reads it');
    assert.equal(await nobodyReads(file), false, 'nobody on the node cannot read the secret');
  });

  it('tightens a pod dir an older version left 0755', async () => {
    const uid = 'uid-old';
    await mkdir(join(podDir(root, uid), 'volumes'), { recursive: true, mode: 0o755 });
    await chmod(join(root, 'pods'), 0o755);
    const vm = createVolumeManager({ rootDir: root });
    await vm.setUpPodVolumes(volumePod('p', uid, [{ name: 'scratch', emptyDir: {} }]));
    assert.equal(await modeOf(podDir(root, uid)), 0o750);
    assert.equal(await modeOf(join(podDir(root, uid), 'volumes')), 0o750);
  });
});
