/**
 * Local ephemeral storage limits (upstream localStorageEviction, LocalStorageCapacityIsolation):
 * a pod is evicted when an emptyDir exceeds its `sizeLimit`, when the pod's ephemeral usage
 * exceeds the sum of its containers' `ephemeral-storage` limits, or when one container's rootfs +
 * logs exceed its own limit. Checked in that order; the first breach names the pod's eviction.
 */
import type { KubeletPod } from '../api/types.ts';
import { podHasLimit, podResourceTotal } from '../api/pod-resources.ts';
import { parseQuantity } from '../api/quantity.ts';
import { canonicalQuantity, formatQuantity } from '../api/quantity-format.ts';
import type { PodStats } from '../stats/index.ts';
import { podDiskUsage, type FsStatsType } from './ranking.ts';

/** The kubelet_evictions label of each local-storage breach (upstream's signal names). */
export type LocalStorageSignal = 'emptydirfs.limit' | 'ephemeralpodfs.limit' | 'ephemeralcontainerfs.limit';

export interface LocalStorageBreach {
  signal: LocalStorageSignal;
  message: string;
}

/** upstream IsLocalEphemeralVolume: what counts toward a pod's ephemeral storage. */
function isLocalEphemeralVolume(v: NonNullable<KubeletPod['spec']['volumes']>[number]): boolean {
  return !!(
    v['gitRepo'] ||
    (v.emptyDir && v.emptyDir.medium !== 'Memory') ||
    v['configMap'] ||
    v['downwardAPI']
  );
}

/**
 * The first local-storage limit the pod breaches, or undefined. `dedicatedImageFs`: container
 * writable layers live on the image filesystem and do not count against the pod's limit.
 */
export function localStorageBreach(
  pod: KubeletPod,
  stats: PodStats<number>,
  dedicatedImageFs: boolean,
): LocalStorageBreach | undefined {
  const volumeUsed = new Map((stats.volume ?? []).map((v) => [v.name, v.usedBytes]));
  for (const v of pod.spec.volumes ?? []) {
    const limitText = v.emptyDir?.sizeLimit;
    if (limitText === undefined) continue;
    const limit = parseQuantity(limitText, `volumes[${v.name}].emptyDir.sizeLimit`);
    const used = volumeUsed.get(v.name);
    if (limit > 0 && used !== undefined && used > limit) {
      return {
        signal: 'emptydirfs.limit',
        message: `Usage of EmptyDir volume "${v.name}" exceeds the limit "${canonicalQuantity(limitText, v.name)}". `,
      };
    }
  }

  if (podHasLimit(pod, 'ephemeral-storage')) {
    const limit = podResourceTotal(pod, 'limits', 'ephemeral-storage');
    const measure: FsStatsType[] = dedicatedImageFs ? ['logs'] : ['root', 'logs'];
    let usage = podDiskUsage(stats, pod, measure, 'ephemeral-storage');
    const local = new Set((pod.spec.volumes ?? []).filter(isLocalEphemeralVolume).map((v) => v.name));
    for (const v of stats.volume ?? []) if (local.has(v.name)) usage += v.usedBytes ?? 0;
    if (usage > limit) {
      return {
        signal: 'ephemeralpodfs.limit',
        message: `Pod ephemeral local storage usage exceeds the total limit of containers ${formatLimit(pod)}. `,
      };
    }
  }

  for (const cs of stats.containers) {
    const c = pod.spec.containers.find((x) => x.name === cs.name);
    const limitText = c?.resources?.limits?.['ephemeral-storage'];
    if (!c || limitText === undefined) continue;
    const limit = parseQuantity(limitText, `${c.name}.resources.limits.ephemeral-storage`);
    if (limit === 0) continue;
    const used = (cs.logs?.usedBytes ?? 0) + (dedicatedImageFs ? 0 : (cs.rootfs?.usedBytes ?? 0));
    if (used > limit) {
      return {
        signal: 'ephemeralcontainerfs.limit',
        message: `Container ${c.name} exceeded its local ephemeral storage limit "${canonicalQuantity(limitText, c.name)}". `,
      };
    }
  }
  return undefined;
}

/** The pod's total limit as upstream prints the summed Quantity (BinarySI unless every part is decimal). */
function formatLimit(pod: KubeletPod): string {
  const texts = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]
    .map((c) => c.resources?.limits?.['ephemeral-storage'])
    .filter((t) => t !== undefined);
  const binary = texts.some((t) => /[KMGTPE]i$/.test(t.trim()));
  return formatQuantity(
    podResourceTotal(pod, 'limits', 'ephemeral-storage'),
    binary ? 'BinarySI' : 'DecimalSI',
  );
}
