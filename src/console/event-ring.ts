/**
 * The events the kubelet recorded lately, kept in memory for the node console: a fixed-size ring
 * (the oldest is overwritten), filled by taps on the event recorders, standalone and in cluster
 * mode alike. The kubelet keeps no other copy of its events (they go to the log, and to the API
 * server in cluster mode).
 */
import type { ApiEventRecorder, ObjectReference } from '../api/event-recorder.ts';
import type { EventRecorder, EventType } from '../api/events.ts';

/** One recorded event as the console shows it. */
export interface ConsoleEvent {
  /** Increases by one per recorded event, from 1: tells a client which events it has seen. */
  readonly seq: number;
  /** RFC 3339 with milliseconds. */
  readonly at: string;
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
  readonly object: { kind: string; namespace?: string; name: string; uid?: string };
}

export type EventListener = (event: ConsoleEvent) => void;

/** The last `capacity` events; O(1) per record, no allocation beyond the event itself. */
export interface EventRing {
  readonly capacity: number;
  record(type: EventType, reason: string, message: string, object: ConsoleEvent['object']): void;
  /** Oldest first. */
  list(): ConsoleEvent[];
  /** Called synchronously for each new event (a listener must not throw); returns the unsubscribe. */
  subscribe(listener: EventListener): () => void;
}

/** How many events the ring keeps unless told otherwise. */
export const DEFAULT_EVENT_RING_CAPACITY = 200;
/** A longer message is cut (an event message is a line of text; this bounds the ring's memory). */
export const MAX_EVENT_MESSAGE_CHARS = 1024;

export function createEventRing(opts: { capacity?: number; now?: () => number } = {}): EventRing {
  const capacity = opts.capacity ?? DEFAULT_EVENT_RING_CAPACITY;
  if (!Number.isInteger(capacity) || capacity < 1) {
    throw new RangeError(`event ring capacity must be a positive integer, got ${capacity}`);
  }
  const now = opts.now ?? Date.now;
  const slots: (ConsoleEvent | undefined)[] = new Array<ConsoleEvent | undefined>(capacity);
  const listeners = new Set<EventListener>();
  let seq = 0;

  return {
    capacity,
    record(type, reason, message, object) {
      seq++;
      const event: ConsoleEvent = {
        seq,
        at: new Date(now()).toISOString(),
        type,
        reason,
        message:
          message.length > MAX_EVENT_MESSAGE_CHARS
            ? `${message.slice(0, MAX_EVENT_MESSAGE_CHARS)}…`
            : message,
        object: { ...object },
      };
      slots[(seq - 1) % capacity] = event;
      for (const l of listeners) l(event);
    },
    list() {
      const out: ConsoleEvent[] = [];
      const first = Math.max(1, seq - capacity + 1);
      for (let s = first; s <= seq; s++) {
        const e = slots[(s - 1) % capacity];
        if (e) out.push(e);
      }
      return out;
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

function refObject(ref: ObjectReference): ConsoleEvent['object'] {
  return {
    kind: ref.kind,
    name: ref.name,
    ...(ref.namespace !== undefined ? { namespace: ref.namespace } : {}),
    ...(ref.uid !== undefined ? { uid: ref.uid } : {}),
  };
}

/** The recorder as it was, also keeping each pod event in the ring. */
export function tapRecorder(recorder: EventRecorder, ring: EventRing): EventRecorder {
  return {
    event(pod, type, reason, message) {
      ring.record(type, reason, message, {
        kind: 'Pod',
        namespace: pod.metadata.namespace,
        name: pod.metadata.name,
        uid: pod.metadata.uid,
      });
      recorder.event(pod, type, reason, message);
    },
  };
}

/** Cluster mode's recorder as it was, also keeping every event (pods and the node) in the ring. */
export function tapApiRecorder(recorder: ApiEventRecorder, ring: EventRing): ApiEventRecorder {
  const pods = tapRecorder(recorder, ring);
  return {
    event: (pod, type, reason, message) => pods.event(pod, type, reason, message),
    eventFor(ref, type, reason, message) {
      ring.record(type, reason, message, refObject(ref));
      recorder.eventFor(ref, type, reason, message);
    },
    stop: () => recorder.stop(),
  };
}

/** A node-event function (standalone: a log line) that also keeps the event in the ring. */
export function tapNodeEvent(
  nodeEvent: (type: EventType, reason: string, message: string) => void,
  ring: EventRing,
  nodeName: string,
): (type: EventType, reason: string, message: string) => void {
  return (type, reason, message) => {
    ring.record(type, reason, message, { kind: 'Node', name: nodeName });
    nodeEvent(type, reason, message);
  };
}
