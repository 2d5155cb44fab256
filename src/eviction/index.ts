/**
 * Node-pressure eviction (upstream pkg/kubelet/eviction): thresholds on memory, disk, inodes and
 * PIDs from the stats summary; MemoryPressure / DiskPressure / PIDPressure for the node status;
 * admission under pressure; node-level reclaim (container and image GC) before evicting pods,
 * ranked as upstream; local ephemeral-storage limits. May import api/, stats/ (types), config/
 * (durations) and util/ — never kubelet/ (the kubelet hands it functions).
 */
export {
  createEvictionManager,
  EVICTED_REASON,
  EVICTION_MONITORING_PERIOD_MS,
  type EvictionConfig,
  type EvictionDeps,
  type EvictionManager,
  type PressureState,
} from './manager.ts';
export { parseThresholds, SIGNALS, type Signal, type Threshold, type ThresholdConfig } from './signals.ts';
