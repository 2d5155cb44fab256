import type { ApiClient } from './client-types.ts';
import type { EventRecorder, EventType } from './events.ts';
import type { KubeletPod } from './types.ts';
import { podFullName } from './types.ts';
import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import { sleep } from '../util/abort.ts';
import { singleFlight } from '../util/single-flight.ts';
import { ApiError, retryAfterMs } from './client-types.ts';
import { createRateLimiter } from './rate-limiter.ts';

export interface ObjectReference {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
}

/** Records events about any object (pods, the node). */
export interface ApiEventRecorder extends EventRecorder {
  eventFor(ref: ObjectReference, type: EventType, reason: string, message: string): void;
  /** Stops posting; pending events are dropped (they are in the log already). */
  stop(): Promise<void>;
}

const QUEUE_CAPACITY = 1000;
/** upstream record maxTriesPerEvent and the sleep between tries (defaultSleepDuration). */
const MAX_TRIES_PER_EVENT = 12;
const RETRY_INTERVAL_MS = 10_000;

/**
 * Whether a failed post is worth another try (upstream recordEvent): the server could not be
 * reached or did not answer, or asked us to come back (429, 5xx — client-go retries those itself).
 * An answer that rejects the event (4xx) never changes on a retry.
 */
function retriable(err: unknown): boolean {
  if (!(err instanceof ApiError)) return true;
  return err.status === 429 || err.status >= 500;
}

/**
 * Posts Events to the API server (upstream record.EventBroadcaster + event sink): every event is
 * also logged, posting is rate limited (eventRecordQPS / eventBurst) and queued in a bounded queue
 * — when full, events are dropped with a log line rather than piling up behind an unreachable API
 * server. Never throws, never blocks the caller.
 */
export function createApiEventRecorder(opts: {
  api: ApiClient;
  nodeName: string;
  logger: Logger;
  qps: number;
  burst: number;
  /** Between tries of one event (default upstream's 10 s; the first wait is a random part of it). */
  retryIntervalMs?: number;
}): ApiEventRecorder {
  const retryIntervalMs = opts.retryIntervalMs ?? RETRY_INTERVAL_MS;
  const limiter = createRateLimiter(opts.qps, opts.burst);
  const queue: { ref: ObjectReference; type: EventType; reason: string; message: string; at: string }[] = [];
  const stop = new AbortController();
  const draining = singleFlight<void>();
  let dropped = 0;

  async function post(e: (typeof queue)[number]): Promise<void> {
    const ns = e.ref.namespace ?? 'default';
    const body = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: `${e.ref.name}.`, namespace: ns },
      involvedObject: e.ref,
      reason: e.reason,
      message: e.message,
      type: e.type,
      source: { component: 'kubelet', host: opts.nodeName },
      firstTimestamp: e.at,
      lastTimestamp: e.at,
      count: 1,
      reportingComponent: 'kubelet',
      reportingInstance: opts.nodeName,
    };
    await opts.api.request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns}/events`,
      body,
      signal: stop.signal,
    });
  }

  /**
   * Posts one event, trying again while the API server cannot be reached (upstream recordToSink:
   * up to 12 tries, 10 s apart, the first wait randomised so nodes do not return in step). The
   * events behind it wait in the bounded queue meanwhile, so an outage costs at most the queue.
   */
  async function postWithRetries(e: (typeof queue)[number]): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        await limiter.acquire(stop.signal);
        await post(e);
        return;
      } catch (err) {
        if (stop.signal.aborted) return;
        const fields = { reason: e.reason, object: e.ref.name, tries, err: describeError(err) };
        if (!retriable(err)) {
          opts.logger.warn('the API server refused an event; not retrying', fields);
          return;
        }
        if (tries >= MAX_TRIES_PER_EVENT) {
          opts.logger.warn('could not post event; retry limit reached, dropping it', fields);
          return;
        }
        opts.logger.debug('could not post event; retrying', fields);
        const wait = tries === 1 ? retryIntervalMs * Math.random() : retryIntervalMs;
        try {
          await sleep(Math.max(wait, retryAfterMs(err)), stop.signal);
        } catch {
          return; // stopped while waiting: the only way sleep rejects here
        }
      }
    }
  }

  async function drain(): Promise<void> {
    while (queue.length > 0 && !stop.signal.aborted) await postWithRetries(queue.shift()!);
  }

  function enqueue(
    ref: ObjectReference,
    type: EventType,
    reason: string,
    message: string,
    identity: Record<string, unknown> = { object: `${ref.kind}/${ref.name}` },
  ): void {
    const fields = { ...identity, event: reason, type };
    if (type === 'Warning') opts.logger.warn(message, fields);
    else opts.logger.info(message, fields);
    if (stop.signal.aborted) return;
    if (queue.length >= QUEUE_CAPACITY) {
      dropped++;
      if (dropped % 100 === 1) opts.logger.warn('event queue full; dropping events', { dropped });
      return;
    }
    queue.push({ ref, type, reason, message, at: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') });
    void draining.run(drain);
  }

  return {
    event(pod: KubeletPod, type, reason, message) {
      enqueue(
        {
          apiVersion: 'v1',
          kind: 'Pod',
          namespace: pod.metadata.namespace,
          name: pod.metadata.name,
          uid: pod.metadata.uid,
        },
        type,
        reason,
        message,
        { pod: podFullName(pod), podUID: pod.metadata.uid },
      );
    },
    eventFor: (ref, type, reason, message) => enqueue(ref, type, reason, message),
    async stop() {
      stop.abort();
      await draining.idle();
    },
  };
}
