import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeletPod, Pod, Volume, VolumeMount } from '../api/types.ts';
import { createMemoryRecorder } from '../api/events.ts';
import { KubeletError } from '../util/errors.ts';
import { createVolumeManager, type VolumeManager } from './volume-manager.ts';
import { mountsUnder, unmountAllUnder } from './mounts.ts';
import { bindClaim, fakeObjectSource, volumePod, type FakeObjectSource } from './testing.ts';
import { localDeviceMountDir, podDeviceDir, podPvDir } from './pv-plugins.ts';
import { PV_GID_ANNOTATION } from './claim-volumes.ts';

const LOCAL = 'kubernetes.io/local-volume';
const NODE = { name: 'node-a', labels: { 'kubernetes.io/hostname': 'node-a', zone: 'z1' } };

let seq = 0;
function claimPod(
  claim: string,
  mounts: VolumeMount[] = [{ name: 'data', mountPath: '/data' }],
  spec: Partial<Pod['spec']> = {},
  readOnly = false,
): KubeletPod {
  seq += 1;
  const volumes: Volume[] = [{ name: 'data', persistentVolumeClaim: { claimName: claim, readOnly } }];
  return volumePod(`p${seq}`, `uid-pv-${seq}`, volumes, mounts, { spec });
}
const container = (pod: KubeletPod) => pod.spec.containers[0] ?? { name: '' };
const mountCount = async (dir: string) => (await mountsUnder(dir)).filter((m) => m.mountPoint === dir).length;

/** A loop device on a sparse file of `bytes` under `dir`, for `fn`; mounts under `dir` and the device go after. */
async function withLoopDevice(dir: string, name: string, bytes: number, fn: (dev: string) => Promise<void>) {
  const image = join(dir, name);
  await writeFile(image, '');
  await truncate(image, bytes);
  const dev = execFileSync('losetup', ['--find', '--show', image], { encoding: 'utf8' }).trim();
  try {
    await fn(dev);
  } finally {
    await unmountAllUnder(dir);
    execFileSync('losetup', ['-d', dev]);
  }
}

describe('persistentVolumeClaim volumes: claim resolution (upstream populator)', () => {
  let root = '';
  let objects: FakeObjectSource;
  let vm: VolumeManager;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'pvc-'));
    objects = fakeObjectSource();
    vm = createVolumeManager({ rootDir: root, objects, node: () => NODE });
  });
  afterEach(async () => {
    await unmountAllUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  const rejectsWith = (pod: KubeletPod, re: RegExp, code?: string) =>
    assert.rejects(vm.setUpPodVolumes(pod), (err: unknown) => {
      assert.ok(err instanceof KubeletError);
      assert.match(err.message, re);
      if (code) assert.equal(err.code, code);
      return true;
    });

  it('keeps the pod waiting with upstream’s messages while the claim is missing, unbound or being deleted', async () => {
    const pod = claimPod('data');
    await rejectsWith(
      pod,
      /^mount volume data: error processing PVC ns\/data: failed to fetch PVC from API server: persistentvolumeclaims "data" not found$/,
      'NotFound',
    );
    objects.claims.set('ns/data', { metadata: { name: 'data', uid: 'c1' }, status: { phase: 'Pending' } });
    await rejectsWith(pod, /error processing PVC ns\/data: PVC is not bound$/);
    objects.claims.set('ns/data', { metadata: { name: 'data', uid: 'c1' }, status: { phase: 'Lost' } });
    await rejectsWith(pod, /PVC is not bound$/);
    objects.claims.set('ns/data', { metadata: { name: 'data', uid: 'c1' }, status: { phase: 'Bound' } });
    await rejectsWith(pod, /PVC has empty pvc\.Spec\.VolumeName$/);
    objects.claims.set('ns/data', {
      metadata: { name: 'data', uid: 'c1', deletionTimestamp: '2026-01-01T00:00:00Z' },
      status: { phase: 'Bound' },
    });
    await rejectsWith(pod, /PVC is being deleted$/);
  });

  it('checks the PV is bound back to the claim by UID', async () => {
    const pod = claimPod('data');
    const { pv } = bindClaim(objects, 'data', 'pv-1', { local: { path: root } });
    objects.pvs.delete('pv-1');
    await rejectsWith(
      pod,
      /failed to fetch PV pv-1 from API server: persistentvolumes "pv-1" not found$/,
      'NotFound',
    );
    objects.pvs.set('pv-1', { ...pv, spec: { local: { path: root } } });
    await rejectsWith(
      pod,
      /found PV object pv-1 but it has a nil pv\.Spec\.ClaimRef indicating it is not yet bound to the claim$/,
    );
    objects.pvs.set('pv-1', {
      ...pv,
      spec: { local: { path: root }, claimRef: { name: 'data', uid: 'other' } },
    });
    await rejectsWith(
      pod,
      /found PV object pv-1 but its pv\.Spec\.ClaimRef\.UID other does not point to claim\.UID claim-uid-data$/,
    );
  });

  it('rejects an API failure with its own code, never as a missing claim', async () => {
    objects.failWith = new KubeletError('Unavailable', 'GET pvc', 'connection refused');
    await rejectsWith(
      claimPod('data'),
      /failed to fetch PVC from API server: GET pvc: connection refused$/,
      'Unavailable',
    );
  });

  it('fails clearly without an API server (standalone)', async () => {
    const standalone = createVolumeManager({ rootDir: root });
    await assert.rejects(standalone.setUpPodVolumes(claimPod('data')), /need the API server/);
  });

  it('names an unsupported PV type in the error and keeps serving other pods', async () => {
    bindClaim(objects, 'nfs', 'pv-nfs', { nfs: { server: 'x', path: '/' }, capacity: { storage: '1Gi' } });
    await rejectsWith(
      claimPod('nfs'),
      /failed to get Plugin from volumeSpec for volume "pv-nfs" err=no volume plugin matched \(PersistentVolume type nfs is not supported; supported: hostPath, local\)/,
      'Unimplemented',
    );
    const ok = volumePod('ok', 'uid-ok', [{ name: 'e', emptyDir: {} }]);
    await vm.setUpPodVolumes(ok);
  });

  it('refuses a volumeMode that does not match how the containers use the volume', async () => {
    bindClaim(objects, 'blk', 'pv-blk', { volumeMode: 'Block', local: { path: root } });
    await rejectsWith(claimPod('blk'), /volume data has volumeMode Block, but is specified in volumeMounts$/);
    bindClaim(objects, 'fs', 'pv-fs', { local: { path: root } });
    const pod = claimPod('fs', [], {
      containers: [{ name: 'c', volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] }],
    });
    await rejectsWith(pod, /volume data has volumeMode Filesystem, but is specified in volumeDevices$/);
  });

  it('honours the PV’s required node affinity (labels and metadata.name)', async () => {
    const dir = join(root, 'disk');
    await mkdir(dir);
    const affinity = (terms: object[]) => ({ required: { nodeSelectorTerms: terms } });
    bindClaim(objects, 'far', 'pv-far', {
      local: { path: dir },
      nodeAffinity: affinity([
        { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-b'] }] },
      ]),
    });
    await rejectsWith(
      claimPod('far'),
      /MountVolume\.NodeAffinity check failed for volume "pv-far" : no matching NodeSelectorTerms$/,
    );
    bindClaim(objects, 'near', 'pv-near', {
      local: { path: dir },
      nodeAffinity: affinity([
        { matchExpressions: [{ key: 'zone', operator: 'In', values: ['z9'] }] },
        { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-a'] }] },
      ]),
    });
    await vm.setUpPodVolumes(claimPod('near'));
    const unknownNode = createVolumeManager({ rootDir: root, objects });
    await assert.rejects(unknownNode.setUpPodVolumes(claimPod('near')), /the node's labels are unknown/);
  });
});

describe('persistentVolumeClaim volumes: hostPath and local PVs', () => {
  let root = '';
  let objects: FakeObjectSource;
  let recorder: ReturnType<typeof createMemoryRecorder>;
  let vm: VolumeManager;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'pv-'));
    objects = fakeObjectSource();
    recorder = createMemoryRecorder();
    vm = createVolumeManager({ rootDir: root, objects, recorder, node: () => NODE });
  });
  afterEach(async () => {
    await unmountAllUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  it('mounts a hostPath PV’s path directly, after its type checks, read-only from the claim reference', async () => {
    const path = join(root, 'host', 'data');
    bindClaim(objects, 'hp', 'pv-hp', { hostPath: { path, type: 'DirectoryOrCreate' } });
    const pod = claimPod('hp', [{ name: 'data', mountPath: '/data' }], {}, true);
    await vm.setUpPodVolumes(pod);
    assert.ok((await stat(path)).isDirectory(), 'DirectoryOrCreate made it');
    assert.deepEqual(await vm.mountsFor(pod, container(pod)), [
      { containerPath: '/data', hostPath: path, readonly: true, propagation: 'PROPAGATION_PRIVATE' },
    ]);
    bindClaim(objects, 'sock', 'pv-sock', { hostPath: { path, type: 'Socket' } });
    await assert.rejects(vm.setUpPodVolumes(claimPod('sock')), /is not a Socket/);
  });

  it('bind-mounts a local directory PV per pod; the data outlives the pod; a restart neither loses nor doubles the mount', async () => {
    const disk = join(root, 'disk');
    await mkdir(disk);
    bindClaim(objects, 'data', 'pv-local', { local: { path: disk } });
    const pod = claimPod('data');
    await vm.setUpPodVolumes(pod);
    const dir = podPvDir(root, pod.metadata.uid, LOCAL, 'pv-local');
    assert.equal(await mountCount(dir), 1);
    const [m] = await vm.mountsFor(pod, container(pod));
    assert.equal(m?.hostPath, dir);
    assert.equal(m?.readonly, false);
    await writeFile(join(dir, 'written'), 'by pod 1');

    const restarted = createVolumeManager({ rootDir: root, objects, node: () => NODE });
    await restarted.setUpPodVolumes(pod);
    await restarted.setUpPodVolumes(pod);
    assert.equal(await mountCount(dir), 1, 'found, not mounted again');
    assert.equal((await restarted.mountsFor(pod, container(pod)))[0]?.hostPath, dir);

    await restarted.cleanUpPod(pod.metadata.uid);
    assert.equal((await mountsUnder(join(root, 'pods'))).length, 0);
    await assert.rejects(lstat(join(root, 'pods', pod.metadata.uid)), { code: 'ENOENT' });
    assert.equal(await readFile(join(disk, 'written'), 'utf8'), 'by pod 1', 'the PV keeps its data');

    const second = claimPod('data');
    await vm.setUpPodVolumes(second);
    const dir2 = podPvDir(root, second.metadata.uid, LOCAL, 'pv-local');
    assert.equal(await readFile(join(dir2, 'written'), 'utf8'), 'by pod 1');
  });

  it('tearDownVolumes unmounts a finished pod’s local volume and keeps the PV data', async () => {
    const disk = join(root, 'disk');
    await mkdir(disk);
    await writeFile(join(disk, 'keep'), 'x');
    bindClaim(objects, 'data', 'pv-local', { local: { path: disk } });
    const pod = claimPod('data');
    await vm.setUpPodVolumes(pod);
    await vm.tearDownVolumes(pod.metadata.uid);
    assert.equal((await mountsUnder(join(root, 'pods'))).length, 0);
    assert.equal(await readFile(join(disk, 'keep'), 'utf8'), 'x');
  });

  it('sets fsGroup ownership on a local PV’s whole tree on first use, and warns instead when another pod has it mounted', async () => {
    const disk = join(root, 'disk');
    await mkdir(join(disk, 'sub'), { recursive: true });
    await writeFile(join(disk, 'sub', 'f'), 'x', { mode: 0o600 });
    bindClaim(objects, 'data', 'pv-local', { local: { path: disk } });
    const pod = claimPod('data', undefined, { securityContext: { fsGroup: 1234 } });
    await vm.setUpPodVolumes(pod);
    for (const p of [disk, join(disk, 'sub')]) {
      const st = await stat(p);
      assert.equal(st.gid, 1234, p);
      assert.equal(st.mode & 0o2770, 0o2770, `${p}: setgid and group rwx`);
    }
    const f = await stat(join(disk, 'sub', 'f'));
    assert.equal(f.gid, 1234);
    assert.equal(f.mode & 0o777, 0o660);

    const other = claimPod('data', undefined, { securityContext: { fsGroup: 999 } });
    await vm.setUpPodVolumes(other);
    assert.equal((await stat(disk)).gid, 1234, 'not changed under a pod that uses it');
    assert.deepEqual(
      recorder.events.map((e) => `${e.reason}: ${e.message}`),
      [
        'AlreadyMountedVolume: The requested fsGroup is 999, but the volume pv-local has GID 1234. The volume may not be shareable.',
      ],
    );
  });

  it('hostPath PVs get no ownership management (upstream)', async () => {
    const path = join(root, 'hp');
    await mkdir(path);
    const before = await stat(path);
    bindClaim(objects, 'hp', 'pv-hp', { hostPath: { path } });
    await vm.setUpPodVolumes(claimPod('hp', undefined, { securityContext: { fsGroup: 4321 } }));
    assert.equal((await stat(path)).gid, before.gid);
  });

  it('refuses a local PV path that is neither a directory nor a block device, or missing', async () => {
    await writeFile(join(root, 'file'), '');
    bindClaim(objects, 'f', 'pv-f', { local: { path: join(root, 'file') } });
    await assert.rejects(vm.setUpPodVolumes(claimPod('f')), /only directory and block device are supported/);
    bindClaim(objects, 'gone', 'pv-gone', { local: { path: join(root, 'nope') } });
    await assert.rejects(
      vm.setUpPodVolumes(claimPod('gone')),
      /MountVolume\.MountDevice failed for volume "pv-gone"/,
    );
  });

  it('hands a Block local PV to the container as a device (mrw, r when the claim is readOnly) and removes the link on teardown', async () => {
    const dev = join(root, 'fake-blk');
    execFileSync('mknod', [dev, 'b', '7', '250']);
    bindClaim(objects, 'blk', 'pv-blk', { volumeMode: 'Block', local: { path: dev } });
    const spec = { containers: [{ name: 'c', volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] }] };
    const pod = claimPod('blk', [], spec);
    await vm.setUpPodVolumes(pod);
    const link = join(podDeviceDir(root, pod.metadata.uid, LOCAL), 'pv-blk');
    assert.equal(await readlink(link), dev);
    assert.deepEqual(await vm.devicesFor(pod, container(pod)), [
      { containerPath: '/dev/xvda', hostPath: link, permissions: 'mrw' },
    ]);
    const ro = claimPod('blk', [], spec, true);
    await vm.setUpPodVolumes(ro);
    assert.equal((await vm.devicesFor(ro, container(ro)))[0]?.permissions, 'r');

    await vm.tearDownVolumes(pod.metadata.uid);
    await assert.rejects(lstat(link), { code: 'ENOENT' });
    assert.ok((await lstat(dev)).isBlockDevice(), 'the device itself stays');

    bindClaim(objects, 'hpb', 'pv-hpb', { volumeMode: 'Block', hostPath: { path: dev } });
    await assert.rejects(
      vm.setUpPodVolumes(claimPod('hpb', [], spec)),
      /volumeMode Block is not supported for PersistentVolume type hostPath/,
    );
    bindClaim(objects, 'dirb', 'pv-dirb', { volumeMode: 'Block', local: { path: root } });
    await assert.rejects(vm.setUpPodVolumes(claimPod('dirb', [], spec)), /is not a block device/);
  });

  it('gives the containers the group of each PV’s pv.beta.kubernetes.io/gid, once, unless the pod has it or it is no integer', async () => {
    const disk = join(root, 'disk');
    await mkdir(disk);
    const withGid = (claim: string, pvName: string, gid: string) => {
      const { pv } = bindClaim(objects, claim, pvName, { hostPath: { path: disk } });
      pv.metadata.annotations = { [PV_GID_ANNOTATION]: gid };
    };
    withGid('g1', 'pv-g1', '1234');
    withGid('g2', 'pv-g2', '1234');
    withGid('g3', 'pv-g3', '5678');
    withGid('g4', 'pv-g4', 'staff');
    bindClaim(objects, 'g5', 'pv-g5', { hostPath: { path: disk } });
    seq += 1;
    const pod = volumePod(
      `p${seq}`,
      `uid-pv-${seq}`,
      ['g1', 'g2', 'g3', 'g4', 'g5'].map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
    );
    assert.deepEqual(vm.extraSupplementalGroups(pod), [], 'nothing before the volumes are set up');
    await vm.setUpPodVolumes(pod);
    assert.deepEqual(vm.extraSupplementalGroups(pod), [1234, 5678]);
    pod.spec.securityContext = { supplementalGroups: [5678] };
    assert.deepEqual(vm.extraSupplementalGroups(pod), [1234], 'a group the pod already has is not repeated');
    await vm.cleanUpPod(pod.metadata.uid);
    assert.deepEqual(vm.extraSupplementalGroups(pod), []);
  });

  it('lists a pod’s claim volumes for stats: statfs path for local, none for hostPath', async () => {
    const disk = join(root, 'disk');
    await mkdir(disk);
    bindClaim(objects, 'loc', 'pv-loc', { local: { path: disk } });
    bindClaim(objects, 'hp', 'pv-hp2', { hostPath: { path: disk } });
    seq += 1;
    const pod = volumePod(`p${seq}`, `uid-pv-${seq}`, [
      { name: 'a', persistentVolumeClaim: { claimName: 'loc' } },
      { name: 'b', persistentVolumeClaim: { claimName: 'hp' } },
    ]);
    await vm.setUpPodVolumes(pod);
    assert.deepEqual(vm.measuredVolumes(pod.metadata.uid), [
      {
        volume: 'a',
        claimName: 'loc',
        mode: 'Filesystem',
        metricsPath: podPvDir(root, pod.metadata.uid, LOCAL, 'pv-loc'),
      },
      { volume: 'b', claimName: 'hp', mode: 'Filesystem' },
    ]);
    await vm.cleanUpPod(pod.metadata.uid);
    assert.deepEqual(vm.measuredVolumes(pod.metadata.uid), []);
  });

  it('formats a blank block device for a Filesystem local PV, mounts it once per node, and releases it when no pod uses it', async () => {
    await withLoopDevice(root, 'disk.img', 16 << 20, async (dev) => {
      bindClaim(objects, 'fsdev', 'pv-fsdev', { local: { path: dev } });
      const global = localDeviceMountDir(root, 'pv-fsdev');
      const one = claimPod('fsdev');
      const two = claimPod('fsdev');
      await vm.setUpPodVolumes(one);
      await vm.setUpPodVolumes(two);
      assert.equal((await mountsUnder(global)).filter((m) => m.mountPoint === global)[0]?.fsType, 'ext4');
      assert.equal(await mountCount(global), 1, 'one device mount for both pods');
      const dir1 = podPvDir(root, one.metadata.uid, LOCAL, 'pv-fsdev');
      await writeFile(join(dir1, 'kept'), 'on the device');

      await vm.cleanUpPod(one.metadata.uid);
      assert.equal(await mountCount(global), 1, 'still used by the second pod');
      await vm.cleanUpPod(two.metadata.uid);
      await assert.rejects(lstat(global), { code: 'ENOENT' }, 'released: unmounted and removed');

      const three = claimPod('fsdev');
      await vm.setUpPodVolumes(three);
      const dir3 = podPvDir(root, three.metadata.uid, LOCAL, 'pv-fsdev');
      assert.equal(
        await readFile(join(dir3, 'kept'), 'utf8'),
        'on the device',
        'mounted again, never reformatted',
      );
      await vm.cleanUpPod(three.metadata.uid);
    });
  });

  it('mounts a device holding another filesystem as the PV asks, and names both when that fails (upstream FilesystemMismatch)', async () => {
    await withLoopDevice(root, 'minix.img', 4 << 20, async (dev) => {
      execFileSync('mkfs.minix', [dev], { stdio: 'ignore' });
      bindClaim(objects, 'minix', 'pv-minix', { local: { path: dev, fsType: 'ext4' } });
      await assert.rejects(
        vm.setUpPodVolumes(claimPod('minix')),
        /MountVolume\.MountDevice failed for volume "pv-minix" : .*failed to mount the volume as "ext4", it already contains minix\. Mount error: /,
      );
      assert.equal(
        (await mountsUnder(root)).filter((m) => m.source === dev).length,
        0,
        'never mounted as the filesystem it holds',
      );
    });
  });

  it('refuses devices for a volume that is not a set-up Block claim (upstream makeBlockVolumes)', async () => {
    const pod = volumePod('d', 'uid-d', [{ name: 'e', emptyDir: {} }], [], {
      spec: { containers: [{ name: 'c', volumeDevices: [{ name: 'e', devicePath: '/dev/x' }] }] },
    });
    await assert.rejects(
      vm.devicesFor(pod, container(pod)),
      /cannot find volume "e" to pass into container "c"/,
    );
  });
});
