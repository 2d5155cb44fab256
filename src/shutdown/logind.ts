/**
 * The seam between the shutdown manager and systemd-logind (upstream nodeshutdown/systemd's
 * DBusCon): what the manager needs from logind, nothing about how it is reached. The real
 * implementation is `systemd-logind.ts`; tests use the fake in `testing.ts`.
 */

/** A delay inhibitor lock for `shutdown`: while it is held, logind waits (up to InhibitDelayMaxSec). */
export interface InhibitLock {
  /** Lets the shutdown go on. Idempotent; never rejects (a failure is logged by the implementation). */
  release(): Promise<void>;
  /** False once released, or once the lock was lost (see `InhibitOptions.onLost`). */
  held(): boolean;
}

export interface InhibitOptions {
  /**
   * Called at most once if the lock goes away without `release()` (its holder died). Never called
   * after `release()`.
   */
  onLost?: (err: Error) => void;
  signal?: AbortSignal;
}

/** Where PrepareForShutdown signals go. Handlers must not throw. */
export interface ShutdownSignalHandlers {
  /** logind's `PrepareForShutdown(active)`: true when a shutdown begins, false when it is cancelled. */
  onPrepareForShutdown(active: boolean): void;
  /** The watch died (no more signals will come); called at most once, never after `stop()`. */
  onError(err: Error): void;
}

export interface ShutdownWatch {
  /** Ends the watch; idempotent, never rejects. */
  stop(): Promise<void>;
}

/** Whether logind answered, and if not, why (for a log line an operator can act on). */
export type LogindReachability = { reachable: true } | { reachable: false; reason: string };

/**
 * systemd-logind as the node shutdown manager uses it. Every method is bounded in time; failures
 * reject with a `KubeletError` (`Unavailable` when the system bus or logind cannot be reached).
 */
export interface Logind {
  /** Asks logind for a property; never rejects. */
  reachable(signal?: AbortSignal): Promise<LogindReachability>;
  /** logind's InhibitDelayMaxUSec, in milliseconds (the longest a delay lock holds a shutdown). */
  inhibitDelayMaxMs(signal?: AbortSignal): Promise<number>;
  /** Takes a delay inhibitor lock for `shutdown`, who = kubelet. Resolves once logind granted it. */
  inhibitShutdown(options?: InhibitOptions): Promise<InhibitLock>;
  /**
   * Subscribes to logind's PrepareForShutdown signal. Resolves once the subscription is active,
   * so a signal sent after that is delivered.
   */
  watchShutdown(handlers: ShutdownSignalHandlers, signal?: AbortSignal): Promise<ShutdownWatch>;
  /**
   * Raises InhibitDelayMaxSec to at least `ms` with a drop-in file (upstream writes
   * `/etc/systemd/logind.conf.d/99-kubelet.conf`). Takes effect after `reloadLogindConf()`.
   */
  overrideInhibitDelay(ms: number): Promise<void>;
  /** Makes logind re-read its configuration (SIGHUP through systemd's KillUnit, as upstream). */
  reloadLogindConf(signal?: AbortSignal): Promise<void>;
}
