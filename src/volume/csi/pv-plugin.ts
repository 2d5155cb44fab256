/**
 * The CSI entry of the PV plugin table (src/volume/pv-plugins.ts; upstream pkg/volume/csi as a
 * volume plugin of kind `kubernetes.io/csi`): `setUp` turns the PV's `spec.csi` into a CsiVolume and
 * has the mounter stage and publish it (skipped when the target is already a mount: the contract asks
 * for cheap and idempotent, also after a kubelet restart); `tearDown` is called by the volume manager
 * for each `<pod>/volumes/kubernetes.io~csi/<name>` dir found on disk (persistent and inline
 * volumes alike) and has the mounter unpublish, and unstage once no pod uses the volume. A PV in
 * volumeMode Block goes through the block mapper instead (block.ts): `mapDevice` stages and
 * publishes it and hands back the pod's device link; `unmapDevice` is called for each
 * `<pod>/volumeDevices/kubernetes.io~csi/<pv>` link found on disk.
 */
import { basename, dirname } from 'node:path';
import { KubeletError } from '../../util/errors.ts';
import { mountAt } from '../mounts.ts';
import type { InlineVolumePlugin, PvContext, PvPlugin } from '../pv-plugins.ts';
import type { KubeletPod, Volume } from '../../api/types.ts';
import { csiVolumeFromPersistentVolume, csiVolumeFromPodVolume } from './from-api.ts';
import type { CsiBlockMapper } from './block.ts';
import type { CsiMounter } from './mounter.ts';
import type { CsiVolumeStats } from './volume-stats.ts';
import { CSI_PLUGIN_NAME, podVolumeMountPath } from './paths.ts';

function podRef(pod: KubeletPod) {
  return {
    uid: pod.metadata.uid,
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    ...(pod.spec.serviceAccountName ? { serviceAccountName: pod.spec.serviceAccountName } : {}),
    ...(pod.spec.securityContext?.fsGroup !== undefined ? { fsGroup: pod.spec.securityContext.fsGroup } : {}),
    ...(pod.spec.securityContext?.fsGroupChangePolicy !== undefined
      ? { fsGroupChangePolicy: pod.spec.securityContext.fsGroupChangePolicy }
      : {}),
  };
}

/**
 * CSI inline ephemeral volumes (`csi:` in the pod; upstream csi_mounter with an ephemeral spec): the
 * driver publishes a volume that lives as long as the pod, at `<pod>/volumes/kubernetes.io~csi/<name>/mount`.
 * The CSIDriver must allow the Ephemeral lifecycle mode (the mounter checks). Tear-down is the PV
 * plugin's, which finds the dir on disk.
 */
export function createCsiInlinePlugin(
  csi: { mounter: CsiMounter },
  rootDir: string,
  stats?: CsiVolumeStats,
): InlineVolumePlugin {
  return {
    ...(stats ? { metrics: (podUID: string, volume: string) => stats.get(podUID, volume) } : {}),
    async setUp(pod: KubeletPod, v: Volume, signal?: AbortSignal) {
      const target = podVolumeMountPath(rootDir, pod.metadata.uid, v.name);
      if (await mountAt(target)) return;
      const volume = csiVolumeFromPodVolume(v);
      if (!volume)
        throw new KubeletError('InvalidArgument', `mount volume ${v.name}`, 'the volume has no csi source');
      await csi.mounter.setUp(podRef(pod), volume, signal);
    },
    hostPath: (pod: KubeletPod, v: Volume) => podVolumeMountPath(rootDir, pod.metadata.uid, v.name),
  };
}

/**
 * `stats`: where the usage of published volumes comes from (createCsiVolumeStats: the driver's
 * NodeGetVolumeStats, cached per volumeStatsAggPeriod); absent: CSI volumes report none.
 */
export function createCsiPvPlugin(
  csi: { mounter: CsiMounter; blockMapper: CsiBlockMapper },
  stats?: CsiVolumeStats,
): PvPlugin {
  const persistent = (ctx: PvContext) => {
    const volume = csiVolumeFromPersistentVolume(ctx.pv, ctx.readOnly);
    if (volume?.kind !== 'persistent')
      throw new KubeletError(
        'InvalidArgument',
        `mount volume ${ctx.volume}`,
        `PV ${ctx.pvName} has no spec.csi`,
      );
    return volume;
  };
  /** `<root>/pods/<uid>/volumes|volumeDevices/kubernetes.io~csi/<name>` → the pod UID. */
  const podUIDOf = (entry: string) => basename(dirname(dirname(dirname(entry))));
  return {
    name: CSI_PLUGIN_NAME,
    // Usage comes from the driver's NodeGetVolumeStats, not statfs.
    statfsMetrics: false,
    ...(stats ? { metrics: (podUID: string, pvName: string) => stats.get(podUID, pvName) } : {}),
    async setUp(ctx) {
      const volume = persistent(ctx);
      const target = podVolumeMountPath(ctx.rootDir, ctx.pod.metadata.uid, ctx.pvName);
      if (await mountAt(target)) return target;
      return csi.mounter.setUp(podRef(ctx.pod), volume, ctx.signal);
    },
    async tearDown(dir, signal) {
      await csi.mounter.tearDown(podUIDOf(dir), basename(dir), signal);
    },
    async mapDevice(ctx) {
      return csi.blockMapper.map(podRef(ctx.pod), persistent(ctx), ctx.signal);
    },
    async unmapDevice(entry, signal) {
      await csi.blockMapper.unmap(podUIDOf(entry), basename(entry), signal);
    },
  };
}
