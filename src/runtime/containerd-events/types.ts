/**
 * What the containerd event client hands its user: a few task and container events, reduced to the
 * ID they are about. An event is a hint that something changed, never the state itself.
 */

export type RuntimeEventTopic = '/tasks/start' | '/tasks/exit' | '/tasks/oom' | '/containers/delete';

/** The topics subscribed to: the ones that change what CRI reports for a container or sandbox. */
export const RUNTIME_EVENT_TOPICS: readonly RuntimeEventTopic[] = [
  '/tasks/start',
  '/tasks/exit',
  '/tasks/oom',
  '/containers/delete',
];

export interface RuntimeEvent {
  topic: RuntimeEventTopic;
  namespace: string;
  /** Unix ms containerd stamped on the envelope (0 when absent). */
  at: number;
  /** The containerd container the event is about: a CRI container ID or a pod sandbox ID. */
  containerId: string;
  /** `/tasks/exit` only: the exit status of the task's init process. */
  exitStatus?: number;
}

export interface RuntimeEventHandlers {
  /**
   * The subscription is live: every event published from now on is delivered. Called once per
   * (re)subscription, before any of that subscription's events.
   */
  onLive(): void;
  onEvent(event: RuntimeEvent): void;
  /** The stream failed or ended (after being live or not); it is re-subscribed after `retryInMs`. */
  onBroken(err: Error, retryInMs: number): void;
}

/**
 * A source of runtime events that keeps itself subscribed: `run` subscribes, re-subscribes with
 * back-off after every failure, and resolves only when the signal aborts. It never throws.
 */
export interface RuntimeEventSource {
  run(handlers: RuntimeEventHandlers, signal: AbortSignal): Promise<void>;
}
