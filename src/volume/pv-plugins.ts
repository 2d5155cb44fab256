/**
 * The PersistentVolume types the kubelet mounts, one plugin per PV source field (upstream's volume
 * plugins: pkg/volume/hostpath, pkg/volume/local; pkg/volume/csi slots in here as one more entry).
 * The volume manager resolves the claim (persistent-volumes.ts), picks the plugin by the PV's source
 * field, and asks it for the host path a container binds (Filesystem) or the device it gets (Block).
 *
 * Contract for a plugin: `setUp`/`mapDevice` are idempotent and cheap when already done (they run
 * again after a kubelet restart and must find, not repeat, what an earlier process made: no
 * double mounts); whatever they create per pod lives under the pod's directory
 * (`volumes/<escaped plugin>/<pv>` or `volumeDevices/<escaped plugin>/<pv>`), so the volume manager's
 * teardown (unmount everything under the pod dir, then remove it) undoes it, also after a restart.
 * A plugin that holds state outside the pod dir (CSI: the driver's publish/stage) adds `tearDown`
 * (and `unmapDevice` for Block), which the volume manager calls for each of its pod dirs (device
 * entries) it finds on disk, before that generic unmount.
 */
import { lstat, mkdir, readdir, readlink, rmdir, stat, symlink, unlink } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import type { KubeletPod, Volume } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import type { EventRecorder } from '../api/events.ts';
import { KubeletError, describeError, errnoCode, isKubeletError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { createKeyedLock } from '../util/keyed-lock.ts';
import { KUBELET_DIR_MODE } from '../util/private-dir.ts';
import { checkHostPath, type HostPathType } from './host-dirs.ts';
import { bindMount, mountAt, mountsUnder, run } from './mounts.ts';
import { formatAndMount } from './format-and-mount.ts';
import { setVolumeOwnership } from './ownership.ts';
import { podDir } from './paths.ts';
import type { PersistentVolume } from './objects.ts';

/** What a plugin is told about one pod's use of one PV. */
export interface PvContext {
  rootDir: string;
  pod: KubeletPod;
  /** The pod's volume name (for messages). */
  volume: string;
  pvName: string;
  pv: PersistentVolume;
  /** The claim reference's readOnly. */
  readOnly: boolean;
  logger: Logger;
  recorder?: EventRecorder;
  signal?: AbortSignal;
}

/** A volume type set up straight from the pod's volume (CSI inline ephemeral volumes). */
export interface InlineVolumePlugin {
  /** Sets the volume up for the pod; cheap and idempotent (runs on every sync). */
  setUp(pod: KubeletPod, v: Volume, signal?: AbortSignal): Promise<void>;
  /** Where the containers mount it from. */
  hostPath(pod: KubeletPod, v: Volume): string;
  /**
   * The plugin measures the volume's usage itself (CSI NodeGetVolumeStats): the last numbers known
   * for the pod's volume `volume`. Absent: the volume's directory is walked (du), as other kinds.
   */
  metrics?(podUID: string, volume: string): { usage: PvMetrics; time: number } | undefined;
}

/**
 * A set-up volume of a pod whose plugin measures it, for volume stats and kubelet_volume_stats_*:
 * a persistentVolumeClaim volume (`claimName`: reported with its `pvcRef`) or an inline CSI volume.
 */
export interface PodMeasuredVolume {
  volume: string;
  /** The claim of a persistentVolumeClaim volume; absent for an inline volume. */
  claimName?: string;
  mode: 'Filesystem' | 'Block';
  /** Present when the PV type reports statfs numbers (local); absent: no stats (hostPath, Block). */
  metricsPath?: string;
  /**
   * Present when the plugin measures usage itself (CSI NodeGetVolumeStats): the last numbers known,
   * undefined before the first measurement or when the driver reports none.
   */
  metrics?: () => { usage: PvMetrics; time: number } | undefined;
}

/** A volume's usage as its plugin measures it (upstream volume.Metrics). */
export interface PvMetrics {
  capacityBytes: number;
  availableBytes: number;
  usedBytes: number;
  inodes: number;
  inodesFree: number;
  inodesUsed: number;
}

export interface PvPlugin {
  /** Upstream plugin name (`kubernetes.io/local-volume`); escaped (`/` → `~`) it names the pod dirs. */
  readonly name: string;
  /**
   * Filesystem volumes report statfs numbers of their host path (upstream MetricsStatFS, used by
   * the local plugin); false: none (upstream MetricsNil, the hostPath plugin) unless `metrics` is
   * given.
   */
  readonly statfsMetrics: boolean;
  /**
   * Filesystem volumes whose usage the plugin measures itself (CSI: NodeGetVolumeStats): the last
   * numbers known for the pod's volume dir `<pod>/volumes/<escaped name>/<pvName>` and their wall
   * time (ms); undefined when there are none (yet). Never waits for the volume's backend.
   */
  metrics?(podUID: string, pvName: string): { usage: PvMetrics; time: number } | undefined;
  /** Filesystem mode: makes the PV available to the pod; the host path containers bind. */
  setUp(ctx: PvContext): Promise<string>;
  /** Block mode: the host path (device node or a symlink to it) containers get. Absent: no Block. */
  mapDevice?(ctx: PvContext): Promise<string>;
  /**
   * Undoes what lives outside the pod dir for one of this plugin's pod volume dirs (found on disk:
   * `<pod>/volumes/<escaped name>/<pv>`), before the volume manager unmounts and removes the pod dir.
   */
  tearDown?(dir: string, signal?: AbortSignal): Promise<void>;
  /**
   * The Block-mode counterpart of `tearDown`: undoes what lives outside the pod dir for one of this
   * plugin's pod device entries found on disk (`<pod>/volumeDevices/<escaped name>/<pv>`), before
   * the volume manager removes the pod dir.
   */
  unmapDevice?(entry: string, signal?: AbortSignal): Promise<void>;
  /**
   * After a pod's volumes are torn down: releases node-wide state no pod uses any more (the local
   * plugin's device mounts), judged from disk and the mount table, so it also works after a restart.
   */
  releaseUnused?(rootDir: string, logger: Logger, signal?: AbortSignal): Promise<void>;
}

/** Upstream utilstrings.EscapeQualifiedName. */
export function escapePluginName(name: string): string {
  return name.replaceAll('/', '~');
}

export function podPvDir(rootDir: string, uid: string, plugin: string, pvName: string): string {
  return join(podDir(rootDir, uid), 'volumes', escapePluginName(plugin), pvName);
}

export function podDeviceDir(rootDir: string, uid: string, plugin: string): string {
  return join(podDir(rootDir, uid), 'volumeDevices', escapePluginName(plugin));
}

/** Upstream hostPath plugin for PVs: the path itself, after its type checks; no ownership management. */
export const hostPathPlugin: PvPlugin = {
  name: 'kubernetes.io/host-path',
  statfsMetrics: false,
  async setUp(ctx) {
    const src = ctx.pv.spec?.hostPath;
    if (!src?.path) {
      throw new KubeletError(
        'InvalidArgument',
        `mount volume ${ctx.volume}`,
        `PV ${ctx.pvName}: hostPath.path is empty`,
      );
    }
    await checkHostPath(ctx.volume, src.path, (src.type ?? '') as HostPathType);
    return src.path;
  },
};

const LOCAL_PLUGIN = 'kubernetes.io/local-volume';
/** Upstream local plugin defaultFSType. */
const DEFAULT_LOCAL_FS_TYPE = 'ext4';

/** Where a Filesystem-mode local PV on a block device is mounted once per node (upstream getGlobalLocalPath). */
export function localDeviceMountDir(rootDir: string, pvName: string): string {
  return join(rootDir, 'plugins', LOCAL_PLUGIN, 'mounts', pvName);
}

/** Upstream localVolumeMounter's "The volume may not be shareable" warning (events.WarnAlreadyMountedVolume). */
const WARN_ALREADY_MOUNTED = 'AlreadyMountedVolume';

/**
 * Upstream volumeLocks.LockKey(globalPath): one local-volume operation per PV at a time in this
 * process, so a pod's setup never binds a device mount that another pod's teardown is releasing.
 */
const withPvLock = createKeyedLock();

/**
 * Upstream local plugin: a directory PV is bind-mounted at the pod's volume dir (idempotent: an
 * existing mount there is kept), its ownership set to the pod's fsGroup on the first mount of a
 * read-write use (none while another pod has it mounted: a mismatch is a warning event instead); a
 * block-device PV in Block mode is handed to the container through a symlink under the pod's
 * volumeDevices dir. A Filesystem-mode PV on a block device is formatted
 * if blank and mounted once per node (localDeviceMountDir), then bound like a directory; the device
 * mount is released once no pod uses it.
 */
export const localPlugin: PvPlugin = {
  name: LOCAL_PLUGIN,
  statfsMetrics: true,
  setUp(ctx) {
    return withPvLock(ctx.pvName, () => setUpLocal(ctx));
  },
  async releaseUnused(rootDir, logger, signal) {
    const base = join(rootDir, 'plugins', LOCAL_PLUGIN, 'mounts');
    let names: string[];
    try {
      names = await readdir(base);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return; // no device was ever mounted
      throw err;
    }
    for (const pv of names) {
      await withPvLock(pv, async () => {
        const podMounts = await mountsUnder(join(rootDir, 'pods'));
        const suffix = `/${join('volumes', escapePluginName(LOCAL_PLUGIN), pv)}`;
        if (podMounts.some((m) => m.mountPoint.endsWith(suffix))) return; // a pod still uses it
        const dir = join(base, pv);
        if (await mountAt(dir)) {
          await run('umount', [dir], `unmount ${dir}`, signal);
          logger.info('local volume device unmounted: no pod uses it', { pv, dir });
        }
        try {
          await rmdir(dir);
        } catch (err) {
          // Kept for a look: an unmounted device dir is empty unless something wrote into it.
          logger.warn('local volume device dir not removed', { pv, dir, err: describeError(err) });
        }
      });
    }
  },
  async mapDevice(ctx) {
    const op = `mount volume ${ctx.volume}`;
    const path = localPath(ctx);
    const st = await statLocalPath(ctx, path, 'MapVolume.MapPodDevice');
    if (!st.isBlockDevice()) {
      throw new KubeletError(
        'FailedPrecondition',
        op,
        `MapVolume.MapPodDevice failed for volume "${ctx.pvName}" : ${path} is not a block device`,
      );
    }
    const link = join(podDeviceDir(ctx.rootDir, ctx.pod.metadata.uid, LOCAL_PLUGIN), ctx.pvName);
    const existing = await readlink(link).catch((err: unknown) => {
      if (errnoCode(err) === 'ENOENT') return undefined;
      throw err;
    });
    if (existing === path) return link;
    if (existing !== undefined)
      await unlink(link); // the PV changed its path: point anew
    else if (await lstat(link).catch(() => undefined)) {
      throw new KubeletError('AlreadyExists', op, `${link} exists and is not a symlink`);
    }
    await mkdir(dirname(link), { recursive: true, mode: KUBELET_DIR_MODE });
    await symlink(path, link);
    return link;
  },
};

/** stat of a local PV's path; a failure is the operation's error in upstream's words. */
async function statLocalPath(ctx: PvContext, path: string, operation: string): Promise<Stats> {
  return stat(path).catch((err: unknown) => {
    throw new KubeletError(
      errnoCode(err) === 'ENOENT' ? 'NotFound' : 'Internal',
      `mount volume ${ctx.volume}`,
      `${operation} failed for volume "${ctx.pvName}" : ${describeError(err)}`,
      { cause: err },
    );
  });
}

/** The local plugin's SetUp (under the PV's lock): MountDevice for a block device, then the pod's bind. */
async function setUpLocal(ctx: PvContext): Promise<string> {
  const op = `mount volume ${ctx.volume}`;
  const path = localPath(ctx);
  const st = await statLocalPath(ctx, path, 'MountVolume.MountDevice');
  let source = path;
  if (st.isBlockDevice()) {
    // Upstream MountDevice: formatted if blank, mounted once per node under the plugin's dir.
    source = localDeviceMountDir(ctx.rootDir, ctx.pvName);
    try {
      await formatAndMount({
        device: path,
        target: source,
        fsType: ctx.pv.spec?.local?.fsType || DEFAULT_LOCAL_FS_TYPE,
        readOnly: ctx.readOnly,
        mountOptions: ctx.pv.spec?.mountOptions ?? [],
        logger: ctx.logger,
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
    } catch (err) {
      throw new KubeletError(
        isKubeletError(err) ? err.code : 'Internal',
        op,
        `MountVolume.MountDevice failed for volume "${ctx.pvName}" : ${describeError(err)}`,
        { cause: err },
      );
    }
  } else if (!st.isDirectory()) {
    throw new KubeletError(
      'FailedPrecondition',
      op,
      `MountVolume.MountDevice failed for volume "${ctx.pvName}" : only directory and block device are supported`,
    );
  }
  const dir = podPvDir(ctx.rootDir, ctx.pod.metadata.uid, LOCAL_PLUGIN, ctx.pvName);
  if (await mountAt(dir)) return dir; // mounted by this or an earlier kubelet process
  // Other pods' mounts of this PV (upstream GetMountRefs filtered to the pods dir): the same
  // `volumes/kubernetes.io~local-volume/<pv>` under another pod.
  const suffix = join('volumes', escapePluginName(LOCAL_PLUGIN), ctx.pvName);
  const others = (await mountsUnder(join(ctx.rootDir, 'pods'))).filter(
    (m) => m.mountPoint !== dir && m.mountPoint.endsWith(`/${suffix}`),
  );
  await mkdir(dirname(dir), { recursive: true, mode: KUBELET_DIR_MODE });
  await mkdir(dir, { recursive: true, mode: KUBELET_DIR_MODE });
  try {
    await bindMount(source, dir, ctx.signal ? { signal: ctx.signal } : {});
  } catch (err) {
    throw new KubeletError(
      isKubeletError(err) ? err.code : 'Internal',
      op,
      `MountVolume.SetUp failed for volume "${ctx.pvName}" : ${describeError(err)}`,
      { cause: err },
    );
  }
  const fsGroup = ctx.pod.spec.securityContext?.fsGroup;
  const policy = ctx.pod.spec.securityContext?.fsGroupChangePolicy;
  if (fsGroup !== undefined && !ctx.readOnly) {
    if (others.length === 0) {
      await setVolumeOwnership({
        dir,
        fsGroup,
        readOnly: false,
        ...(policy !== undefined ? { changePolicy: policy } : {}),
        logger: ctx.logger,
      });
    } else {
      const gid = (await stat(source)).gid;
      if (gid !== fsGroup) {
        ctx.recorder?.event(
          ctx.pod,
          'Warning',
          WARN_ALREADY_MOUNTED,
          `The requested fsGroup is ${fsGroup}, but the volume ${ctx.pvName} has GID ${gid}. The volume may not be shareable.`,
        );
      }
    }
  }
  ctx.logger.info('local volume mounted', {
    pod: podFullName(ctx.pod),
    podUID: ctx.pod.metadata.uid,
    volume: ctx.volume,
    pv: ctx.pvName,
    path,
  });
  return dir;
}

function localPath(ctx: PvContext): string {
  const path = ctx.pv.spec?.local?.path ?? '';
  if (path === '') {
    throw new KubeletError(
      'InvalidArgument',
      `mount volume ${ctx.volume}`,
      `LocalVolume volume "${ctx.pvName}" path is empty`,
    );
  }
  if (path.split('/').includes('..')) {
    throw new KubeletError(
      'InvalidArgument',
      `mount volume ${ctx.volume}`,
      `invalid path: ${path} must not contain '..'`,
    );
  }
  return path;
}

/**
 * The built-in plugins by PV source field. A CSI PV (`spec.csi`) is the kubelet's addition
 * (createCsiPvPlugin in src/volume/csi, given to the volume manager as `pvPlugins.csi`).
 */
export const PV_PLUGINS: Readonly<Record<string, PvPlugin>> = {
  hostPath: hostPathPlugin,
  local: localPlugin,
};
