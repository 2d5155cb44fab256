/**
 * Graceful node shutdown (upstream pkg/kubelet/nodeshutdown): `createShutdownManager` holds a
 * logind delay inhibitor lock and, when logind announces a shutdown, kills pods (critical ones
 * last) before letting it go on. The kubelet reads `shuttingDown()` / `readyConditionError()` for
 * the node's Ready condition and registers `admitHandler`. logind is reached through the `Logind`
 * seam.
 */
export {
  createShutdownManager,
  NODE_SHUTDOWN_MESSAGE,
  NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE,
  NODE_SHUTDOWN_REASON,
  NODE_SHUTTING_DOWN_ERROR,
  type KillPodFunc,
  type ShutdownManager,
  type ShutdownManagerOptions,
  type ShutdownManagerState,
  type ShutdownPodStatus,
} from './shutdown-manager.ts';
export { isCriticalPod } from '../api/pod-resources.ts';
export type {
  InhibitLock,
  InhibitOptions,
  Logind,
  LogindReachability,
  ShutdownSignalHandlers,
  ShutdownWatch,
} from './logind.ts';
export { createSystemdLogind, type SystemdLogindOptions } from './systemd-logind.ts';
