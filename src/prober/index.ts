export { createProbeManager } from './manager.ts';
export type {
  ProbeContainer,
  ProbeManager,
  ProbeManagerDeps,
  ProbeMetricLabels,
  ProbeMetrics,
  ProbeState,
  ProbeTimers,
  ProbeType,
  RestartReason,
} from './types.ts';
export type { ExecFn } from './exec-probe.ts';
