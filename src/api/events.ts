import type { KubeletPod } from './types.ts';
import { podFullName } from './types.ts';
import type { Logger } from '../util/logger.ts';

export type EventType = 'Normal' | 'Warning';

/** Records an event on the kubelet's Node object (upstream's nodeRef recorder). */
export type NodeEventSink = (type: EventType, reason: string, message: string) => void;

/**
 * Records Kubernetes Events about pods (upstream record.EventRecorder). Standalone, events go to the
 * log; in cluster mode a recorder that also posts them to the API server takes its place.
 * Never throws and never blocks the caller.
 */
export interface EventRecorder {
  event(pod: KubeletPod, type: EventType, reason: string, message: string): void;
}

export function createLoggingRecorder(logger: Logger): EventRecorder {
  return {
    event(pod, type, reason, message) {
      const fields = { pod: podFullName(pod), podUID: pod.metadata.uid, event: reason, type };
      if (type === 'Warning') logger.warn(message, fields);
      else logger.info(message, fields);
    },
  };
}

/** Keeps events in memory; for tests. */
export function createMemoryRecorder(): EventRecorder & {
  events: { pod: string; type: EventType; reason: string; message: string }[];
} {
  const events: { pod: string; type: EventType; reason: string; message: string }[] = [];
  return {
    events,
    event(pod, type, reason, message) {
      events.push({ pod: podFullName(pod), type, reason, message });
    },
  };
}
