/**
 * The volume metrics of the kubelet (upstream pkg/volume/util/metrics.go: storage_operation_*,
 * each operation's duration, errors and statuses by plugin and operation name; and
 * pkg/kubelet/volumemanager/metrics/metrics.go: volume_manager_total_volumes, the volumes of the
 * desired and the actual state by plugin, counted at each scrape). The volume manager feeds them
 * (src/volume/volume-metrics.ts).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * What the volume manager reports (the shape of src/volume's VolumeMetrics, which metrics/ may not
 * import; the kubelet hands one to the other and the compiler checks they fit).
 */
export interface VolumeOperationMetrics {
  /** One operation on a volume of `plugin` ended after `seconds`; `failed` if it threw. */
  operationDone(plugin: string, operation: string, seconds: number, failed: boolean): void;
  /** The volume counts by plugin and state, read at each scrape. */
  registerVolumeCounts(counts: () => readonly { plugin: string; state: string; count: number }[]): void;
}

/** storage_operation_duration_seconds' buckets (upstream metrics.go). */
export const STORAGE_OPERATION_BUCKETS: readonly number[] = [
  0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600,
];

export function createVolumeMetrics(registry: Registry): VolumeOperationMetrics {
  const registers = [registry];
  const duration = new Histogram<'volume_plugin' | 'operation_name'>({
    name: 'storage_operation_duration_seconds',
    help: '[ALPHA] Storage operation duration',
    labelNames: ['volume_plugin', 'operation_name'],
    buckets: [...STORAGE_OPERATION_BUCKETS],
    registers,
  });
  const errors = new Counter<'volume_plugin' | 'operation_name'>({
    name: 'storage_operation_errors_total',
    help: '[ALPHA] Storage operation errors',
    labelNames: ['volume_plugin', 'operation_name'],
    registers,
  });
  const statuses = new Counter<'volume_plugin' | 'operation_name' | 'status'>({
    name: 'storage_operation_status_count',
    help: '[ALPHA] Storage operation return statuses count',
    labelNames: ['volume_plugin', 'operation_name', 'status'],
    registers,
  });
  let counts: () => readonly { plugin: string; state: string; count: number }[] = () => [];
  new Gauge<'plugin_name' | 'state'>({
    name: 'volume_manager_total_volumes',
    help: '[ALPHA] Number of volumes in Volume Manager',
    labelNames: ['plugin_name', 'state'],
    registers,
    collect(this: Gauge<'plugin_name' | 'state'>) {
      // A const metric upstream: only the plugins and states that have volumes now.
      this.reset();
      for (const c of counts()) this.set({ plugin_name: c.plugin, state: c.state }, c.count);
    },
  });
  return {
    operationDone(plugin, operation, seconds, failed) {
      const labels = { volume_plugin: plugin, operation_name: operation };
      // Upstream OperationCompleteHook: a failure counts as an error, a success as a duration.
      if (failed) errors.inc(labels);
      else duration.observe(labels, seconds);
      statuses.inc({ ...labels, status: failed ? 'fail-unknown' : 'success' });
    },
    registerVolumeCounts(c) {
      counts = c;
    },
  };
}
