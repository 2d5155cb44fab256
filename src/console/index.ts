/**
 * The node console (tskubelet's own, no upstream counterpart): a read-only page at `/console/` on the kubelet API (and on a
 * loopback listener with `--console-address`), fed live by server-sent events from
 * `/debug/console/events`, plus the ring of recent events it shows.
 */
export {
  createNodeConsole,
  DEFAULT_CONSOLE_LIMITS,
  type ConsoleLimits,
  type ConsoleRoute,
  type ConsoleSource,
  type NodeConsole,
  type NodeConsoleOptions,
} from './node-console.ts';
export {
  createEventRing,
  tapApiRecorder,
  tapNodeEvent,
  tapRecorder,
  type ConsoleEvent,
  type EventRing,
} from './event-ring.ts';
export { clusterNodeView, standaloneNodeView, type StandaloneNodeInputs } from './node-info.ts';
export { usageFromSummary, type ConsoleNode, type ConsolePod, type NodeUsage } from './model.ts';
