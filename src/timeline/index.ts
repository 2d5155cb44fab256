/**
 * The startup timeline of every pod (tskubelet's own, no upstream counterpart): what the kubelet did for a pod and when,
 * per attempt, served at `/debug/pods/{namespace}/{name}/timeline` and summarised in
 * tskubelet_pod_startup_step_duration_seconds. Components get a `TimelineRecorder` through their
 * dependencies; absent, `noopTimeline`.
 */
export {
  createTimelineRecorder,
  noopTimeline,
  ATTEMPTS_PER_POD,
  MAX_LIVE_PODS,
  RECENTLY_FORGOTTEN,
  STEPS_PER_ATTEMPT,
  type TimelineRecorderOptions,
} from './recorder.ts';
export { registerStepDurationHistogram, STEP_DURATION_BUCKETS, STEP_DURATION_METRIC } from './metrics.ts';
export {
  TIMELINE_STEPS,
  type PodTimeline,
  type StepFields,
  type TimelineAttempt,
  type TimelineRecorder,
  type TimelineStep,
  type TimelineStepView,
} from './types.ts';
