/**
 * Container logs: reading CRI log files for `kubectl logs` (`/containerLogs`) and rotating them.
 *
 * - `parseLogOptions(query)` decodes and validates a request's PodLogOptions (400 / 422 as upstream).
 * - `readContainerLogs(req)` streams one log file to stdout/stderr writables, optionally following
 *   it (across rotations) until the container stops or the request's signal aborts.
 * - `createContainerLogManager(deps)` rotates the log files of running containers in the background.
 */
export { parseLogOptions, type LogOptions, type ParseLogOptionsResult } from './log-options.ts';
export {
  readContainerLogs,
  type ReadContainerLogsRequest,
  type ReadContainerLogsResult,
} from './read-logs.ts';
export {
  createContainerLogManager,
  type ContainerLogManager,
  type ContainerLogManagerDeps,
  type RotationPassSummary,
} from './container-log-manager.ts';
