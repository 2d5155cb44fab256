/**
 * The usage of published CSI volumes for /stats/summary and kubelet_volume_stats_* (upstream
 * pkg/volume/csi csi_metrics.go metricsCsi.GetMetrics, measured in the background and cached per
 * volume by pkg/kubelet/server/stats fs_resource_analyzer.go / volume_stat_calculator.go every
 * volumeStatsAggPeriod). A read never waits for the driver: it returns the last measurement (none
 * until the first one ends) and starts a new one when that is older than the period, at most one
 * per volume at a time. A driver without GET_VOLUME_STATS reports nothing (upstream's
 * MetricsNotSupported); a failed measurement is logged and keeps the last numbers.
 */
import { describeError } from '../../util/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { monotonicNow, wallNow } from '../../util/clock.ts';
import type { PvMetrics } from '../pv-plugins.ts';
import type { CsiMounter } from './mounter.ts';

export interface CsiVolumeStats {
  /** The last usage measured for the pod's volume dir `specName`, with its wall time (ms). */
  get(podUID: string, specName: string): { usage: PvMetrics; time: number } | undefined;
}

export interface CsiVolumeStatsOptions {
  mounter: Pick<CsiMounter, 'volumeStats'>;
  /** upstream volumeStatsAggPeriod. */
  periodMs: number;
  logger: Logger;
  /** Wall ms, the measurement's reported time. */
  now?: () => number;
  monotonic?: () => number;
}

interface Entry {
  last?: { usage: PvMetrics; time: number };
  /** Monotonic ms of the last measurement started; of the last read. */
  startedAt: number;
  readAt: number;
  inFlight: boolean;
}

export function createCsiVolumeStats(opts: CsiVolumeStatsOptions): CsiVolumeStats {
  const now = opts.now ?? wallNow;
  const monotonic = opts.monotonic ?? monotonicNow;
  const entries = new Map<string, Entry>();

  function measure(e: Entry, podUID: string, specName: string): void {
    e.inFlight = true;
    e.startedAt = monotonic();
    const time = now();
    opts.mounter
      .volumeStats(podUID, specName)
      .then(
        (usage) => {
          if (usage) e.last = { usage, time };
          else delete e.last; // unpublished, or the driver does not report usage
        },
        (err: unknown) =>
          // Kept: the last numbers stay until a measurement succeeds (the driver may be restarting).
          opts.logger.warn('CSI volume stats not measured', {
            podUID,
            volume: specName,
            err: describeError(err),
          }),
      )
      .finally(() => {
        e.inFlight = false;
      });
  }

  return {
    get(podUID, specName) {
      const t = monotonic();
      // Volumes nobody asked about for a few periods are gone (their pod was torn down).
      for (const [k, e] of entries) if (!e.inFlight && t - e.readAt > 3 * opts.periodMs) entries.delete(k);
      const key = `${podUID}/${specName}`;
      let e = entries.get(key);
      if (!e) {
        e = { startedAt: -Infinity, readAt: t, inFlight: false };
        entries.set(key, e);
      }
      e.readAt = t;
      if (!e.inFlight && t - e.startedAt >= opts.periodMs) measure(e, podUID, specName);
      return e.last;
    },
  };
}
