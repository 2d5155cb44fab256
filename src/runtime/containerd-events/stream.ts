import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { MethodDefinition, PackageDefinition } from '@grpc/proto-loader';
import type { H2Channel } from '../../util/grpc-h2.ts';
import { protoPackage } from '../../util/grpc-proto.ts';
import { GrpcStatus } from '../../util/grpc-wire.ts';
import { RUNTIME_PROTO_OPTIONS } from '../cri/index.ts';
import { describeError, KubeletError } from '../../util/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { RUNTIME_EVENT_TOPICS, type RuntimeEvent, type RuntimeEventTopic } from './types.ts';

const PROTO_FILES = ['events.proto', 'task.proto', 'marker.proto'].map((f) =>
  path.join(import.meta.dirname, f),
);

/** The topic of the sync marker the client publishes to prove its subscription is live. */
export const MARKER_TOPIC = '/tskubelet/sync';
export const MARKER_TYPE_URL = 'tskubelet.io/tskubelet.events.v1.SyncMarker';
/** Publish failures that say nothing about the runtime accepting markers. */
const TRANSIENT = new Set<number>([
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.CANCELLED,
]);
/** containerd's gRPC header naming the namespace of a request (namespaces.GRPCHeader). */
const NAMESPACE_HEADER = 'containerd-namespace';

/**
 * The parsed event protos. `json: true` makes protobufjs decode a google.protobuf.Any whose type it
 * knows (the task events, the marker) into its fields plus `@type`.
 */
const EVENTS_PROTO = protoPackage(PROTO_FILES, { ...RUNTIME_PROTO_OPTIONS, json: true });

export function eventsPackageDefinition(): PackageDefinition {
  return EVENTS_PROTO.definition();
}

function eventsMethod(name: 'Subscribe' | 'Publish'): MethodDefinition<object, object> {
  return EVENTS_PROTO.method('containerd.services.events.v1.Events', name);
}

/** The envelope as proto-loader decodes it (absent fields null or defaulted). */
export interface DecodedEnvelope {
  timestamp?: { seconds?: number; nanos?: number } | null;
  namespace?: string;
  topic?: string;
  event?: Record<string, unknown> | null;
}

const isTopic = (t: string): t is RuntimeEventTopic =>
  (RUNTIME_EVENT_TOPICS as readonly string[]).includes(t);

/**
 * The RuntimeEvent an envelope carries, or undefined when it is not one the kubelet acts on: another
 * namespace or topic, an undecodable payload, or the exit of an exec process (a probe's `exec`
 * ends with a TaskExit whose `id` is the exec ID, not the container's).
 */
export function toRuntimeEvent(env: DecodedEnvelope, namespace: string): RuntimeEvent | undefined {
  const topic = env.topic ?? '';
  if (env.namespace !== namespace || !isTopic(topic) || !env.event) return undefined;
  const ev = env.event;
  const containerId = topic === '/containers/delete' ? ev.id : ev.containerId;
  if (typeof containerId !== 'string' || containerId === '') return undefined;
  if (topic === '/tasks/exit' && typeof ev.id === 'string' && ev.id !== '' && ev.id !== containerId) {
    return undefined;
  }
  const ts = env.timestamp;
  const at = ts ? (ts.seconds ?? 0) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6) : 0;
  const out: RuntimeEvent = { topic, namespace, at, containerId };
  if (topic === '/tasks/exit' && typeof ev.exitStatus === 'number') out.exitStatus = ev.exitStatus;
  return out;
}

/** containerd filters (`filters` package): each string is an AND of clauses, the list is an OR. */
export function subscribeFilters(namespace: string): string[] {
  return [...RUNTIME_EVENT_TOPICS, MARKER_TOPIC].map((t) => `namespace=="${namespace}",topic=="${t}"`);
}

export interface SubscribeOnceOptions {
  /** The channel to containerd's socket. */
  channel: H2Channel;
  namespace: string;
  logger: Logger;
  /** The subscription must prove itself live (marker seen) within this long, or it is dropped. */
  liveTimeoutMs: number;
  /** How often the marker is published again until it is seen. */
  markerEveryMs: number;
  /** Deadline of each Publish call. */
  publishTimeoutMs: number;
  /** When the runtime refuses the marker's Publish (not a transient error): live after this long. */
  refusedSettleMs: number;
  onLive(): void;
  onEvent(event: RuntimeEvent): void;
}

/** How one subscription ended. `wasLive` tells the caller whether to reset its back-off. */
export interface SubscriptionEnd {
  err: Error;
  wasLive: boolean;
}

/**
 * One Subscribe call, from start to its end: resolves (never rejects) when the stream fails, ends,
 * misses its live deadline, or the signal aborts.
 *
 * containerd sends no response header until the first event, so nothing on the wire says when the
 * server has registered the subscription. The client publishes a marker event with a fresh nonce
 * on its own topic (again every `markerEveryMs`, since a Publish can overtake the Subscribe on the
 * server) and calls `onLive` when the marker comes back on the stream: from then on no event can
 * be missed, and the caller's relist at that moment covers everything before.
 */
export function subscribeOnce(opts: SubscribeOnceOptions, signal: AbortSignal): Promise<SubscriptionEnd> {
  const op = 'containerd events Subscribe';
  const sub = eventsMethod('Subscribe');
  const pub = eventsMethod('Publish');
  const nonce = randomUUID();
  let live = false;
  return new Promise<SubscriptionEnd>((resolve) => {
    let settled = false;
    /** Ends the Subscribe call (RST_STREAM CANCEL) when the subscription ends for any reason. */
    const stream = new AbortController();
    const timers: { marker?: NodeJS.Timeout; live?: NodeJS.Timeout; settle?: NodeJS.Timeout } = {};
    const goLive = (): void => {
      if (live || settled) return;
      live = true;
      clearInterval(timers.marker);
      clearTimeout(timers.live);
      clearTimeout(timers.settle);
      opts.onLive();
    };
    const finish = (err: Error): void => {
      if (settled) return;
      settled = true;
      clearInterval(timers.marker);
      clearTimeout(timers.live);
      clearTimeout(timers.settle);
      signal.removeEventListener('abort', onAbort);
      stream.abort();
      resolve({ err, wasLive: live });
    };
    const onAbort = (): void =>
      finish(new KubeletError('Canceled', op, `canceled: ${describeError(signal.reason)}`));
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });

    let subscribeRequest: Buffer;
    let markerRequest: Buffer;
    try {
      subscribeRequest = sub.requestSerialize({ filters: subscribeFilters(opts.namespace) });
      markerRequest = pub.requestSerialize({
        topic: MARKER_TOPIC,
        event: { '@type': MARKER_TYPE_URL, nonce },
      });
    } catch (err) {
      finish(
        new KubeletError('Internal', op, `the requests do not encode: ${describeError(err)}`, { cause: err }),
      );
      return;
    }

    const publishMarker = async (): Promise<void> => {
      const out = await opts.channel.unary(pub.path, markerRequest, {
        timeoutMs: opts.publishTimeoutMs,
        metadata: { [NAMESPACE_HEADER]: opts.namespace },
      });
      if (out.code === GrpcStatus.OK || settled || live) return;
      if (TRANSIENT.has(out.code)) {
        // Not fatal by itself (containerd starting, the socket not there yet): the live deadline decides.
        opts.logger.debug('containerd events: marker publish failed', {
          grpcCode: out.code,
          err: out.details,
        });
        return;
      }
      // A runtime that refuses the Publish itself: no marker will ever come back. The
      // subscription counts as live after a settle instead (a weaker promise: an event in the
      // first moments of the subscription could be missed until the next relist).
      if (timers.settle) return;
      opts.logger.warn('containerd events: the runtime refused the sync marker; going live after a settle', {
        grpcCode: out.code,
        err: out.details,
        settleMs: opts.refusedSettleMs,
      });
      clearInterval(timers.marker);
      timers.settle = setTimeout(goLive, opts.refusedSettleMs);
    };

    const onMessage = (message: Buffer): void => {
      if (settled) return;
      let env: DecodedEnvelope;
      try {
        env = sub.responseDeserialize(message);
      } catch (err) {
        finish(new KubeletError('Internal', op, `an event envelope does not decode: ${describeError(err)}`));
        return;
      }
      if (env.topic === MARKER_TOPIC) {
        if (env.event?.nonce === nonce) goLive();
        return;
      }
      // Events before the marker are delivered too: the caller's relist on live covers them anyway.
      const ev = toRuntimeEvent(env, opts.namespace);
      if (ev) opts.onEvent(ev);
    };
    void opts.channel
      .serverStream(sub.path, subscribeRequest, {
        signal: stream.signal,
        onMessage,
      })
      .then((out) => {
        if (out.code === GrpcStatus.OK) {
          finish(new KubeletError('Unavailable', op, 'the runtime ended the stream'));
          return;
        }
        const code = out.code === GrpcStatus.UNAVAILABLE ? 'Unavailable' : 'Unknown';
        finish(new KubeletError(code, op, `${out.details} (grpc code ${out.code})`));
      });
    void publishMarker();
    timers.marker = setInterval(() => void publishMarker(), opts.markerEveryMs);
    timers.live = setTimeout(
      () =>
        finish(
          new KubeletError(
            'DeadlineExceeded',
            op,
            `subscription not live after ${opts.liveTimeoutMs} ms (sync marker not seen)`,
          ),
        ),
      opts.liveTimeoutMs,
    );
  });
}
