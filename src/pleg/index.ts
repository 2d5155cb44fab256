export {
  createPleg,
  generateEvents,
  statusMatches,
  type EventedStats,
  type Pleg,
  type PlegDeps,
  type PlegMetrics,
  type PodLifecycleEvent,
  type PodLifecycleEventType,
  type PodStatusCache,
} from './pleg.ts';
