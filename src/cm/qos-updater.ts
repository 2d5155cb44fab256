import type { Pod } from '../api/types.ts';
import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import type { ContainerManager } from './container-manager.ts';

/**
 * Keeps the QoS tiers' cpu shares in line with the active pods (upstream UpdateQOSCgroups, called
 * on pod additions, removals and periodically). Coalesced: calls made while an update waits to
 * start share it, and an update always starts after the latest call, so it sees the latest pods.
 */
export interface QosUpdater {
  /** Schedules an update; the promise resolves when it has run. Never rejects (failures are logged). */
  update(): Promise<void>;
  /** When the last update started (monotonic ms; -Infinity: never), for the periodic pass. */
  lastUpdateAt(): number;
  /** Resolves when no update is queued or running. */
  idle(): Promise<void>;
}

export interface QosUpdaterDeps {
  /** Absent: cgroups per QoS are off and every update is a no-op. */
  cm: ContainerManager | undefined;
  activePods(): Pod[];
  /** Aborted when the kubelet stops (the next start updates the tiers). */
  signal: AbortSignal;
  logger: Logger;
  /** Monotonic ms (util/clock), for `lastUpdateAt`. */
  monotonic(): number;
}

export function createQosUpdater(deps: QosUpdaterDeps): QosUpdater {
  let chain: Promise<void> = Promise.resolve();
  let queued: Promise<void> | undefined;
  let lastUpdate = -Infinity;
  return {
    update() {
      const cm = deps.cm;
      if (!cm) return Promise.resolve();
      queued ??= chain.then(async () => {
        queued = undefined;
        lastUpdate = deps.monotonic();
        try {
          await cm.updateQOSCgroups(deps.activePods(), deps.signal);
        } catch (err) {
          if (deps.signal.aborted) return;
          deps.logger.warn(
            'failed to update the QoS cgroups; retried at the next change or within a minute',
            {
              err: describeError(err),
            },
          );
        }
      });
      chain = queued;
      return queued;
    },
    lastUpdateAt: () => lastUpdate,
    idle: () => chain,
  };
}
