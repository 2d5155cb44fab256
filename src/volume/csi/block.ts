/**
 * CSI volumes in volumeMode Block (upstream pkg/volume/csi csi_block.go csiBlockMapper, csi_plugin.go
 * NewBlockVolumeMapper / NewBlockVolumeUnmapper, and the MapBlockVolume link in the pod dir).
 *
 * `map` writes the PV's `volumeDevices/<pv>/data/vol_data.json`, stages the volume at
 * `volumeDevices/staging/<pv>` when the driver has STAGE_UNSTAGE_VOLUME (the kubelet makes that
 * dir), and publishes it at `volumeDevices/publish/<pv>/<podUID>` (the kubelet makes the parent, the
 * driver the target: a device file or a bind mount of one), both with a `block` VolumeCapability.
 * The container gets `<pod>/volumeDevices/kubernetes.io~csi/<pv>`, a symlink to the publish path.
 * The link is made before NodePublish (upstream: after), so a publish whose outcome a crash or a
 * timeout left unknown is still found on disk and undone by the teardown.
 *
 * `unmap` (called for each such link found on disk, also after a restart) unpublishes the pod's
 * publish path, removes the link, and when no other pod on the node has a link to the same PV,
 * unstages the volume and removes the PV's staging, publish and data dirs. Map and unmap of one PV
 * run one at a time. Deliberate difference: with podInfoOnMount the publish gets the pod's
 * attributes as a filesystem publish does (upstream 1.20 leaves them out for block volumes,
 * kubernetes/kubernetes#98832, fixed in 1.21).
 */
import { lstat, mkdir, readlink, rm, rmdir, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describeError, errnoCode } from '../../util/errors.ts';
import { createKeyedLock } from '../../util/keyed-lock.ts';
import type { Logger } from '../../util/logger.ts';
import { mountAt } from '../mounts.ts';
import { isPluginCallError } from './grpc-unix.ts';
import {
  FS_TYPE_BLOCK,
  capability,
  createCsiNodeOps,
  namesIn,
  podInfoAttributes,
  readJson,
  type CsiNodeOptions,
} from './node-ops.ts';
import {
  VOL_DATA_FILE,
  attachmentName,
  blockPublishDir,
  blockPublishPath,
  blockStagingPath,
  blockVolumeDir,
  podBlockDevicePath,
} from './paths.ts';
import { CsiVolumeError, type CsiPodRef, type CsiVolume } from './volume-types.ts';

export type PersistentCsiVolume = Extract<CsiVolume, { kind: 'persistent' }>;

export interface CsiBlockMapper {
  /**
   * Stages (if the driver stages) and publishes the PV for the pod; resolves the pod's device link
   * (what the container's device resolves to). Cheap when already mapped (also by an earlier
   * process): a link to a publish path that is a block device is kept without asking the driver;
   * otherwise the driver is asked again (NodeStage and NodePublish are idempotent).
   */
  map(pod: CsiPodRef, volume: PersistentCsiVolume, signal?: AbortSignal): Promise<string>;
  /** Unpublishes the pod's PV `pvName`, removes its link, and unstages it if no other pod maps it. */
  unmap(podUID: string, pvName: string, signal?: AbortSignal): Promise<void>;
}

/** The PV's `volumeDevices/<pv>/data/vol_data.json` (upstream volDataKey). */
interface BlockVolumeData {
  specVolID: string;
  volumeHandle: string;
  driverName: string;
  nodeName: string;
  attachmentID: string;
}

function volDataFile(rootDir: string, pvName: string): string {
  return path.join(blockVolumeDir(rootDir, pvName), 'data', VOL_DATA_FILE);
}

/** A path's lstat, undefined when it does not exist. */
async function lstatOrNone(p: string) {
  return lstat(p).catch((err: unknown) => {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  });
}

/** Removes a dir that should be empty; a missing one is fine. */
async function rmdirIfThere(dir: string): Promise<void> {
  await rmdir(dir).catch((err: unknown) => {
    if (errnoCode(err) !== 'ENOENT') throw err;
  });
}

export function createCsiBlockMapper(opts: CsiNodeOptions): CsiBlockMapper {
  const ops = createCsiNodeOps(opts);
  const { log, wrap, client } = ops;
  const withPvLock = createKeyedLock();

  /**
   * Whether `link` points at `publishPath` and the driver's target there is a block device (an
   * empty target file left by a reboot is not: the driver is asked again, idempotently).
   */
  async function mapped(link: string, publishPath: string): Promise<boolean> {
    const dest = await readlink(link).catch((err: unknown) => {
      const code = errnoCode(err);
      if (code === 'ENOENT' || code === 'EINVAL') return undefined;
      throw err;
    });
    if (dest !== publishPath) return false;
    return stat(publishPath).then(
      (st) => st.isBlockDevice(),
      (err: unknown) => {
        if (errnoCode(err) === 'ENOENT') return false;
        throw err;
      },
    );
  }

  /** The pod's link to its publish path (replacing a stale one); made before NodePublish. */
  async function link(linkPath: string, publishPath: string): Promise<void> {
    const st = await lstatOrNone(linkPath);
    if (st?.isSymbolicLink()) {
      if ((await readlink(linkPath)) === publishPath) return;
      await unlink(linkPath);
    } else if (st) {
      throw new CsiVolumeError('AlreadyExists', 'publish', `${linkPath} exists and is not a symlink`);
    }
    await mkdir(path.dirname(linkPath), { recursive: true, mode: 0o750 });
    await symlink(publishPath, linkPath);
  }

  async function map(pod: CsiPodRef, volume: PersistentCsiVolume, signal?: AbortSignal): Promise<string> {
    const src = volume.source;
    const driver = src.driver;
    const handle = src.volumeHandle;
    const pv = volume.pvName;
    const linkPath = podBlockDevicePath(opts.rootDir, pod.uid, pv);
    const publishPath = blockPublishPath(opts.rootDir, pv, pod.uid);
    if (await mapped(linkPath, publishPath)) return linkPath;

    const vlog = log.child({ pod: `${pod.namespace}/${pod.name}`, podUID: pod.uid, volume: pv, driver });
    const csi = client(driver, 'prepare');
    const driverSpec = await ops.driverSpec(driver, signal);
    ops.checkLifecycleMode(driver, driverSpec, 'Persistent');
    const pubContext = await ops.publishContext(driverSpec, handle, driver, signal);
    const accessMode = volume.accessModes?.[0] ?? 'ReadWriteOnce';
    const volumeCapability = capability(FS_TYPE_BLOCK, undefined, accessMode);

    // Upstream NewBlockVolumeMapper: the spec's data first, so an unmap after a restart knows the driver.
    const data: BlockVolumeData = {
      specVolID: pv,
      volumeHandle: handle,
      driverName: driver,
      nodeName: opts.nodeName,
      attachmentID: attachmentName(handle, driver, opts.nodeName),
    };
    const dataFile = volDataFile(opts.rootDir, pv);
    await mkdir(path.dirname(dataFile), { recursive: true, mode: 0o750 });
    await writeFile(dataFile, JSON.stringify(data));

    // SetUpDevice → stageVolumeForBlock.
    const stages = await csi
      .nodeSupportsStageUnstage(ops.callOpts(signal))
      .catch(
        wrap('stage', 'blockMapper.stageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability'),
      );
    const stagingPath = stages ? blockStagingPath(opts.rootDir, pv) : '';
    if (stages) {
      const stageSecrets = await ops.secrets(src.nodeStageSecretRef, pod.namespace, 'stage', signal);
      await mkdir(stagingPath, { recursive: true, mode: 0o750 });
      await csi
        .nodeStageVolume(
          {
            volumeId: handle,
            publishContext: pubContext,
            stagingTargetPath: stagingPath,
            volumeCapability,
            secrets: stageSecrets,
            volumeContext: src.volumeAttributes ?? {},
          },
          ops.callOpts(signal),
        )
        .catch(wrap('stage', `NodeStageVolume of ${handle} at ${stagingPath} failed`));
      vlog.info('CSI block volume staged', { volumeHandle: handle, stagingTargetPath: stagingPath });
    }

    // MapPodDevice → publishVolumeForBlock.
    const volumeContext: Record<string, string> = { ...(src.volumeAttributes ?? {}) };
    if (driverSpec?.podInfoOnMount === true) Object.assign(volumeContext, podInfoAttributes(pod, false));
    const publishSecrets = await ops.secrets(src.nodePublishSecretRef, pod.namespace, 'publish', signal);
    await mkdir(path.dirname(publishPath), { recursive: true, mode: 0o750 });
    await link(linkPath, publishPath).catch(wrap('publish', `failed to link ${linkPath} to ${publishPath}`));
    try {
      await csi.nodePublishVolume(
        {
          volumeId: handle,
          publishContext: pubContext,
          stagingTargetPath: stagingPath,
          targetPath: publishPath,
          volumeCapability,
          readonly: volume.readOnly,
          secrets: publishSecrets,
          volumeContext,
        },
        ops.callOpts(signal),
      );
    } catch (err) {
      // A final failure published nothing: the link goes. An uncertain one keeps it for the
      // retry or the teardown (which unpublishes whatever the driver may have done).
      if (isPluginCallError(err) && err.final)
        await removePublication(publishPath, linkPath).catch((rmErr: unknown) =>
          vlog.error('failed to remove the publish path and device link after a NodePublish error', {
            path: publishPath,
            link: linkPath,
            error: describeError(rmErr),
          }),
        );
      wrap('publish', `NodePublishVolume of ${handle} at ${publishPath} failed`)(err);
    }
    vlog.info('CSI block volume published', {
      volumeHandle: handle,
      targetPath: publishPath,
      readOnly: volume.readOnly,
    });
    return linkPath;
  }

  async function unmap(podUID: string, pv: string, signal?: AbortSignal): Promise<void> {
    const linkPath = podBlockDevicePath(opts.rootDir, podUID, pv);
    const publishPath = blockPublishPath(opts.rootDir, pv, podUID);
    const vlog = log.child({ podUID, volume: pv });
    const dataFile = volDataFile(opts.rootDir, pv);
    const data = await readJson<BlockVolumeData>(dataFile).catch(
      wrap('unpublish', `unmapper failed to load volume data file ${dataFile}`),
    );
    if (!data) {
      // Nothing the driver was asked for is known (a previous unmap finished): only the link is left.
      vlog.warn('CSI block volume without its data file: removing the pod link only', {
        link: linkPath,
        dataFile,
      });
      await rm(linkPath, { force: true }).catch(wrap('unpublish', `failed to remove ${linkPath}`));
      return;
    }
    const csi = client(data.driverName, 'unpublish');
    const callOpts = ops.callOpts(signal);
    // UnmapPodDevice: NodeUnpublish even when the publish path is gone (a NodePublish may have
    // timed out and the driver must be told to finish).
    await csi
      .nodeUnpublishVolume(data.volumeHandle, publishPath, callOpts)
      .catch(wrap('unpublish', `NodeUnpublishVolume of ${data.volumeHandle} at ${publishPath} failed`));
    await removePublication(publishPath, linkPath).catch(
      wrap(
        'unpublish',
        `failed to clean up ${publishPath} after NodeUnpublishVolume of ${data.volumeHandle}`,
      ),
    );
    vlog.info('CSI block volume unpublished', {
      driver: data.driverName,
      volumeHandle: data.volumeHandle,
      targetPath: publishPath,
    });

    const others = await mappedBy(opts.rootDir, pv).catch(
      wrap('unstage', `failed to list the pods that map ${pv}`),
    );
    if (others.length > 0) {
      vlog.debug('CSI block volume still mapped for another pod: not unstaged', { pods: others });
      return;
    }
    // TearDownDevice → unstageVolumeForBlock, when the staging path exists.
    const stagingPath = blockStagingPath(opts.rootDir, pv);
    if (await lstatOrNone(stagingPath)) {
      const stages = await csi
        .nodeSupportsStageUnstage(callOpts)
        .catch(
          wrap(
            'unstage',
            'blockMapper.unstageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability',
          ),
        );
      if (stages) {
        await csi
          .nodeUnstageVolume(data.volumeHandle, stagingPath, callOpts)
          .catch(wrap('unstage', `NodeUnstageVolume of ${data.volumeHandle} at ${stagingPath} failed`));
        vlog.info('CSI block volume unstaged', {
          volumeHandle: data.volumeHandle,
          stagingTargetPath: stagingPath,
        });
      }
    }
    await removeOrphanDeviceFiles(opts.rootDir, pv, vlog).catch(
      wrap('unstage', `failed to clean up the block volume dirs of ${pv}`),
    );
  }

  return {
    map: (pod, volume, signal) => withPvLock(volume.pvName, () => map(pod, volume, signal)),
    unmap: (podUID, pvName, signal) => withPvLock(pvName, () => unmap(podUID, pvName, signal)),
  };
}

/**
 * After an unpublish: the driver removes its target, a plain leftover (never a mount: that is an
 * error, the teardown is retried) is removed here; then the pod's link.
 */
async function removePublication(publishPath: string, linkPath: string): Promise<void> {
  const left = await lstatOrNone(publishPath);
  if (left) {
    if (await mountAt(publishPath)) throw new Error(`${publishPath} is still mounted`);
    if (left.isDirectory()) await rmdir(publishPath);
    else await unlink(publishPath);
  }
  await rm(linkPath, { force: true });
}

/** The pods (UIDs) with a device link to the CSI block PV `pvName`, read from disk. */
async function mappedBy(rootDir: string, pvName: string): Promise<string[]> {
  const pods = path.join(rootDir, 'pods');
  const uids: string[] = [];
  for (const uid of await namesIn(pods)) {
    if (await lstatOrNone(podBlockDevicePath(rootDir, uid, pvName))) uids.push(uid);
  }
  return uids;
}

/**
 * Upstream cleanupOrphanDeviceFiles: once no pod maps the PV, its publish dir, staging dir and data
 * dir go. None should hold anything by now; what cannot be removed is kept with a warning (upstream
 * logs it too and carries on), and the data file stays while the staging path is still mounted.
 */
async function removeOrphanDeviceFiles(rootDir: string, pvName: string, log: Logger): Promise<void> {
  const stagingPath = blockStagingPath(rootDir, pvName);
  const volumeDir = blockVolumeDir(rootDir, pvName);
  const keep = (dir: string) => (err: unknown) =>
    log.warn('CSI block volume dir not removed', { dir, error: describeError(err) });
  if (await mountAt(stagingPath)) {
    keep(stagingPath)(new Error('still mounted after NodeUnstageVolume'));
    return;
  }
  await rmdirIfThere(blockPublishDir(rootDir, pvName)).catch(keep(blockPublishDir(rootDir, pvName)));
  await rmdirIfThere(stagingPath).catch(keep(stagingPath));
  await rm(path.join(volumeDir, 'data', VOL_DATA_FILE), { force: true });
  await rmdirIfThere(path.join(volumeDir, 'data')).catch(keep(path.join(volumeDir, 'data')));
  await rmdirIfThere(volumeDir).catch(keep(volumeDir));
}
