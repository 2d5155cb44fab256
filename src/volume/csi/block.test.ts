import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { lstat, readFile, readdir, readlink, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { KubeletPod } from '../../api/types.ts';
import type { HostPathDriver, HostPathDriverOptions } from '../../../test/kit/csi-hostpath/driver.ts';
import { bindClaim, fakeObjectSource, volumePod, type FakeObjectSource } from '../testing.ts';
import { createVolumeManager } from '../volume-manager.ts';
import {
  blockPublishPath,
  blockStagingPath,
  blockVolumeDir,
  createCsiPvPlugin,
  isCsiVolumeError,
  podBlockDevicePath,
  type Csi,
  type CsiPodRef,
  type CsiVolume,
} from './index.ts';
import {
  BED_DRIVER as DRIVER,
  BED_NODE as NODE,
  csiTestBed,
  type CsiTestBed,
  type FakeNodeApi,
} from './testing.ts';

const POD: CsiPodRef = { uid: 'uid-1', name: 'db-0', namespace: 'apps', serviceAccountName: 'db' };
const POD2: CsiPodRef = { uid: 'uid-2', name: 'db-1', namespace: 'apps' };
const BLOCK_CAPABILITY = { block: {}, accessMode: { mode: 'SINGLE_NODE_WRITER' }, accessType: 'block' };

function pv(
  name = 'pv-b',
  extra: Partial<Extract<CsiVolume, { kind: 'persistent' }>> = {},
): Extract<CsiVolume, { kind: 'persistent' }> {
  return {
    kind: 'persistent',
    pvName: name,
    source: { driver: DRIVER, volumeHandle: `handle-${name}`, volumeAttributes: { tier: 'gold' } },
    accessModes: ['ReadWriteOnce'],
    readOnly: false,
    ...extra,
  };
}

/** A block device node of this host (only stat'ed, never opened), if there is one. */
async function hostBlockDevice(): Promise<string | undefined> {
  for (const name of await readdir('/dev')) {
    const p = path.join('/dev', name);
    if ((await lstat(p).catch(() => undefined))?.isBlockDevice()) return p;
  }
  return undefined;
}

/** Makes the fixture's publish target stand for a driver's real one: a block device (`dev`). */
async function asDevice(publishPath: string, dev: string): Promise<void> {
  await unlink(publishPath);
  await symlink(dev, publishPath);
}

describe('CSI block volumes (upstream csi_block.go)', () => {
  let bed: CsiTestBed;
  let root: string;
  let fake: FakeNodeApi;
  let csi: Csi;
  let d: HostPathDriver;

  async function setup(extra: Partial<HostPathDriverOptions> = {}): Promise<void> {
    d = await bed.registerDriver(extra);
  }

  beforeEach(async () => {
    bed = await csiTestBed({
      prefix: 'csi-blk-',
      csiDriverSpec: { attachRequired: false, podInfoOnMount: true },
    });
    ({ root, fake, csi } = bed);
  });

  afterEach(() => bed.close());

  const methods = () => d.calls.map((c) => c.method);

  it('stages and publishes with a block capability at upstream paths, and links the publish path into the pod dir', async () => {
    await setup();
    const link = await csi.blockMapper.map(POD, pv());

    assert.equal(link, path.join(root, 'pods', 'uid-1', 'volumeDevices', 'kubernetes.io~csi', 'pv-b'));
    assert.deepEqual(methods(), ['NodeGetCapabilities', 'NodeStageVolume', 'NodePublishVolume']);
    const stage = d.callsOf('NodeStageVolume')[0]?.request ?? {};
    const staging = path.join(root, 'plugins', 'kubernetes.io', 'csi', 'volumeDevices', 'staging', 'pv-b');
    assert.equal(stage.stagingTargetPath, staging);
    assert.equal(blockStagingPath(root, 'pv-b'), staging);
    assert.deepEqual(stage.volumeCapability, BLOCK_CAPABILITY);
    assert.equal(stage.volumeId, 'handle-pv-b');
    const publish = d.callsOf('NodePublishVolume')[0]?.request ?? {};
    const target = path.join(
      root,
      'plugins',
      'kubernetes.io',
      'csi',
      'volumeDevices',
      'publish',
      'pv-b',
      'uid-1',
    );
    assert.equal(publish.targetPath, target);
    assert.equal(blockPublishPath(root, 'pv-b', 'uid-1'), target);
    assert.equal(publish.stagingTargetPath, staging);
    assert.deepEqual(publish.volumeCapability, BLOCK_CAPABILITY);
    assert.equal(publish.readonly, false);
    assert.deepEqual(publish.volumeContext, {
      tier: 'gold',
      'csi.storage.k8s.io/pod.name': 'db-0',
      'csi.storage.k8s.io/pod.namespace': 'apps',
      'csi.storage.k8s.io/pod.uid': 'uid-1',
      'csi.storage.k8s.io/serviceAccount.name': 'db',
      'csi.storage.k8s.io/ephemeral': 'false',
    });
    assert.equal(await readlink(link), target);
    // The fixture's symlink mode: the target links to the volume's backing file.
    assert.equal(await readlink(target), path.join(root, 'data', 'handle-pv-b.img'));
    const volData = JSON.parse(
      await readFile(path.join(blockVolumeDir(root, 'pv-b'), 'data', 'vol_data.json'), 'utf8'),
    ) as Record<string, string>;
    assert.equal(volData.specVolID, 'pv-b');
    assert.equal(volData.volumeHandle, 'handle-pv-b');
    assert.equal(volData.driverName, DRIVER);
    assert.equal(volData.nodeName, NODE);
    assert.match(volData.attachmentID ?? '', /^csi-[0-9a-f]{64}$/);

    // The fixture's target is no block device: mapping again asks the driver again (idempotently).
    d.calls.length = 0;
    assert.equal(await csi.blockMapper.map(POD, pv()), link, 'mapped again');
    assert.deepEqual(methods(), ['NodeGetCapabilities', 'NodeStageVolume', 'NodePublishVolume']);
    assert.equal(await readlink(target), path.join(root, 'data', 'handle-pv-b.img'), 'the same target');
  });

  it('keeps a mapping whose publish path is a block device without asking the driver', async (t) => {
    const dev = await hostBlockDevice();
    if (!dev) {
      t.skip('no block device node in /dev');
      return;
    }
    await setup();
    const link = await csi.blockMapper.map(POD, pv());
    await asDevice(blockPublishPath(root, 'pv-b', POD.uid), dev);
    d.calls.length = 0;
    assert.equal(await csi.blockMapper.map(POD, pv()), link);
    assert.deepEqual(methods(), []);
  });

  it('publishes read-only when the claim is, and without staging for a driver without STAGE_UNSTAGE_VOLUME', async () => {
    await setup({ stageUnstage: false });
    await csi.blockMapper.map(POD, pv('pv-b', { readOnly: true }));
    assert.deepEqual(methods(), ['NodeGetCapabilities', 'NodePublishVolume']);
    const publish = d.callsOf('NodePublishVolume')[0]?.request ?? {};
    assert.equal(publish.readonly, true);
    assert.equal(publish.stagingTargetPath, '');
    assert.equal(existsSync(blockStagingPath(root, 'pv-b')), false);
    await csi.blockMapper.unmap(POD.uid, 'pv-b');
    assert.deepEqual(methods(), ['NodeGetCapabilities', 'NodePublishVolume', 'NodeUnpublishVolume']);
    assert.equal(existsSync(blockVolumeDir(root, 'pv-b')), false);
  });

  it('unpublishes first and unstages only when no other pod on the node maps the volume', async () => {
    await setup();
    const link1 = await csi.blockMapper.map(POD, pv());
    const link2 = await csi.blockMapper.map(POD2, pv());
    d.calls.length = 0;

    await csi.blockMapper.unmap(POD.uid, 'pv-b');
    assert.deepEqual(methods(), ['NodeUnpublishVolume']);
    assert.equal(
      d.callsOf('NodeUnpublishVolume')[0]?.request.targetPath,
      blockPublishPath(root, 'pv-b', 'uid-1'),
    );
    assert.equal(existsSync(link1), false, "the first pod's link is removed");
    assert.equal(existsSync(blockPublishPath(root, 'pv-b', 'uid-1')), false);
    assert.equal(existsSync(blockStagingPath(root, 'pv-b')), true, 'still staged for the other pod');
    assert.equal(await readlink(link2), blockPublishPath(root, 'pv-b', 'uid-2'));

    await csi.blockMapper.unmap(POD2.uid, 'pv-b');
    assert.deepEqual(methods(), [
      'NodeUnpublishVolume',
      'NodeUnpublishVolume',
      'NodeGetCapabilities',
      'NodeUnstageVolume',
    ]);
    const unstage = d.callsOf('NodeUnstageVolume')[0]?.request ?? {};
    assert.equal(unstage.stagingTargetPath, blockStagingPath(root, 'pv-b'));
    assert.equal(unstage.volumeId, 'handle-pv-b');
    assert.equal(existsSync(link2), false);
    assert.equal(
      existsSync(path.join(root, 'plugins', 'kubernetes.io', 'csi', 'volumeDevices', 'publish', 'pv-b')),
      false,
    );
    assert.equal(existsSync(blockStagingPath(root, 'pv-b')), false);
    assert.equal(existsSync(blockVolumeDir(root, 'pv-b')), false, 'the data dir is removed');
  });

  it('removes the link after a final NodePublish failure, and keeps it after an uncertain one until the teardown', async () => {
    await setup();
    d.behaviour.fail.set('NodePublishVolume', { code: GrpcStatus.INVALID_ARGUMENT, details: 'bad' });
    await assert.rejects(
      csi.blockMapper.map(POD, pv()),
      (err) =>
        isCsiVolumeError(err) &&
        err.step === 'publish' &&
        !err.uncertain &&
        /NodePublishVolume/.test(err.message),
    );
    assert.equal(existsSync(podBlockDevicePath(root, POD.uid, 'pv-b')), false);
    assert.equal(await lstat(podBlockDevicePath(root, POD.uid, 'pv-b')).catch(() => undefined), undefined);

    d.behaviour.fail.clear();
    d.behaviour.hang.add('NodePublishVolume');
    await assert.rejects(
      csi.blockMapper.map(POD, pv()),
      (err) =>
        isCsiVolumeError(err) && err.step === 'publish' && err.uncertain && err.code === 'DeadlineExceeded',
    );
    assert.ok(
      (await lstat(podBlockDevicePath(root, POD.uid, 'pv-b'))).isSymbolicLink(),
      'kept for the teardown',
    );
    d.behaviour.hang.clear();
    d.calls.length = 0;
    await csi.blockMapper.unmap(POD.uid, 'pv-b');
    assert.deepEqual(methods(), ['NodeUnpublishVolume', 'NodeGetCapabilities', 'NodeUnstageVolume']);
  });

  it('hands the stage and publish secrets and the VolumeAttachment metadata to the driver', async () => {
    fake.csiDrivers.delete(DRIVER); // no CSIDriver: attach is required
    await setup();
    fake.api.respond('GET', /^\/apis\/storage\.k8s\.io\/v1\/volumeattachments\/csi-/, {
      status: { attached: false },
    });
    await assert.rejects(csi.blockMapper.map(POD, pv()), /volume handle-pv-b is not yet attached/);
    assert.deepEqual(methods(), []);
    fake.api.respond('GET', /^\/apis\/storage\.k8s\.io\/v1\/volumeattachments\/csi-/, {
      status: { attached: true, attachmentMetadata: { devicePath: '/dev/fake' } },
    });
    fake.api.respond('GET', '/api/v1/namespaces/apps/secrets/stage', {
      data: { key: Buffer.from('st').toString('base64') },
    });
    fake.api.respond('GET', '/api/v1/namespaces/vault/secrets/pub', {
      data: { key: Buffer.from('pb').toString('base64') },
    });
    await csi.blockMapper.map(
      POD,
      pv('pv-b', {
        source: {
          driver: DRIVER,
          volumeHandle: 'handle-pv-b',
          nodeStageSecretRef: { name: 'stage' },
          nodePublishSecretRef: { name: 'pub', namespace: 'vault' },
        },
      }),
    );
    const stage = d.callsOf('NodeStageVolume')[0]?.request ?? {};
    const publish = d.callsOf('NodePublishVolume')[0]?.request ?? {};
    assert.deepEqual(stage.secrets, { key: 'st' });
    assert.deepEqual(publish.secrets, { key: 'pb' });
    assert.deepEqual(stage.publishContext, { devicePath: '/dev/fake' });
    assert.deepEqual(publish.publishContext, { devicePath: '/dev/fake' });
    assert.deepEqual(publish.volumeContext, {}, 'no pod info without a CSIDriver asking for it');
  });

  describe('through the volume manager', () => {
    let objects: FakeObjectSource;
    const blockPod = (uid: string, readOnly = false): KubeletPod =>
      volumePod(
        `p-${uid}`,
        uid,
        [{ name: 'data', persistentVolumeClaim: { claimName: 'blk', readOnly } }],
        [],
        {
          spec: { containers: [{ name: 'c', volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] }] },
        },
      );
    const vmFor = (c: Csi) =>
      createVolumeManager({ rootDir: root, objects, pvPlugins: { csi: createCsiPvPlugin(c) } });

    beforeEach(() => {
      objects = fakeObjectSource();
      bindClaim(objects, 'blk', 'pv-b', {
        volumeMode: 'Block',
        accessModes: ['ReadWriteOnce'],
        csi: { driver: DRIVER, volumeHandle: 'handle-pv-b' },
      });
    });

    it('hands a Block claim bound to a CSI PV to the container as the pod device link, and tears it down with the pod', async () => {
      await setup();
      const vm = vmFor(csi);
      const pod = blockPod('uid-vm');
      await vm.setUpPodVolumes(pod);
      const link = podBlockDevicePath(root, 'uid-vm', 'pv-b');
      const c = pod.spec.containers[0];
      assert.ok(c);
      assert.deepEqual(await vm.devicesFor(pod, c), [
        { containerPath: '/dev/xvda', hostPath: link, permissions: 'mrw' },
      ]);
      assert.deepEqual(d.callsOf('NodePublishVolume')[0]?.request.volumeCapability, BLOCK_CAPABILITY);

      d.calls.length = 0;
      await vm.cleanUpPod('uid-vm');
      assert.deepEqual(methods(), ['NodeUnpublishVolume', 'NodeGetCapabilities', 'NodeUnstageVolume']);
      assert.equal(existsSync(path.join(root, 'pods', 'uid-vm')), false);
      assert.equal(existsSync(blockVolumeDir(root, 'pv-b')), false);
    });

    it('after a kubelet restart, finds the mapping without asking the driver again and tears it down from disk alone', async (t) => {
      const dev = await hostBlockDevice();
      if (!dev) {
        t.skip('no block device node in /dev');
        return;
      }
      await setup();
      const pod = blockPod('uid-rs');
      await vmFor(csi).setUpPodVolumes(pod);
      const link = podBlockDevicePath(root, 'uid-rs', 'pv-b');
      await asDevice(blockPublishPath(root, 'pv-b', 'uid-rs'), dev);

      // A new process: new CSI parts and volume manager, nothing in memory but what is on disk.
      const other = await bed.newCsi();
      await other.watcher.reconcileNow();
      d.calls.length = 0;
      const restarted = createVolumeManager({
        rootDir: root,
        objects,
        pvPlugins: { csi: createCsiPvPlugin(other) },
      });
      await restarted.setUpPodVolumes(pod);
      assert.deepEqual(
        methods().filter((m) => m.startsWith('Node') && m !== 'NodeGetInfo'),
        [],
      );
      const c = pod.spec.containers[0];
      assert.ok(c);
      assert.equal((await restarted.devicesFor(pod, c))[0]?.hostPath, link);

      // And a pod deleted while the kubelet was down: a third process knows only the disk.
      const third = createVolumeManager({ rootDir: root, pvPlugins: { csi: createCsiPvPlugin(other) } });
      await third.cleanUpPod('uid-rs');
      assert.deepEqual(
        methods().filter((m) => m.startsWith('NodeUn')),
        ['NodeUnpublishVolume', 'NodeUnstageVolume'],
      );
      assert.equal(existsSync(link), false);
      assert.equal(existsSync(blockStagingPath(root, 'pv-b')), false);
    });
  });
});
