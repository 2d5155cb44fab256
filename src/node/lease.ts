/**
 * The node Lease heartbeat (upstream component-helpers/apimachinery/lease controller, as the
 * kubelet runs it): every renew interval (+4 % jitter), PUT the lease last written with a new
 * renewTime; when that fails, GET (creating it if missing, with back-off 200 ms doubling to 7 s)
 * and update from what the server has. Up to 5 immediate retries per round; a Conflict re-reads.
 */
import type { ApiClient } from '../api/client-types.ts';
import { isConflict } from '../api/client-types.ts';
import {
  NODE_LEASE_MAX_BACKOFF_MS,
  NODE_LEASE_MAX_UPDATE_RETRIES,
  NODE_LEASE_RENEW_JITTER,
} from '../config/defaults.ts';
import { describeError, isNotFound, KubeletError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { formatMicroTime } from './format.ts';
import type { Lease } from './types.ts';
import { backoffSteps } from '../util/backoff.ts';

export interface LeaseControllerDeps {
  /** The heartbeat client (its own connection and rate limit, so pod traffic never delays it). */
  api: ApiClient;
  logger: Logger;
  holderIdentity: string;
  namespace: string;
  leaseDurationSeconds: number;
  renewIntervalMs: number;
  /** Wall ms, for renewTime. */
  now: () => number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  random: () => number;
  /**
   * Adjusts every lease about to be written (upstream newLeasePostProcessFunc: the owner reference
   * to the Node). Throwing blocks a create — it is retried next round — but never an update.
   */
  postProcess?: (lease: Lease, signal: AbortSignal) => Promise<void>;
  /** Called when an update failed more than once in a round (upstream closes idle connections). */
  onRepeatedHeartbeatFailure?: () => void;
}

export interface LeaseController {
  /** Renews until `signal` aborts; never rejects. */
  run(signal: AbortSignal): Promise<void>;
  /** One renewal round (exported for tests); rejects only when `signal` aborts. */
  sync(signal: AbortSignal): Promise<void>;
  /** The lease as last written or read. */
  latest(): Lease | undefined;
  /**
   * Starts the next round now instead of at the end of the renew interval (at the end of the round
   * in progress, if one is): the Node was just registered, so a lease that could not be created
   * for want of its owner can be created at once.
   */
  wake(): void;
}

/** `nowMs`, or 1 ms after `previous` (a MicroTime) when the wall clock is not past it. */
function renewTimeAfter(previous: string | undefined, nowMs: number): number {
  const prev = previous === undefined ? NaN : Date.parse(previous);
  return Number.isNaN(prev) || nowMs > prev ? nowMs : Math.floor(prev) + 1;
}

export function createLeaseController(deps: LeaseControllerDeps): LeaseController {
  const log = deps.logger;
  const base = `/apis/coordination.k8s.io/v1/namespaces/${deps.namespace}/leases`;
  const path = `${base}/${deps.holderIdentity}`;
  let latestLease: Lease | undefined;
  /** Aborts the wait between rounds (wake); undefined while a round runs. */
  let waiting: AbortController | undefined;
  let wokenDuringRound = false;

  /** Waits `ms` or until woken; rejects only when `signal` aborts. */
  async function pause(ms: number, signal: AbortSignal): Promise<void> {
    if (wokenDuringRound) {
      wokenDuringRound = false;
      return;
    }
    const w = new AbortController();
    waiting = w;
    try {
      await deps.sleep(ms, AbortSignal.any([signal, w.signal]));
    } catch (err) {
      if (signal.aborted || !w.signal.aborted) throw err;
      log.debug('node lease round woken early', { lease: path });
    } finally {
      waiting = undefined;
    }
  }

  /**
   * A fresh lease (base undefined) or a copy of base, with renewTime now (upstream newLease) — but
   * always later than the renewTime it replaces. The node lifecycle controller counts a renewal only
   * when renewTime moves forward (RenewTime.Before), so after the wall clock stepped back a lease
   * renewed at "now" would look unrenewed and the node would go NotReady for as long as the step
   * (upstream writes the wall time as is); here it is renewed 1 ms after the last renewTime until
   * the wall clock has caught up.
   */
  async function newLease(
    from: Lease | undefined,
    signal: AbortSignal,
  ): Promise<{ lease: Lease; err?: unknown }> {
    const lease: Lease = from
      ? structuredClone(from)
      : {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: deps.holderIdentity, namespace: deps.namespace },
          spec: { holderIdentity: deps.holderIdentity, leaseDurationSeconds: deps.leaseDurationSeconds },
        };
    const spec = (lease.spec ??= {});
    spec.renewTime = formatMicroTime(renewTimeAfter(spec.renewTime, deps.now()));
    if (deps.postProcess) {
      try {
        await deps.postProcess(lease, signal);
      } catch (err) {
        if (signal.aborted) throw err;
        return { lease, err };
      }
    }
    return { lease };
  }

  /** GET, or create when missing (upstream ensureLease). */
  async function ensureLease(signal: AbortSignal): Promise<{ lease: Lease | undefined; created: boolean }> {
    try {
      return { lease: await deps.api.request<Lease>({ method: 'GET', path, signal }), created: false };
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const { lease, err } = await newLease(undefined, signal);
    if (err !== undefined) {
      // Without the owner reference the lease would outlive its Node; try again next round.
      log.info('not creating the node lease yet', { lease: path, reason: describeError(err) });
      return { lease: undefined, created: false };
    }
    const created = await deps.api.request<Lease>({ method: 'POST', path: base, body: lease, signal });
    log.info('created node lease', { lease: path });
    return { lease: created, created: true };
  }

  /** upstream backoffEnsureLease: retries until it works (or the signal aborts). */
  async function backoffEnsureLease(
    signal: AbortSignal,
  ): Promise<{ lease: Lease | undefined; created: boolean }> {
    // Upstream starts at 100 ms and doubles before the first wait: 200 ms, 400 ms, … 7 s.
    const delays = backoffSteps({ initialMs: 200, maxMs: NODE_LEASE_MAX_BACKOFF_MS });
    for (;;) {
      try {
        return await ensureLease(signal);
      } catch (err) {
        if (signal.aborted) throw err;
        const delay = delays.step();
        log.error('failed to ensure the node lease exists; will retry', {
          lease: path,
          retryInMs: delay,
          err: describeError(err),
        });
        await deps.sleep(delay, signal);
      }
    }
  }

  /** upstream retryUpdateLease. */
  async function retryUpdateLease(from: Lease, signal: AbortSignal): Promise<void> {
    let current: Lease | undefined = from;
    for (let i = 0; i < NODE_LEASE_MAX_UPDATE_RETRIES; i++) {
      if (current === undefined) break;
      const { lease } = await newLease(current, signal);
      try {
        latestLease = await deps.api.request<Lease>({ method: 'PUT', path, body: lease, signal });
        return;
      } catch (err) {
        if (signal.aborted) throw err;
        log.error('failed to update the node lease', {
          lease: path,
          attempt: i + 1,
          err: describeError(err),
        });
        if (isConflict(err)) {
          // Someone else wrote it: continue from the server's copy.
          current = (await backoffEnsureLease(signal)).lease;
          continue;
        }
        if (i > 0) deps.onRepeatedHeartbeatFailure?.();
      }
    }
    throw new KubeletError(
      'Unavailable',
      'renew node lease',
      `failed ${NODE_LEASE_MAX_UPDATE_RETRIES} attempts to update lease`,
    );
  }

  async function sync(signal: AbortSignal): Promise<void> {
    if (latestLease !== undefined) {
      // Optimistically update from our last write: no GET while nobody else touches the lease.
      try {
        await retryUpdateLease(latestLease, signal);
        return;
      } catch (err) {
        if (signal.aborted) throw err;
        log.info('failed to update the node lease from the last written copy; reading it again', {
          lease: path,
          err: describeError(err),
        });
      }
    }
    const { lease, created } = await backoffEnsureLease(signal);
    latestLease = lease;
    if (!created && lease !== undefined) {
      try {
        await retryUpdateLease(lease, signal);
      } catch (err) {
        if (signal.aborted) throw err;
        log.error('failed to renew the node lease; will retry', {
          lease: path,
          retryInMs: deps.renewIntervalMs,
          err: describeError(err),
        });
      }
    }
  }

  return {
    async run(signal) {
      while (!signal.aborted) {
        try {
          await sync(signal);
          // upstream wait.JitterUntil(sliding): the period starts after the round.
          const wait = deps.renewIntervalMs * (1 + deps.random() * NODE_LEASE_RENEW_JITTER);
          await pause(wait, signal);
        } catch (err) {
          if (signal.aborted) return;
          // Not expected (sync only rejects on abort): log and keep the heartbeat alive.
          log.error('node lease round failed', { lease: path, err: describeError(err) });
          try {
            await pause(deps.renewIntervalMs, signal);
          } catch {
            return; // aborted while waiting: stopping
          }
        }
      }
    },
    sync,
    latest: () => latestLease,
    wake() {
      if (waiting) waiting.abort(new KubeletError('Canceled', 'node lease wait', 'woken'));
      else wokenDuringRound = true;
    },
  };
}
