/**
 * What the volume manager reports to the volume metrics: each volume operation as it ends (upstream
 * pkg/volume/util/metrics.go OperationCompleteHook, fed by operationexecutor/operation_generator.go)
 * and the volumes of its desired and actual state (pkg/kubelet/volumemanager/metrics, which counts
 * the DesiredStateOfWorld's volumes to mount and the ActualStateOfWorld's mounted volumes by plugin).
 * tskubelet has no separate worlds: the desired volumes are those of the pods it sets up, the actual
 * ones those whose setup succeeded and that were not torn down since.
 */
import type { KubeletPod, Volume } from '../api/types.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { monotonicNow } from '../util/clock.ts';
import { isProjectionKind } from './projection.ts';

/** The operation names upstream's kubelet side reports (operation_generator.go). */
export type VolumeOperation =
  'verify_controller_attached_volume' | 'volume_mount' | 'volume_unmount' | 'map_volume' | 'unmap_volume';

export type VolumeWorld = 'desired_state_of_world' | 'actual_state_of_world';

export interface VolumeCount {
  /** The fully qualified plugin name (`kubernetes.io/csi:<driver>` for CSI). */
  plugin: string;
  state: VolumeWorld;
  count: number;
}

/** The metrics' side, implemented in src/metrics (storage_operation_*, volume_manager_total_volumes). */
export interface VolumeMetrics {
  /** One operation on a volume of `plugin` ended after `seconds`; `failed` if it threw. */
  operationDone(plugin: string, operation: VolumeOperation, seconds: number, failed: boolean): void;
  /** The volume manager hands over its counts, read at each scrape (upstream metrics.Register(asw, dsw)). */
  registerVolumeCounts(counts: () => readonly VolumeCount[]): void;
}

/** A pod volume's plugin as upstream names it, and whether it is a Block-mode claim. */
export interface VolumePlugin {
  name: string;
  block: boolean;
}

/** Upstream's plugin names of the volume kinds set up in the pod itself (not claims). */
const INLINE_PLUGINS: Readonly<Record<string, string>> = {
  emptyDir: 'kubernetes.io/empty-dir',
  hostPath: 'kubernetes.io/host-path',
  secret: 'kubernetes.io/secret',
  configMap: 'kubernetes.io/configmap',
  downwardAPI: 'kubernetes.io/downward-api',
  projected: 'kubernetes.io/projected',
};

/**
 * The plugin of an inline volume of kind `kind` (upstream GetFullQualifiedPluginNameForVolume:
 * `kubernetes.io/csi:<driver>` for a csi volume); undefined for a claim, whose PV decides, and for
 * kinds tskubelet does not set up.
 */
export function inlineVolumePlugin(kind: string, v: Volume): string | undefined {
  if (kind === 'csi') return qualifiedPluginName('kubernetes.io/csi', v.csi);
  return INLINE_PLUGINS[kind];
}

/** `plugin:<driver>` when `csiSource` (a pod volume's or a PV's `csi`) names a driver, else `plugin`. */
export function qualifiedPluginName(plugin: string, csiSource: unknown): string {
  const driver =
    typeof csiSource === 'object' && csiSource !== null
      ? (csiSource as { driver?: unknown }).driver
      : undefined;
  return typeof driver === 'string' && driver !== '' ? `${plugin}:${driver}` : plugin;
}

/** What the volume manager runs its setups and teardowns through. */
export interface VolumeMetricsRecorder {
  /**
   * Runs one setup of `v` and counts it. The first success counts as attached
   * (verify_controller_attached_volume: tskubelet attaches nothing, as upstream's verify for a plugin
   * that is not attachable, which only marks the volume attached) and as mounted (volume_mount, or
   * map_volume for a Block claim); later setups count again only for the kinds upstream remounts at
   * each pod sync (secret, configMap, downwardAPI, projected: RequiresRemount). A failure counts
   * every time, unless `signal` was aborted (the pod went away: nothing failed).
   */
  setUp(
    pod: KubeletPod,
    v: Volume,
    kind: string,
    run: () => Promise<void>,
    signal?: AbortSignal,
  ): Promise<void>;
  /** Runs the teardown of the pod's volumes: volume_unmount (unmap_volume) for each one mounted. */
  tearDown(uid: string, run: () => Promise<void>): Promise<void>;
}

export interface VolumeMetricsRecorderOptions {
  /** Absent: the recorder only runs what it is given. */
  metrics: VolumeMetrics | undefined;
  /** The plugin of one of the pod's volumes, undefined while unknown (a claim not resolved yet). */
  pluginOf: (pod: KubeletPod, v: Volume, kind: string) => VolumePlugin | undefined;
  /** The pods whose volumes are wanted now. */
  desiredPods: () => Iterable<KubeletPod>;
  /** Kind of a pod volume (the volume manager's). */
  kindOf: (v: Volume) => string;
  logger: Logger;
  monotonic?: () => number;
}

export function createVolumeMetricsRecorder(opts: VolumeMetricsRecorderOptions): VolumeMetricsRecorder {
  const { metrics } = opts;
  if (!metrics) return { setUp: (_pod, _v, _kind, run) => run(), tearDown: (_uid, run) => run() };
  const monotonic = opts.monotonic ?? monotonicNow;
  /** Mounted volumes by pod UID, then volume name. */
  const actual = new Map<string, Map<string, VolumePlugin>>();

  function counts(): VolumeCount[] {
    const byKey = new Map<string, VolumeCount>();
    const add = (plugin: string, state: VolumeWorld) => {
      const key = `${state}\0${plugin}`;
      const c = byKey.get(key);
      if (c) c.count++;
      else byKey.set(key, { plugin, state, count: 1 });
    };
    for (const pod of opts.desiredPods()) {
      for (const v of pod.spec.volumes ?? []) {
        // Upstream's populator adds a claim's volume only once its PV is known; so here.
        const p = opts.pluginOf(pod, v, opts.kindOf(v));
        if (p) add(p.name, 'desired_state_of_world');
      }
    }
    for (const vols of actual.values()) for (const p of vols.values()) add(p.name, 'actual_state_of_world');
    return [...byKey.values()];
  }
  metrics.registerVolumeCounts(counts);

  function pluginOf(pod: KubeletPod, v: Volume, kind: string): VolumePlugin | undefined {
    try {
      return opts.pluginOf(pod, v, kind);
    } catch (err) {
      // Never fails a setup for a metric; the volume is then not counted.
      opts.logger.debug('no plugin name for the volume metrics', {
        podUID: pod.metadata.uid,
        volume: v.name,
        err: describeError(err),
      });
      return undefined;
    }
  }

  return {
    async setUp(pod, v, kind, run, signal) {
      const t0 = monotonic();
      const seconds = () => (monotonic() - t0) / 1000;
      try {
        await run();
      } catch (err) {
        const plugin = signal?.aborted ? undefined : pluginOf(pod, v, kind);
        if (plugin)
          metrics.operationDone(plugin.name, plugin.block ? 'map_volume' : 'volume_mount', seconds(), true);
        throw err;
      }
      const plugin = pluginOf(pod, v, kind);
      if (!plugin) return;
      const op = plugin.block ? 'map_volume' : 'volume_mount';
      const uid = pod.metadata.uid;
      let vols = actual.get(uid);
      const first = !vols?.has(v.name);
      if (first) {
        if (!vols) actual.set(uid, (vols = new Map<string, VolumePlugin>()));
        vols.set(v.name, plugin);
        metrics.operationDone(plugin.name, 'verify_controller_attached_volume', 0, false);
      }
      if (first || isProjectionKind(kind)) metrics.operationDone(plugin.name, op, seconds(), false);
    },
    async tearDown(uid, run) {
      const t0 = monotonic();
      let failed = false;
      try {
        await run();
      } catch (err) {
        failed = true;
        throw err;
      } finally {
        const vols = actual.get(uid);
        const seconds = (monotonic() - t0) / 1000;
        for (const p of vols?.values() ?? []) {
          metrics.operationDone(p.name, p.block ? 'unmap_volume' : 'volume_unmount', seconds, failed);
        }
        if (!failed) actual.delete(uid);
      }
    },
  };
}
