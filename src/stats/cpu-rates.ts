/**
 * usageNanoCores from cumulative CPU samples (upstream criStatsProvider's cpuUsageCache): the rate
 * between the previous sample of the same key and this one. Keys are container IDs, `pod:<uid>`,
 * `node`, `sys:<name>`. A key not sampled by a computation is forgotten at its sweep, so memory
 * follows what is running.
 */
export interface CpuRates {
  /**
   * The rate for a new cumulative sample (ns of CPU at `timeNs`). undefined for the first sample
   * of a key, or after its counter went backwards (a restarted container reusing the key); the
   * same sample again gives the rate computed when it was new.
   */
  rate(key: string, timeNs: number, usageNs: number, seenAt: number): number | undefined;
  /** Forgets keys whose last sample was taken before `before` (ms clock of `seenAt`). */
  sweep(before: number): void;
  size(): number;
}

interface Entry {
  timeNs: number;
  usageNs: number;
  rate: number | undefined;
  seenAt: number;
}

export function createCpuRates(): CpuRates {
  const entries = new Map<string, Entry>();
  return {
    rate(key, timeNs, usageNs, seenAt) {
      const prev = entries.get(key);
      if (!prev || usageNs < prev.usageNs) {
        entries.set(key, { timeNs, usageNs, rate: undefined, seenAt });
        return undefined;
      }
      prev.seenAt = seenAt;
      if (timeNs === prev.timeNs) return prev.rate;
      if (timeNs < prev.timeNs) {
        // Stamped before the last sample: the wall clock stepped back. A new baseline, or the rate
        // would stay frozen until the clock caught up.
        entries.set(key, { timeNs, usageNs, rate: prev.rate, seenAt });
        return prev.rate;
      }
      const rate = Math.round(((usageNs - prev.usageNs) / (timeNs - prev.timeNs)) * 1e9);
      entries.set(key, { timeNs, usageNs, rate, seenAt });
      return rate;
    },
    sweep(before) {
      for (const [k, e] of entries) if (e.seenAt < before) entries.delete(k);
    },
    size: () => entries.size,
  };
}
