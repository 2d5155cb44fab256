import { describeError } from '../../util/errors.ts';
import { nullLogger, type Logger } from '../../util/logger.ts';
import { sleep } from '../../util/abort.ts';
import { grpcTarget } from '../cri/index.ts';
import { createUnixH2Channel, unixSocketPath } from '../../util/grpc-h2.ts';
import { subscribeOnce } from './stream.ts';
import type { RuntimeEventHandlers, RuntimeEventSource } from './types.ts';
import { backoffSteps } from '../../util/backoff.ts';

export type { RuntimeEvent, RuntimeEventHandlers, RuntimeEventSource, RuntimeEventTopic } from './types.ts';
export { RUNTIME_EVENT_TOPICS } from './types.ts';

/** Re-subscribe back-off: first retry after this long, doubling up to the max. */
export const EVENTS_RETRY_INITIAL_MS = 500;
export const EVENTS_RETRY_MAX_MS = 10_000;
/** An event envelope larger than this ends the subscription (containerd's events are < 1 KiB). */
const MAX_ENVELOPE_BYTES = 4 * 1024 * 1024;
/** A subscription must prove itself live (its sync marker seen) within this long. */
export const EVENTS_LIVE_TIMEOUT_MS = 10_000;

export interface ContainerdEventsOptions {
  /** The containerd socket (the CRI endpoint: containerd serves both on it). */
  endpoint: string;
  /** containerd namespace of the kubelet's containers; default `k8s.io` (the CRI plugin's). */
  namespace?: string;
  logger?: Logger;
  retryInitialMs?: number;
  retryMaxMs?: number;
  liveTimeoutMs?: number;
  /** How often the sync marker is re-published until seen; default 250 ms. */
  markerEveryMs?: number;
  /** A runtime that refuses the marker: the subscription counts as live after this long; default 1 s. */
  refusedSettleMs?: number;
}

export interface ContainerdEvents extends RuntimeEventSource {
  /** Closes the connection; a running `run` ends its subscription and keeps retrying until aborted. */
  close(): void;
}

/**
 * A client of containerd's event service (`containerd.services.events.v1.Events`) on the runtime's
 * socket, over its own gRPC channel. Creating it connects nothing; `run` does.
 */
export function createContainerdEvents(opts: ContainerdEventsOptions): ContainerdEvents {
  const namespace = opts.namespace ?? 'k8s.io';
  const logger = (opts.logger ?? nullLogger).child({ component: 'containerd-events' });
  const initial = opts.retryInitialMs ?? EVENTS_RETRY_INITIAL_MS;
  const max = opts.retryMaxMs ?? EVENTS_RETRY_MAX_MS;
  // Its own session on the socket: the CRI client's calls never queue behind the event stream.
  const channel = createUnixH2Channel(unixSocketPath(grpcTarget(opts.endpoint)), {
    maxReceiveBytes: MAX_ENVELOPE_BYTES,
  });
  /** Aborted by close(): ends the subscription in flight (closing the session alone would wait for it). */
  const closing = new AbortController();
  return {
    close() {
      closing.abort(new Error('the events client is closed'));
      channel.close();
    },
    async run(handlers: RuntimeEventHandlers, signal: AbortSignal): Promise<void> {
      const subscription = AbortSignal.any([signal, closing.signal]);
      const delays = backoffSteps({ initialMs: initial, maxMs: max });
      while (!signal.aborted) {
        const end = await subscribeOnce(
          {
            channel,
            namespace,
            logger,
            liveTimeoutMs: opts.liveTimeoutMs ?? EVENTS_LIVE_TIMEOUT_MS,
            markerEveryMs: opts.markerEveryMs ?? 250,
            publishTimeoutMs: 5_000,
            refusedSettleMs: opts.refusedSettleMs ?? 1_000,
            onLive: () => {
              logger.info('containerd event stream live', { namespace });
              handlers.onLive();
            },
            onEvent: (e) => handlers.onEvent(e),
          },
          subscription,
        );
        if (signal.aborted) return;
        // A stream that was live ran fine until now: start the back-off over.
        if (end.wasLive) delays.reset();
        const delay = delays.step();
        logger.warn('containerd event stream broken; re-subscribing', {
          err: describeError(end.err),
          retryInMs: delay,
        });
        handlers.onBroken(end.err, delay);
        await sleep(delay, signal).catch(() => undefined); // aborted: the loop ends
      }
    },
  };
}
