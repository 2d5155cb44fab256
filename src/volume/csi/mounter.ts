/**
 * Mounting a CSI volume for a pod and unmounting it (upstream pkg/volume/csi: csi_attacher.go
 * MountDevice / UnmountDevice for NodeStage / NodeUnstage into the PV's global mount dir,
 * csi_mounter.go SetUpAt / TearDownAt for NodePublish / NodeUnpublish into the pod's volume dir,
 * csi_plugin.go for the lifecycle-mode, attach and publish-context checks).
 *
 * `setUp` stages the volume when the driver has STAGE_UNSTAGE_VOLUME (NodeStage is idempotent, so
 * it is asked on every set-up) and publishes it at `<pod>/volumes/kubernetes.io~csi/<name>/mount`
 * (the name is the PV's for a persistent volume, the pod volume's for an inline one, as upstream).
 * `tearDown` unpublishes it and, when no other pod on the node still has the same volume published
 * (read from the pods' vol_data.json files, so it holds across kubelet restarts), unstages it.
 * Every driver call has a deadline; errors are CsiVolumeErrors saying which step failed and whether
 * the driver may still be working on it (`uncertain`: retry the same step, do not clean up).
 */
import { lstat, mkdir, rm, rmdir, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describeError, errnoCode } from '../../util/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { mountAt } from '../mounts.ts';
import { setVolumeOwnership } from '../ownership.ts';
import type { PvMetrics } from '../pv-plugins.ts';
import { isPluginCallError } from './grpc-unix.ts';
import {
  capability,
  createCsiNodeOps,
  namesIn,
  podInfoAttributes,
  readJson,
  type CsiNodeOptions,
} from './node-ops.ts';
import {
  attachmentName,
  deviceMountPath,
  ephemeralVolumeHandle,
  podVolumeMountPath,
  VOL_DATA_FILE,
} from './paths.ts';
import { CsiVolumeError, type CsiPodRef, type CsiVolume } from './volume-types.ts';

/** What the mounter is built from (shared with the block mapper). */
export type CsiMounterOptions = CsiNodeOptions;

export interface CsiMounter {
  /** Stages (if the driver stages) and publishes; resolves the path to bind into containers. */
  setUp(pod: CsiPodRef, volume: CsiVolume, signal?: AbortSignal): Promise<string>;
  /** Unpublishes the pod's volume `specName` and unstages it if no other pod publishes it. */
  tearDown(podUID: string, specName: string, signal?: AbortSignal): Promise<void>;
  /** The pod volume dir name of `volume` (the PV name, or the inline volume's name). */
  specName(volume: CsiVolume): string;
  /**
   * The usage of the pod's published volume `specName` from the driver's NodeGetVolumeStats
   * (upstream csi_metrics.go GetMetrics); undefined when the driver lacks GET_VOLUME_STATS or
   * nothing is published there. Rejects with a CsiVolumeError (step `stats`) when the driver fails.
   */
  volumeStats(podUID: string, specName: string, signal?: AbortSignal): Promise<PvMetrics | undefined>;
}

/** What a pod volume dir's vol_data.json holds (upstream volDataKey, plus the PV for unstaging). */
interface PodVolumeData {
  specVolID: string;
  volumeHandle: string;
  driverName: string;
  nodeName: string;
  attachmentID: string;
  volumeLifecycleMode: 'Persistent' | 'Ephemeral';
  /** Ours: the staging path used, '' when the driver did not stage. */
  stagingTargetPath?: string;
}

/**
 * Upstream supportsFSGroup: whether the pod's fsGroup is applied to a published volume. Never for a
 * read-only volume or a driver whose policy is `None`; always under `File`; under
 * `ReadWriteOnceWithFSType` (the default) only with an fsType and, for a PV, a ReadWriteOnce access
 * mode (an inline volume is always published ReadWriteOnce).
 */
export function appliesFsGroup(
  policy: string | undefined,
  volume: { kind: 'persistent' | 'ephemeral'; fsType?: string; accessModes?: readonly string[] },
  readOnly: boolean,
): boolean {
  if (readOnly || policy === 'None') return false;
  if (policy === 'File') return true;
  if (!volume.fsType) return false;
  if (volume.kind === 'ephemeral') return true;
  return volume.accessModes?.includes('ReadWriteOnce') ?? false;
}

/** Upstream removeMountDir: a dir that is not a mount point is removed with its vol_data.json and parent. */
async function removeMountDir(mountPath: string): Promise<void> {
  if (await mountAt(mountPath)) return;
  const st = await lstat(mountPath).catch((err: unknown) => {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  });
  if (st?.isDirectory()) await rmdir(mountPath);
  else if (st) await unlink(mountPath);
  const parent = path.dirname(mountPath);
  await rm(path.join(parent, VOL_DATA_FILE), { force: true });
  await rmdir(parent).catch((err: unknown) => {
    if (errnoCode(err) !== 'ENOENT') throw err;
  });
}

export function createCsiMounter(opts: CsiMounterOptions): CsiMounter {
  const ops = createCsiNodeOps(opts);
  const { log, wrap, client } = ops;

  function specName(volume: CsiVolume): string {
    return volume.kind === 'persistent' ? volume.pvName : volume.volumeName;
  }

  return {
    specName,

    async volumeStats(podUID, name, signal) {
      const target = podVolumeMountPath(opts.rootDir, podUID, name);
      const dataFile = path.join(path.dirname(target), VOL_DATA_FILE);
      const data = await readJson<PodVolumeData>(dataFile).catch(
        wrap('stats', `failed to load volume data file ${dataFile}`),
      );
      if (!data) return undefined;
      const csi = client(data.driverName, 'stats');
      const callOpts = ops.callOpts(signal);
      const supported = await csi
        .nodeSupportsVolumeStats(callOpts)
        .catch(wrap('stats', 'failed to check for GET_VOLUME_STATS capability'));
      if (!supported) return undefined;
      return csi
        .nodeGetVolumeStats(data.volumeHandle, target, data.stagingTargetPath ?? '', callOpts)
        .catch(wrap('stats', `NodeGetVolumeStats of ${data.volumeHandle} at ${target} failed`));
    },

    async setUp(pod, volume, signal) {
      const driver = volume.source.driver;
      const name = specName(volume);
      const target = podVolumeMountPath(opts.rootDir, pod.uid, name);
      const vlog = log.child({ pod: `${pod.namespace}/${pod.name}`, podUID: pod.uid, volume: name, driver });
      const csi = client(driver, 'prepare');
      const driverSpec = await ops.driverSpec(driver, signal);
      const mode = volume.kind === 'persistent' ? 'Persistent' : 'Ephemeral';
      ops.checkLifecycleMode(driver, driverSpec, mode);

      let handle: string;
      let readOnly: boolean;
      let stagingPath = '';
      let pubContext: Record<string, string> = {};
      let accessMode = 'ReadWriteOnce';
      let mountOptions: string[] | undefined;
      if (volume.kind === 'persistent') {
        const src = volume.source;
        handle = src.volumeHandle;
        readOnly = volume.readOnly;
        accessMode = volume.accessModes?.[0] ?? 'ReadWriteOnce';
        mountOptions = volume.mountOptions;
        pubContext = await ops.publishContext(driverSpec, handle, driver, signal);
        const stages = await csi
          .nodeSupportsStageUnstage(ops.callOpts(signal))
          .catch(wrap('stage', 'failed to check for STAGE_UNSTAGE_VOLUME capability'));
        if (stages) {
          stagingPath = deviceMountPath(opts.rootDir, volume.pvName);
          await mkdir(stagingPath, { recursive: true, mode: 0o750 });
          await writeFile(
            path.join(path.dirname(stagingPath), VOL_DATA_FILE),
            JSON.stringify({ volumeHandle: handle, driverName: driver }),
          );
          const stageSecrets = await ops.secrets(src.nodeStageSecretRef, pod.namespace, 'stage', signal);
          await csi
            .nodeStageVolume(
              {
                volumeId: handle,
                publishContext: pubContext,
                stagingTargetPath: stagingPath,
                volumeCapability: capability(src.fsType, mountOptions, accessMode),
                secrets: stageSecrets,
                volumeContext: src.volumeAttributes ?? {},
              },
              ops.callOpts(signal),
            )
            .catch(wrap('stage', `NodeStageVolume of ${handle} at ${stagingPath} failed`));
          vlog.info('CSI volume staged', { volumeHandle: handle, stagingTargetPath: stagingPath });
        }
      } else {
        handle = ephemeralVolumeHandle(pod.uid, name);
        readOnly = volume.source.readOnly ?? false;
      }

      const publishSecrets = await ops.secrets(
        volume.source.nodePublishSecretRef,
        pod.namespace,
        'publish',
        signal,
      );
      const volumeContext: Record<string, string> = { ...(volume.source.volumeAttributes ?? {}) };
      if (driverSpec?.podInfoOnMount === true)
        Object.assign(volumeContext, podInfoAttributes(pod, volume.kind === 'ephemeral'));
      const volDir = path.dirname(target);
      await mkdir(volDir, { recursive: true, mode: 0o750 });
      const data: PodVolumeData = {
        specVolID: name,
        volumeHandle: handle,
        driverName: driver,
        nodeName: opts.nodeName,
        attachmentID: attachmentName(handle, driver, opts.nodeName),
        volumeLifecycleMode: mode,
        stagingTargetPath: stagingPath,
      };
      await writeFile(path.join(volDir, VOL_DATA_FILE), JSON.stringify(data));
      try {
        await csi.nodePublishVolume(
          {
            volumeId: handle,
            publishContext: pubContext,
            stagingTargetPath: stagingPath,
            targetPath: target,
            volumeCapability: capability(volume.source.fsType, mountOptions, accessMode),
            readonly: readOnly,
            secrets: publishSecrets,
            volumeContext,
          },
          ops.callOpts(signal),
        );
      } catch (err) {
        // A final failure leaves nothing mounted: the dir goes (upstream removes it too); an
        // uncertain one is left for the retry or the tear-down.
        if (isPluginCallError(err) && err.final)
          await removeMountDir(target).catch((rmErr: unknown) =>
            vlog.error('failed to remove the mount dir after a NodePublish error', {
              path: target,
              error: describeError(rmErr),
            }),
          );
        wrap('publish', `NodePublishVolume of ${handle} at ${target} failed`)(err);
      }
      vlog.info('CSI volume published', { volumeHandle: handle, targetPath: target, readOnly });
      const fsVolume = {
        kind: volume.kind,
        ...(volume.source.fsType !== undefined ? { fsType: volume.source.fsType } : {}),
        ...(volume.kind === 'persistent' && volume.accessModes ? { accessModes: volume.accessModes } : {}),
      };
      if (pod.fsGroup !== undefined && appliesFsGroup(driverSpec?.fsGroupPolicy, fsVolume, readOnly)) {
        try {
          await setVolumeOwnership({
            dir: target,
            fsGroup: pod.fsGroup,
            readOnly: false,
            ...(pod.fsGroupChangePolicy !== undefined ? { changePolicy: pod.fsGroupChangePolicy } : {}),
            logger: vlog,
          });
        } catch (err) {
          // Published but unusable: the retry or the tear-down must still see the mount (upstream
          // reports this as an uncertain outcome).
          throw new CsiVolumeError(
            'Internal',
            'publish',
            `applyFSGroup failed for vol ${handle}: ${describeError(err)}`,
            { cause: err, uncertain: true },
          );
        }
      }
      return target;
    },

    async tearDown(podUID, name, signal) {
      const target = podVolumeMountPath(opts.rootDir, podUID, name);
      const volDir = path.dirname(target);
      const data = await readJson<PodVolumeData>(path.join(volDir, VOL_DATA_FILE)).catch(
        wrap('unpublish', `failed to load volume data file ${path.join(volDir, VOL_DATA_FILE)}`),
      );
      const vlog = log.child({ podUID, volume: name });
      if (!data) {
        // Nothing was published here (or a previous tear-down finished): only leftovers to remove.
        await removeMountDir(target).catch(wrap('unpublish', `failed to clean mount dir ${target}`));
        return;
      }
      const csi = client(data.driverName, 'unpublish');
      const callOpts = ops.callOpts(signal);
      await csi
        .nodeUnpublishVolume(data.volumeHandle, target, callOpts)
        .catch(wrap('unpublish', `NodeUnpublishVolume of ${data.volumeHandle} at ${target} failed`));
      await removeMountDir(target).catch(wrap('unpublish', `failed to clean mount dir ${target}`));
      vlog.info('CSI volume unpublished', { driver: data.driverName, volumeHandle: data.volumeHandle });

      if (data.volumeLifecycleMode !== 'Persistent') return;
      const staging = deviceMountPath(opts.rootDir, data.specVolID);
      if (await publishedElsewhere(opts.rootDir, data, vlog)) {
        vlog.debug('CSI volume still published for another pod: not unstaged', {
          volumeHandle: data.volumeHandle,
        });
        return;
      }
      const stages = await csi
        .nodeSupportsStageUnstage(callOpts)
        .catch(wrap('unstage', 'failed to check whether STAGE_UNSTAGE_VOLUME set'));
      if (stages)
        await csi
          .nodeUnstageVolume(data.volumeHandle, staging, callOpts)
          .catch(wrap('unstage', `NodeUnstageVolume of ${data.volumeHandle} at ${staging} failed`));
      await removeMountDir(staging).catch(wrap('unstage', `failed to clean up global mount ${staging}`));
      if (stages)
        vlog.info('CSI volume unstaged', { volumeHandle: data.volumeHandle, stagingTargetPath: staging });
    },
  };
}

/** Whether any pod's CSI volume dir still holds a vol_data.json for the same driver and volume. */
async function publishedElsewhere(rootDir: string, data: PodVolumeData, log: Logger): Promise<boolean> {
  const pods = path.join(rootDir, 'pods');
  for (const uid of await namesIn(pods)) {
    const dir = path.join(pods, uid, 'volumes', 'kubernetes.io~csi');
    for (const v of await namesIn(dir)) {
      const file = path.join(dir, v, VOL_DATA_FILE);
      let other: PodVolumeData | undefined;
      try {
        other = await readJson<PodVolumeData>(file);
      } catch (err) {
        // Unreadable: it cannot tell; counted as a publication so the volume stays staged.
        log.warn('cannot read a CSI volume data file; keeping the volume staged', {
          file,
          error: describeError(err),
        });
        return true;
      }
      if (other && other.driverName === data.driverName && other.volumeHandle === data.volumeHandle)
        return true;
    }
  }
  return false;
}
