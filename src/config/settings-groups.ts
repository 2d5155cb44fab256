/**
 * The settings of `compileConfig` that are defaulted and checked together, one group per function:
 * image pulls, image GC, eviction, container GC, graceful shutdown, pod cgroups and node
 * allocatable. Each reads resolved fields and pushes its problems onto `errors` / `warnings`.
 * Upstream counterpart: the v1beta1 defaulting and the kubelet config validation of each group.
 */
import { DEFAULT_CGROUP_ROOT, DEFAULT_MAX_PARALLEL_IMAGE_PULLS } from './defaults.ts';
import { formatGoDuration } from './duration.ts';
import { parseThresholds } from '../eviction/signals.ts';
import type { KubeletFieldKey } from './fields.ts';
import type { KubeletConfig } from './kubelet-config.ts';
import type { resolveField } from './resolve.ts';
import type { KUBELET_FIELDS } from './fields.ts';
import { nodeAllocatableSettings, type NodeAllocatableSettings } from './node-allocatable.ts';
import { cleanPath } from './validate.ts';

/** A field of the table as `resolve.ts` resolves it (value, where it came from, its label). */
export type Field<K extends KubeletFieldKey> = ReturnType<typeof resolveField<(typeof KUBELET_FIELDS)[K]>>;
/** A resolved field of the table, by key. */
export type FieldOf = <K extends KubeletFieldKey>(key: K) => Field<K>;

/**
 * serializeImagePulls, maxParallelImagePulls, registryPullQPS and registryBurst (upstream v1beta1
 * defaulting and validation). serializeImagePulls and maxParallelImagePulls are pointers defaulted
 * together: an unset serializeImagePulls is true when maxParallelImagePulls is unset or below 2,
 * else false; serializeImagePulls false without maxParallelImagePulls means no limit. The one
 * deliberate difference: with neither field (nor --serialize-image-pulls) set, pulls run in
 * parallel, at most DEFAULT_MAX_PARALLEL_IMAGE_PULLS at once (upstream: one at a time).
 */
export function imagePullSettings(
  field: FieldOf,
  errors: string[],
  warnings: string[],
): Pick<
  KubeletConfig,
  'serializeImagePulls' | 'maxParallelImagePulls' | 'registryPullQPS' | 'registryBurst'
> {
  const maxParallel = field('maxParallelImagePulls').value;
  const serialize = field('serializeImagePulls');
  const serializeImagePulls = serialize.value ?? (maxParallel !== undefined && maxParallel < 2);
  if (serializeImagePulls && maxParallel !== undefined && maxParallel > 1) {
    errors.push(
      `maxParallelImagePulls: ${maxParallel} cannot be larger than 1 unless ${serialize.label} is set to false`,
    );
  }
  let maxParallelImagePulls: number | undefined;
  if (serializeImagePulls) maxParallelImagePulls = 1;
  else if (maxParallel !== undefined) maxParallelImagePulls = maxParallel;
  else if (serialize.value === undefined) maxParallelImagePulls = DEFAULT_MAX_PARALLEL_IMAGE_PULLS;

  const qps = field('registryPullQPS');
  const burst = field('registryBurst');
  if (burst.value === 0 && qps.value > 0) {
    warnings.push(
      `${burst.label}: 0 with ${qps.label} ${qps.value} would refuse every pull upstream ("pull QPS exceeded"); ` +
        'tskubelet uses a burst of 1',
    );
  }
  return {
    serializeImagePulls,
    ...(maxParallelImagePulls !== undefined ? { maxParallelImagePulls } : {}),
    registryPullQPS: qps.value,
    registryBurst: burst.value,
  };
}

/** The image GC policy; upstream ValidateKubeletConfiguration wants low strictly below high. */
export function imageGCSettings(
  field: FieldOf,
  errors: string[],
): Pick<KubeletConfig, 'imageGCHighThresholdPercent' | 'imageGCLowThresholdPercent' | 'imageMinimumGCAgeMs'> {
  const high = field('imageGCHighThresholdPercent');
  const low = field('imageGCLowThresholdPercent');
  if (low.value >= high.value) {
    errors.push(`${low.label}: ${low.value} must be less than ${high.label} ${high.value}`);
  }
  return {
    imageGCHighThresholdPercent: high.value,
    imageGCLowThresholdPercent: low.value,
    imageMinimumGCAgeMs: field('imageMinimumGCAge').value,
  };
}

/**
 * The eviction settings (upstream ParseThresholdConfig): every bad statement is an error naming
 * its field; with enforceNodeAllocatable `pods` each hard memory.available also guards
 * allocatable memory (allocatableMemory.available).
 */
export function evictionSettings(
  field: FieldOf,
  errors: string[],
): Pick<
  KubeletConfig,
  | 'evictionHard'
  | 'evictionSoft'
  | 'evictionSoftGracePeriod'
  | 'evictionMinimumReclaim'
  | 'volumeStatsAggPeriodMs'
  | 'evictionThresholds'
  | 'evictionPressureTransitionPeriodMs'
  | 'evictionMaxPodGracePeriodSeconds'
> {
  const hard = field('evictionHard');
  const soft = field('evictionSoft');
  const grace = field('evictionSoftGracePeriod');
  const reclaim = field('evictionMinimumReclaim');
  const parsed = parseThresholds({
    evictionHard: hard.value,
    evictionSoft: soft.value,
    evictionSoftGracePeriod: grace.value,
    evictionMinimumReclaim: reclaim.value,
    enforceNodeAllocatable: field('enforceNodeAllocatable').value,
  });
  const labels: Record<string, string> = {
    evictionHard: hard.label,
    evictionSoft: soft.label,
    evictionSoftGracePeriod: grace.label,
    evictionMinimumReclaim: reclaim.label,
  };
  // The parser names the file fields; a value from a flag is named by the flag. The field may sit
  // after a prefix (`parse quantity: evictionSoft[memory.available]: …`).
  for (const e of parsed.errors) {
    errors.push(
      e.replace(
        /\b(evictionHard|evictionSoft|evictionSoftGracePeriod|evictionMinimumReclaim)\b/,
        (m) => labels[m] ?? m,
      ),
    );
  }
  return {
    evictionHard: hard.value,
    evictionSoft: soft.value,
    evictionSoftGracePeriod: grace.value,
    evictionMinimumReclaim: reclaim.value,
    volumeStatsAggPeriodMs: field('volumeStatsAggPeriod').value,
    evictionThresholds: parsed.thresholds,
    evictionPressureTransitionPeriodMs: field('evictionPressureTransitionPeriod').value,
    evictionMaxPodGracePeriodSeconds: field('evictionMaxPodGracePeriod').value,
  };
}

/**
 * The container GC flags (upstream KubeletFlags; a negative MinimumGCAge fails NewContainerGC).
 * Upstream marks all three deprecated: pflag's notice is repeated as a warning when one is given.
 */
export function containerGCSettings(
  field: FieldOf,
  warnings: string[],
): Pick<KubeletConfig, 'minimumGCAgeMs' | 'maxPerPodContainerCount' | 'maxContainerCount'> {
  const chosen = {
    minimumGCAgeMs: field('minimumGCAge'),
    maxPerPodContainerCount: field('maxPerPodContainerCount'),
    maxContainerCount: field('maxContainerCount'),
  };
  for (const c of Object.values(chosen)) {
    if (c.fromFlag) {
      warnings.push(
        `Flag ${c.label} has been deprecated, Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.`,
      );
    }
  }
  return {
    minimumGCAgeMs: chosen.minimumGCAgeMs.value,
    maxPerPodContainerCount: chosen.maxPerPodContainerCount.value,
    maxContainerCount: chosen.maxContainerCount.value,
  };
}

/**
 * The graceful node shutdown periods (upstream ValidateKubeletConfiguration): each 0 or at least 1s
 * (the rows' checks), and the critical pods' share no longer than the whole.
 */
export function shutdownSettings(
  field: FieldOf,
  errors: string[],
): Pick<KubeletConfig, 'shutdownGracePeriodMs' | 'shutdownGracePeriodCriticalPodsMs'> {
  const total = field('shutdownGracePeriod');
  const critical = field('shutdownGracePeriodCriticalPods');
  if (critical.value > total.value) {
    errors.push(
      `${critical.label}: ${formatGoDuration(critical.value)} must not be longer than ` +
        `${total.label} (${formatGoDuration(total.value)})`,
    );
  }
  return { shutdownGracePeriodMs: total.value, shutdownGracePeriodCriticalPodsMs: critical.value };
}

/**
 * cgroupsPerQOS, cgroupRoot, cgroupDriver, podPidsLimit, cpuCFSQuota, cpuCFSQuotaPeriod, and
 * enforceNodeAllocatable with its reservations (node-allocatable.ts). cpuCFSQuotaPeriod is
 * accepted in upstream's range (1ms–1s) without upstream's CustomCPUCFSQuotaPeriod feature gate.
 */
export function podCgroupSettings(
  field: FieldOf,
  errors: string[],
): Pick<
  KubeletConfig,
  'cgroupsPerQOS' | 'cgroupRoot' | 'cgroupDriver' | 'podPidsLimit' | 'cpuCFSQuota' | 'cpuCFSQuotaPeriodMs'
> &
  NodeAllocatableSettings {
  const cgroupsPerQOS = field('cgroupsPerQOS').value;
  const driver = field('cgroupDriver').value;
  const root = field('cgroupRoot').value;
  const allocatable = nodeAllocatableSettings(
    {
      enforceNodeAllocatable: field('enforceNodeAllocatable'),
      cgroupsPerQOS,
      systemReserved: field('systemReserved'),
      kubeReserved: field('kubeReserved'),
      reservedSystemCPUs: field('reservedSystemCPUs'),
      systemReservedCgroup: field('systemReservedCgroup'),
      kubeReservedCgroup: field('kubeReservedCgroup'),
    },
    errors,
  );
  return {
    cgroupsPerQOS,
    cgroupRoot: root === '' ? DEFAULT_CGROUP_ROOT : cleanPath(root),
    cgroupDriver: driver === 'systemd' ? 'systemd' : 'cgroupfs',
    podPidsLimit: field('podPidsLimit').value,
    cpuCFSQuota: field('cpuCFSQuota').value,
    cpuCFSQuotaPeriodMs: field('cpuCFSQuotaPeriod').value,
    ...allocatable,
  };
}
