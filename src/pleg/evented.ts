import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import type { RuntimeEvent, RuntimeEventSource } from '../runtime/containerd-events/index.ts';
import type { Relister } from './relister.ts';
import { backoffSteps } from '../util/backoff.ts';

/** IDs an event named that no relist has shown yet, remembered at most this many… */
export const UNRESOLVED_MAX = 256;
/** …and for at most this long (an ID that never shows is not the kubelet's: ctr, another tool). */
export const UNRESOLVED_TTL_MS = 10_000;
/**
 * How long an event naming an unknown ID waits before it costs a relist: the pod worker that just
 * started the container usually caches its pod's status within this time, which teaches the PLEG
 * the ID (then the pod alone is read). Unknown IDs arriving meanwhile share the wait.
 */
export const UNKNOWN_GRACE_MS = 50;
/** A relist looking for unresolved IDs again: first after this long, doubling up to the max. */
export const UNRESOLVED_RETRY_INITIAL_MS = 100;
export const UNRESOLVED_RETRY_MAX_MS = 2_000;

export interface EventedDeps {
  relister: Relister;
  source: RuntimeEventSource;
  logger: Logger;
  monotonic: () => number;
  /** The relist period while the stream is live. */
  livePeriodMs: number;
  /** The relist period while it is not (upstream's 1 s). */
  fallbackPeriodMs: number;
  /** Optional: counts what the events did (tests, metrics). */
  onStats?: (s: EventedStats) => void;
}

export interface EventedStats {
  live: boolean;
  events: number;
  /** Events that named a known container: its pod re-read. */
  podHints: number;
  /** Events that named an unknown ID: a relist asked for. */
  relistHints: number;
  resubscribes: number;
}

export interface Evented {
  start(): void;
  stop(): Promise<void>;
  stats(): EventedStats;
}

/**
 * Drives a relister from containerd events. An event is only a hint naming a container or sandbox
 * ID; the relister answers it by reading the truth from CRI and diffing it against its record:
 *
 * - a known ID: its pod is re-read (coalesced per pod) and the diff emitted at once;
 * - an unknown ID (an event that overtook the CreateContainer / RunPodSandbox that made it, or
 *   the pod worker's read of its pod): after a 50 ms grace, its pod if a worker's read taught the
 *   ID meanwhile, else a relist; the ID is kept (bounded, with a TTL) until a relist shows it,
 *   relisting again with back-off meanwhile, so its change is not lost if CRI did not list it yet;
 * - the stream live (its sync marker seen, after every (re)subscription): a relist, which covers
 *   everything that happened while no stream was live; then the long relist period;
 * - the stream broken: the fallback period (1 s) until it is live again.
 */
export function createEvented(deps: EventedDeps): Evented {
  const { relister, logger } = deps;
  const stats: EventedStats = { live: false, events: 0, podHints: 0, relistHints: 0, resubscribes: 0 };
  const unresolved = new Map<string, number>();
  const retryDelays = backoffSteps({
    initialMs: UNRESOLVED_RETRY_INITIAL_MS,
    maxMs: UNRESOLVED_RETRY_MAX_MS,
  });
  let retryTimer: NodeJS.Timeout | undefined;
  let graceTimer: NodeJS.Timeout | undefined;
  const abort = new AbortController();
  let running: Promise<void> | undefined;
  const report = () => deps.onStats?.({ ...stats });

  function onEvent(e: RuntimeEvent): void {
    stats.events++;
    // An exit must show as exited; containerd may publish it before its CRI plugin applied it.
    if (relister.hintKnown(e.containerId, e.topic === '/tasks/exit' ? 'exited' : undefined)) {
      stats.podHints++;
      unresolved.delete(e.containerId);
    } else if (e.topic !== '/containers/delete') {
      // A container the kubelet never saw is gone: nothing to learn. Anything else may be one it
      // has not listed yet.
      stats.relistHints++;
      unresolved.delete(e.containerId); // re-insert: the newest last, the oldest evicted first
      unresolved.set(e.containerId, deps.monotonic());
      if (unresolved.size > UNRESOLVED_MAX) {
        const oldest = unresolved.keys().next();
        if (!oldest.done) unresolved.delete(oldest.value);
      }
      graceTimer ??= setTimeout(afterGrace, UNKNOWN_GRACE_MS);
    }
    report();
  }

  /** The unknown IDs after their grace: the ones learned meanwhile read as their pods, else a relist. */
  function afterGrace(): void {
    graceTimer = undefined;
    for (const id of unresolved.keys()) {
      if (relister.hintKnown(id)) unresolved.delete(id);
    }
    if (unresolved.size > 0) void relister.requestRelist();
  }

  /** After every relist: forget resolved or expired IDs; relist again later for the others. */
  function afterRelist(): void {
    const now = deps.monotonic();
    for (const [id, since] of unresolved) {
      if (relister.knows(id)) unresolved.delete(id);
      else if (now - since > UNRESOLVED_TTL_MS) {
        unresolved.delete(id);
        logger.debug('PLEG: an event named a container no relist showed; dropped', { containerId: id });
      }
    }
    if (unresolved.size === 0) {
      retryDelays.reset();
      return;
    }
    if (retryTimer || abort.signal.aborted) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void relister.requestRelist();
    }, retryDelays.step());
  }

  return {
    start() {
      relister.onRelisted(afterRelist);
      running = deps.source.run(
        {
          onLive: () => {
            stats.live = true;
            // Everything before this instant is covered by this relist; everything after arrives
            // as an event. Only then may the relist slow down.
            void relister.requestRelist();
            relister.setPeriod(deps.livePeriodMs);
            logger.info('PLEG: containerd events live; relisting every', { periodMs: deps.livePeriodMs });
            report();
          },
          onEvent,
          onBroken: (err, retryInMs) => {
            const wasLive = stats.live;
            stats.live = false;
            stats.resubscribes++;
            relister.setPeriod(deps.fallbackPeriodMs);
            if (wasLive) {
              logger.warn('PLEG: containerd events broken; relisting every', {
                periodMs: deps.fallbackPeriodMs,
                retryInMs,
                err: describeError(err),
              });
            }
            report();
          },
        },
        abort.signal,
      );
    },
    async stop() {
      abort.abort();
      if (retryTimer) clearTimeout(retryTimer);
      if (graceTimer) clearTimeout(graceTimer);
      await running;
    },
    stats: () => ({ ...stats }),
  };
}
