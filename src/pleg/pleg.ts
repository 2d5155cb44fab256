import type { Logger } from '../util/logger.ts';
import type { RuntimeManager } from '../runtime/index.ts';
import type { RuntimeEventSource } from '../runtime/containerd-events/index.ts';
import { PLEG_EVENTED_RELIST_PERIOD_MS, PLEG_RELIST_PERIOD_MS } from '../config/defaults.ts';
import { monotonicNow } from '../util/clock.ts';
import { createRelister } from './relister.ts';
import { createEvented, type EventedStats } from './evented.ts';
import type { Pleg, PlegMetrics } from './types.ts';

export type { Pleg, PlegMetrics, PodLifecycleEvent, PodLifecycleEventType, PodStatusCache } from './types.ts';
export type { EventedStats } from './evented.ts';
export { generateEvents, statusMatches } from './diff.ts';

export interface PlegDeps {
  /** Only listPods and getPodStatus are used. */
  runtime: Pick<RuntimeManager, 'listPods' | 'getPodStatus'>;
  logger: Logger;
  /** The relist period without a live event stream; default 1 s (upstream plegRelistPeriod). */
  periodMs?: number;
  /** Monotonic ms (relist health and timings); default util/clock's. */
  monotonic?: () => number;
  /** Optional; absent, nothing is measured. */
  metrics?: PlegMetrics;
  /**
   * Runtime events (containerd's event service): present, lifecycle events follow the runtime at
   * once and the relist slows to `eventedPeriodMs` while the stream is live. Absent: relist only.
   */
  events?: RuntimeEventSource;
  /** The relist period while events are live; default PLEG_EVENTED_RELIST_PERIOD_MS. */
  eventedPeriodMs?: number;
  /** Optional: what the events did, after each change (tests, benchmarks). */
  onEventedStats?: (s: EventedStats) => void;
}

/**
 * The PLEG: the generic relist (upstream GenericPLEG), and, given an event source, an evented
 * front on the same worker (see evented.ts and docs/architecture.md "Evented PLEG").
 */
export function createPleg(deps: PlegDeps): Pleg {
  const monotonic = deps.monotonic ?? monotonicNow;
  const fallbackPeriodMs = deps.periodMs ?? PLEG_RELIST_PERIOD_MS;
  const relister = createRelister({
    runtime: deps.runtime,
    logger: deps.logger,
    periodMs: fallbackPeriodMs,
    monotonic,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
  });
  const evented = deps.events
    ? createEvented({
        relister,
        source: deps.events,
        logger: deps.logger,
        monotonic,
        livePeriodMs: deps.eventedPeriodMs ?? PLEG_EVENTED_RELIST_PERIOD_MS,
        fallbackPeriodMs,
        ...(deps.onEventedStats ? { onStats: deps.onEventedStats } : {}),
      })
    : undefined;
  return {
    cache: relister.cache,
    start(onEvent) {
      relister.start(onEvent);
      evented?.start();
    },
    async stop() {
      await evented?.stop();
      await relister.stop();
    },
    relist: () => relister.requestRelist(),
    healthy: () => relister.healthy(),
    runtimePods: () => relister.runtimePods(),
  };
}
