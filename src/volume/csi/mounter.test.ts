import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { apiError } from '../../api/testing.ts';
import type { HostPathDriver, HostPathDriverOptions } from '../../../test/kit/csi-hostpath/driver.ts';
import {
  appliesFsGroup,
  createCsiClient,
  deviceMountPath,
  ephemeralVolumeHandle,
  isCsiVolumeError,
  podVolumeMountPath,
  type Csi,
  type CsiPodRef,
  type CsiVolume,
} from './index.ts';
import { BED_DRIVER as DRIVER, csiTestBed, type CsiTestBed, type FakeNodeApi } from './testing.ts';

const POD: CsiPodRef = { uid: 'uid-1', name: 'db-0', namespace: 'apps', serviceAccountName: 'db' };
const POD2: CsiPodRef = { uid: 'uid-2', name: 'db-1', namespace: 'apps' };

function pv(name = 'pv-1', extra: Partial<Extract<CsiVolume, { kind: 'persistent' }>> = {}): CsiVolume {
  return {
    kind: 'persistent',
    pvName: name,
    source: {
      driver: DRIVER,
      volumeHandle: `handle-${name}`,
      fsType: 'ext4',
      volumeAttributes: { tier: 'gold' },
    },
    accessModes: ['ReadWriteOnce'],
    mountOptions: ['noatime'],
    readOnly: false,
    ...extra,
  };
}

describe('the CSI mounter', () => {
  let bed: CsiTestBed;
  let root: string;
  let fake: FakeNodeApi;
  let csi: Csi;
  let d: HostPathDriver;

  async function setup(extra: Partial<HostPathDriverOptions> = {}): Promise<void> {
    d = await bed.registerDriver(extra);
  }

  beforeEach(async () => {
    // attachRequired: false, so no VolumeAttachment is needed (the host-path driver has no controller).
    bed = await csiTestBed({
      prefix: 'csi-mnt-',
      csiDriverSpec: {
        attachRequired: false,
        podInfoOnMount: true,
        volumeLifecycleModes: ['Persistent', 'Ephemeral'],
      },
    });
    ({ root, fake, csi } = bed);
  });

  afterEach(() => bed.close());

  it('stages into the PV global mount dir and publishes into the pod volume dir, with pod info on mount', async () => {
    await setup();
    const target = await csi.mounter.setUp(POD, pv());

    assert.equal(target, path.join(root, 'pods', 'uid-1', 'volumes', 'kubernetes.io~csi', 'pv-1', 'mount'));
    assert.deepEqual(
      d.calls.map((c) => c.method),
      ['NodeGetCapabilities', 'NodeStageVolume', 'NodePublishVolume'],
    );
    const stage = d.callsOf('NodeStageVolume')[0]?.request ?? {};
    assert.equal(stage.volumeId, 'handle-pv-1');
    assert.equal(
      stage.stagingTargetPath,
      path.join(root, 'plugins', 'kubernetes.io', 'csi', 'pv', 'pv-1', 'globalmount'),
    );
    assert.deepEqual(stage.volumeCapability, {
      mount: { fsType: 'ext4', mountFlags: ['noatime'] },
      accessMode: { mode: 'SINGLE_NODE_WRITER' },
      accessType: 'mount',
    });
    assert.deepEqual(stage.volumeContext, { tier: 'gold' });
    const publish = d.callsOf('NodePublishVolume')[0]?.request ?? {};
    assert.equal(publish.targetPath, target);
    assert.equal(publish.stagingTargetPath, stage.stagingTargetPath);
    assert.equal(publish.readonly, false);
    assert.deepEqual(publish.volumeContext, {
      tier: 'gold',
      'csi.storage.k8s.io/pod.name': 'db-0',
      'csi.storage.k8s.io/pod.namespace': 'apps',
      'csi.storage.k8s.io/pod.uid': 'uid-1',
      'csi.storage.k8s.io/serviceAccount.name': 'db',
      'csi.storage.k8s.io/ephemeral': 'false',
    });
    assert.equal(await readlink(target), path.join(root, 'data', 'handle-pv-1'));
    const volData = JSON.parse(
      await readFile(path.join(path.dirname(target), 'vol_data.json'), 'utf8'),
    ) as Record<string, string>;
    assert.equal(volData.driverName, DRIVER);
    assert.equal(volData.volumeHandle, 'handle-pv-1');
  });

  it('passes no pod info when the CSIDriver does not ask for it', async () => {
    fake.csiDrivers.set(DRIVER, { spec: { attachRequired: false } });
    await setup();
    await csi.mounter.setUp(POD, pv());
    assert.deepEqual(d.callsOf('NodePublishVolume')[0]?.request.volumeContext, { tier: 'gold' });
  });

  it('tears down: unpublishes, and unstages only when the last pod on the node has unpublished the volume', async () => {
    await setup();
    const t1 = await csi.mounter.setUp(POD, pv());
    const t2 = await csi.mounter.setUp(POD2, pv());
    d.calls.length = 0;

    await csi.mounter.tearDown(POD.uid, 'pv-1');
    assert.deepEqual(
      d.calls.map((c) => c.method),
      ['NodeUnpublishVolume'],
    );
    assert.equal(d.callsOf('NodeUnpublishVolume')[0]?.request.targetPath, t1);
    assert.equal(existsSync(path.dirname(t1)), false, 'the pod volume dir is removed');
    assert.equal(existsSync(deviceMountPath(root, 'pv-1')), true, 'still staged for the other pod');

    await csi.mounter.tearDown(POD2.uid, 'pv-1');
    assert.deepEqual(
      d.calls.map((c) => c.method),
      ['NodeUnpublishVolume', 'NodeUnpublishVolume', 'NodeGetCapabilities', 'NodeUnstageVolume'],
    );
    assert.equal(d.callsOf('NodeUnstageVolume')[0]?.request.stagingTargetPath, deviceMountPath(root, 'pv-1'));
    assert.equal(existsSync(t2), false);
    assert.equal(
      existsSync(path.join(root, 'plugins', 'kubernetes.io', 'csi', 'pv', 'pv-1')),
      false,
      'the PV dir is removed',
    );
  });

  it('publishes without staging for a driver without STAGE_UNSTAGE_VOLUME', async () => {
    await setup({ stageUnstage: false });
    const target = await csi.mounter.setUp(POD, pv());
    assert.deepEqual(
      d.calls.map((c) => c.method),
      ['NodeGetCapabilities', 'NodePublishVolume'],
    );
    assert.equal(d.callsOf('NodePublishVolume')[0]?.request.stagingTargetPath, '');
    await csi.mounter.tearDown(POD.uid, 'pv-1');
    assert.deepEqual(
      d.calls.map((c) => c.method),
      ['NodeGetCapabilities', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeGetCapabilities'],
    );
    assert.equal(existsSync(target), false);
  });

  it('publishes an inline ephemeral volume under the pod volume name with upstream handle, and never stages it', async () => {
    await setup();
    const vol: CsiVolume = {
      kind: 'ephemeral',
      volumeName: 'scratch',
      source: { driver: DRIVER, volumeAttributes: { size: '1Mi' } },
    };
    const target = await csi.mounter.setUp(POD, vol);
    assert.equal(target, podVolumeMountPath(root, POD.uid, 'scratch'));
    assert.deepEqual(
      d.calls.map((c) => c.method),
      ['NodePublishVolume'],
    );
    const req = d.callsOf('NodePublishVolume')[0]?.request ?? {};
    assert.equal(req.volumeId, ephemeralVolumeHandle(POD.uid, 'scratch'));
    assert.equal((req.volumeContext as Record<string, string>)['csi.storage.k8s.io/ephemeral'], 'true');
    await csi.mounter.tearDown(POD.uid, 'scratch');
    assert.deepEqual(
      d.calls.map((c) => c.method),
      ['NodePublishVolume', 'NodeUnpublishVolume'],
    );
  });

  it('refuses an inline volume when the CSIDriver does not list Ephemeral', async () => {
    fake.csiDrivers.set(DRIVER, { spec: { attachRequired: false } });
    await setup();
    await assert.rejects(
      csi.mounter.setUp(POD, { kind: 'ephemeral', volumeName: 'scratch', source: { driver: DRIVER } }),
      (err) =>
        isCsiVolumeError(err) &&
        err.step === 'prepare' &&
        /volume mode "Ephemeral" not supported by driver/.test(err.message),
    );
    assert.deepEqual(d.calls, []);
  });

  it('fails set-up for a driver that is not registered, without calling anything', async () => {
    await setup();
    await assert.rejects(
      csi.mounter.setUp(POD, pv('pv-9', { source: { driver: 'other.csi', volumeHandle: 'h' } })),
      /driver name other\.csi not found in the list of registered CSI drivers/,
    );
  });

  it('waits for the VolumeAttachment when the driver needs attaching, and passes its metadata on', async () => {
    fake.csiDrivers.delete(DRIVER); // no CSIDriver: attach is required
    await setup();
    fake.api.respond(
      'GET',
      /^\/apis\/storage\.k8s\.io\/v1\/volumeattachments\/csi-/,
      apiError(404, 'NotFound'),
    );
    await assert.rejects(
      csi.mounter.setUp(POD, pv()),
      /volumeattachments\.storage\.k8s\.io "csi-[0-9a-f]{64}" not found/,
    );
    fake.api.respond('GET', /^\/apis\/storage\.k8s\.io\/v1\/volumeattachments\/csi-/, {
      status: { attached: true, attachmentMetadata: { devicePath: '/dev/fake' } },
    });
    await csi.mounter.setUp(POD, pv());
    assert.deepEqual(d.callsOf('NodeStageVolume')[0]?.request.publishContext, { devicePath: '/dev/fake' });
    assert.deepEqual(d.callsOf('NodePublishVolume')[0]?.request.publishContext, { devicePath: '/dev/fake' });
  });

  it('ends a hung NodePublish at the deadline with an uncertain error, and leaves the dir for the retry', async () => {
    await setup();
    d.behaviour.hang.add('NodePublishVolume');
    await assert.rejects(
      csi.mounter.setUp(POD, pv()),
      (err) =>
        isCsiVolumeError(err) &&
        err.step === 'publish' &&
        err.uncertain &&
        err.code === 'DeadlineExceeded' &&
        // The event an operator reads names the timeout (callTimeoutMs 400 above).
        /context deadline exceeded: no answer within the 400ms timeout/.test(err.message),
    );
    assert.equal(
      existsSync(path.join(root, 'pods', 'uid-1', 'volumes', 'kubernetes.io~csi', 'pv-1', 'vol_data.json')),
      true,
    );
    d.behaviour.hang.clear();
    await csi.mounter.setUp(POD, pv());
    await csi.mounter.tearDown(POD.uid, 'pv-1');
    assert.equal(existsSync(path.join(root, 'pods', 'uid-1', 'volumes', 'kubernetes.io~csi', 'pv-1')), false);
  });

  it('removes the pod volume dir after a final NodePublish failure', async () => {
    await setup();
    d.behaviour.fail.set('NodePublishVolume', { code: GrpcStatus.INVALID_ARGUMENT, details: 'bad' });
    await assert.rejects(
      csi.mounter.setUp(POD, pv()),
      (err) =>
        isCsiVolumeError(err) && err.step === 'publish' && !err.uncertain && err.code === 'InvalidArgument',
    );
    assert.equal(existsSync(path.join(root, 'pods', 'uid-1', 'volumes', 'kubernetes.io~csi', 'pv-1')), false);
  });

  it('hands the node-publish secret to the driver, decoded', async () => {
    await setup();
    fake.api.respond('GET', '/api/v1/namespaces/apps/secrets/creds', {
      data: { password: Buffer.from('s3cret').toString('base64') },
    });
    await csi.mounter.setUp(
      POD,
      pv('pv-1', {
        source: {
          driver: DRIVER,
          volumeHandle: 'h',
          nodePublishSecretRef: { name: 'creds', namespace: 'apps' },
        },
      }),
    );
    assert.deepEqual(d.callsOf('NodePublishVolume')[0]?.request.secrets, { password: 's3cret' });
  });

  it('tears down a volume dir with no vol_data.json by removing what is left, calling no driver', async () => {
    await setup();
    const target = podVolumeMountPath(root, POD.uid, 'gone');
    await csi.mounter.setUp(POD, pv('gone'));
    await rm(path.join(path.dirname(target), 'vol_data.json'));
    await rm(target);
    await writeFile(path.join(path.dirname(target), 'stray'), '');
    d.calls.length = 0;
    await assert.rejects(csi.mounter.tearDown(POD.uid, 'gone'), /ENOTEMPTY|not empty/);
    await rm(path.join(path.dirname(target), 'stray'));
    await csi.mounter.tearDown(POD.uid, 'gone');
    assert.deepEqual(d.calls, []);
    assert.equal(existsSync(path.dirname(target)), false);
  });

  it("reads a published volume's usage with NodeGetVolumeStats (bytes and inodes)", async () => {
    await setup({ volumeStats: true });
    const target = await csi.mounter.setUp(POD, pv());
    const d0 = csi.drivers.get(DRIVER);
    assert.ok(d0);
    const usage = await createCsiClient(d0.endpoint, DRIVER).nodeGetVolumeStats('handle-pv-1', target, '');
    assert.ok(usage.capacityBytes > 0, 'BYTES entry read');
    assert.ok(usage.inodes > 0, 'INODES entry read');
  });

  it("maps NodeGetVolumeStats' BYTES and INODES entries to the volume's usage; none without GET_VOLUME_STATS", async () => {
    await setup({ volumeStats: true });
    await csi.mounter.setUp(POD, pv());
    const m = await csi.mounter.volumeStats(POD.uid, 'pv-1');
    assert.ok(m, 'usage reported');
    assert.ok(m.capacityBytes > 0 && m.inodes > 0, JSON.stringify(m));
    assert.equal(m.inodesUsed + m.inodesFree <= m.inodes, true);
    const req = d.callsOf('NodeGetVolumeStats')[0]?.request;
    assert.equal(req?.volumeId, 'handle-pv-1');
    assert.equal(req?.volumePath, podVolumeMountPath(root, POD.uid, 'pv-1'));
    assert.equal(await csi.mounter.volumeStats(POD.uid, 'never-published'), undefined);
  });

  it('reports no usage for a driver without GET_VOLUME_STATS, and never asks it', async () => {
    await setup();
    await csi.mounter.setUp(POD, pv());
    assert.equal(await csi.mounter.volumeStats(POD.uid, 'pv-1'), undefined);
    assert.deepEqual(d.callsOf('NodeGetVolumeStats'), []);
  });

  it("group-owns the published volume by the pod's fsGroup under the driver's File policy", async () => {
    fake.csiDrivers.set(DRIVER, { spec: { attachRequired: false, fsGroupPolicy: 'File' } });
    await setup();
    // Data already on the volume (the fixture's symlink mode: the target links to this dir).
    await mkdir(path.join(root, 'data', 'handle-pv-1', 'sub'), { recursive: true });
    await writeFile(path.join(root, 'data', 'handle-pv-1', 'sub', 'data.txt'), 'x');
    const target = await csi.mounter.setUp({ ...POD, fsGroup: 4321 }, pv());
    const sub = await stat(path.join(target, 'sub'));
    assert.equal(sub.gid, 4321);
    assert.equal(sub.mode & 0o2000, 0o2000, 'setgid on directories');
    assert.equal((await stat(path.join(target, 'sub', 'data.txt'))).gid, 4321);
  });

  it("leaves the published volume's ownership alone under the driver's None policy", async () => {
    fake.csiDrivers.set(DRIVER, { spec: { attachRequired: false, fsGroupPolicy: 'None' } });
    await setup();
    await mkdir(path.join(root, 'data', 'handle-pv-1', 'sub'), { recursive: true });
    const target = await csi.mounter.setUp({ ...POD, fsGroup: 4321 }, pv());
    assert.notEqual((await stat(path.join(target, 'sub'))).gid, 4321);
  });
});

describe('appliesFsGroup (upstream supportsFSGroup)', () => {
  const rwo = { kind: 'persistent' as const, fsType: 'ext4', accessModes: ['ReadWriteOnce'] };
  it('applies under the default policy only to a ReadWriteOnce PV with an fsType, or an inline volume with one', () => {
    assert.equal(appliesFsGroup(undefined, rwo, false), true);
    assert.equal(appliesFsGroup('ReadWriteOnceWithFSType', rwo, false), true);
    assert.equal(appliesFsGroup(undefined, { ...rwo, accessModes: ['ReadWriteMany'] }, false), false);
    assert.equal(
      appliesFsGroup(undefined, { kind: 'persistent', accessModes: ['ReadWriteOnce'] }, false),
      false,
    );
    assert.equal(appliesFsGroup(undefined, { kind: 'persistent', fsType: 'ext4' }, false), false);
    assert.equal(appliesFsGroup(undefined, { kind: 'ephemeral', fsType: 'ext4' }, false), true);
    assert.equal(appliesFsGroup(undefined, { kind: 'ephemeral' }, false), false);
  });

  it('always applies under File and never under None, and never to a read-only volume', () => {
    assert.equal(appliesFsGroup('File', { kind: 'persistent', accessModes: ['ReadOnlyMany'] }, false), true);
    assert.equal(appliesFsGroup('None', rwo, false), false);
    assert.equal(appliesFsGroup('File', rwo, true), false);
    assert.equal(appliesFsGroup(undefined, rwo, true), false);
  });
});
