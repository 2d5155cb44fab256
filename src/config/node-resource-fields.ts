/**
 * The field table's rows for keeping the node alive (see fields.ts for what a row is and drives):
 * image and container garbage collection, node-pressure eviction, volume stats, graceful node
 * shutdown. Spread at the end of KUBELET_FIELDS, so their flags stay in `run --help`'s order.
 */
import * as d from './defaults.ts';
import { formatGoDuration as dur } from './duration.ts';
import type { FieldSpec } from './fields.ts';
import { nonNegativeDuration, percent, positiveDuration, zeroOrAtLeastOneSecond } from './validate.ts';

export const NODE_RESOURCE_FIELDS = {
  // Image GC (upstream realImageGCManager's ImageGCPolicy).
  imageGCHighThresholdPercent: {
    kind: 'int32',
    file: 'imageGCHighThresholdPercent',
    flag: { name: 'image-gc-high-threshold', arg: '<percent>' },
    // A pointer upstream: an explicit 0 in the file stays 0.
    fileZero: 'kept',
    default: d.DEFAULT_IMAGE_GC_HIGH_THRESHOLD_PERCENT,
    check: percent,
    help: `image filesystem usage that starts image GC, in percent; 100 disables image GC (default ${d.DEFAULT_IMAGE_GC_HIGH_THRESHOLD_PERCENT})`,
  },
  imageGCLowThresholdPercent: {
    kind: 'int32',
    file: 'imageGCLowThresholdPercent',
    flag: { name: 'image-gc-low-threshold', arg: '<percent>' },
    fileZero: 'kept',
    default: d.DEFAULT_IMAGE_GC_LOW_THRESHOLD_PERCENT,
    check: percent,
    help: `image filesystem usage image GC frees down to, in percent; below the high threshold (default ${d.DEFAULT_IMAGE_GC_LOW_THRESHOLD_PERCENT})`,
  },
  imageMinimumGCAge: {
    kind: 'duration',
    file: 'imageMinimumGCAge',
    flag: { name: 'minimum-image-ttl-duration', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_IMAGE_MINIMUM_GC_AGE_MS,
    check: nonNegativeDuration,
    help: `minimum age of an unused image (since the kubelet first saw it) before image GC removes it (default ${dur(d.DEFAULT_IMAGE_MINIMUM_GC_AGE_MS)})`,
  },
  volumeStatsAggPeriod: {
    kind: 'duration',
    file: 'volumeStatsAggPeriod',
    flag: { name: 'volume-stats-agg-period', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_VOLUME_STATS_AGG_PERIOD_MS,
    check: positiveDuration,
    help: `how often pod volume usage is measured (stats summary, eviction ranking, emptyDir sizeLimit) (default ${dur(d.DEFAULT_VOLUME_STATS_AGG_PERIOD_MS)})`,
  },
  evictionHard: {
    kind: 'thresholdMap',
    file: 'evictionHard',
    flag: { name: 'eviction-hard', arg: '<signal<value,...>' },
    // A nil map gets the default; an explicit empty one means no hard thresholds (1.20 merges nothing).
    fileZero: 'kept',
    default: { ...d.DEFAULT_EVICTION_HARD },
    help: `hard eviction thresholds, e.g. memory.available<1Gi; quantities or percentages (default ${Object.entries(
      d.DEFAULT_EVICTION_HARD,
    )
      .map(([k, v]) => `${k}<${v}`)
      .join(',')})`,
  },
  evictionSoft: {
    kind: 'thresholdMap',
    file: 'evictionSoft',
    flag: { name: 'eviction-soft', arg: '<signal<value,...>' },
    fileZero: 'kept',
    default: {},
    help: 'soft eviction thresholds, each with a grace period in --eviction-soft-grace-period',
  },
  evictionSoftGracePeriod: {
    kind: 'stringMap',
    file: 'evictionSoftGracePeriod',
    flag: { name: 'eviction-soft-grace-period', arg: '<signal=duration,...>' },
    fileZero: 'kept',
    default: {},
    help: 'how long a soft threshold must hold before a pod is evicted, e.g. memory.available=1m30s',
  },
  evictionMinimumReclaim: {
    kind: 'stringMap',
    file: 'evictionMinimumReclaim',
    flag: { name: 'eviction-minimum-reclaim', arg: '<signal=value,...>' },
    fileZero: 'kept',
    default: {},
    help: 'how much beyond its threshold a signal must recover before pressure ends, e.g. imagefs.available=2Gi',
  },
  evictionPressureTransitionPeriod: {
    kind: 'duration',
    file: 'evictionPressureTransitionPeriod',
    flag: { name: 'eviction-pressure-transition-period', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_EVICTION_PRESSURE_TRANSITION_PERIOD_MS,
    check: nonNegativeDuration,
    help: `how long a pressure condition stays on after its threshold was last crossed (default ${dur(d.DEFAULT_EVICTION_PRESSURE_TRANSITION_PERIOD_MS)})`,
  },
  evictionMaxPodGracePeriod: {
    kind: 'int32',
    file: 'evictionMaxPodGracePeriod',
    flag: { name: 'eviction-max-pod-grace-period', arg: '<seconds>' },
    fileZero: 'default',
    default: d.DEFAULT_EVICTION_MAX_POD_GRACE_PERIOD_SECONDS,
    help: 'grace period (seconds) of a pod evicted by a soft threshold (default 0)',
  },
  // Container GC: KubeletFlags upstream (deprecated there, with no KubeletConfiguration field).
  minimumGCAge: {
    kind: 'duration',
    flag: { name: 'minimum-container-ttl-duration', arg: '<duration>' },
    fileZero: 'kept',
    default: d.DEFAULT_MINIMUM_GC_AGE_MS,
    check: nonNegativeDuration,
    help: `minimum age of a finished container before it is garbage collected (default ${dur(d.DEFAULT_MINIMUM_GC_AGE_MS)}; deprecated upstream)`,
  },
  maxPerPodContainerCount: {
    kind: 'int32',
    flag: { name: 'maximum-dead-containers-per-container', arg: '<n>' },
    fileZero: 'kept',
    default: d.DEFAULT_MAX_PER_POD_CONTAINER_COUNT,
    help: `old instances kept per container; negative: no limit (default ${d.DEFAULT_MAX_PER_POD_CONTAINER_COUNT}; deprecated upstream)`,
  },
  maxContainerCount: {
    kind: 'int32',
    flag: { name: 'maximum-dead-containers', arg: '<n>' },
    fileZero: 'kept',
    default: d.DEFAULT_MAX_CONTAINER_COUNT,
    help: `old container instances kept on the node; negative: no limit (default ${d.DEFAULT_MAX_CONTAINER_COUNT}; deprecated upstream)`,
  },
  // Graceful node shutdown (upstream nodeshutdown manager); file only, as upstream.
  shutdownGracePeriod: {
    kind: 'duration',
    file: 'shutdownGracePeriod',
    fileZero: 'default',
    default: d.DEFAULT_SHUTDOWN_GRACE_PERIOD_MS,
    check: zeroOrAtLeastOneSecond,
    help: 'how long a node shutdown is delayed (logind delay inhibitor) for pods to terminate; 0 turns graceful node shutdown off',
  },
  shutdownGracePeriodCriticalPods: {
    kind: 'duration',
    file: 'shutdownGracePeriodCriticalPods',
    fileZero: 'default',
    default: d.DEFAULT_SHUTDOWN_GRACE_PERIOD_CRITICAL_PODS_MS,
    // At most shutdownGracePeriod: checked with it in compile.ts.
    check: zeroOrAtLeastOneSecond,
    help: 'the last part of shutdownGracePeriod, kept for critical pods (static, mirror, system-critical priority)',
  },
} satisfies Readonly<Record<string, FieldSpec>>;
