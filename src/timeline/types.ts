/**
 * The startup timeline's vocabulary (tskubelet.io/v1alpha1 PodTimeline): the steps the kubelet records per pod and
 * the JSON it serves at `/debug/pods/{namespace}/{name}/timeline`. The names and fields are a
 * shared contract (the CLI, `why`, the console and bench/ read them): change them only together.
 */

/** The steps, in the order they usually happen. */
export const TIMELINE_STEPS = [
  'seen',
  'admitted',
  'rejected',
  'volume-ready',
  'sandbox-requested',
  'sandbox-created',
  'network-ready',
  'image-pull-started',
  'image-pull-done',
  'container-created',
  'container-started',
  'post-start-done',
  'startup-probe-passed',
  'ready',
  'kill-requested',
  'pre-stop-done',
  'container-stopped',
  'sandbox-removed',
  'failed',
] as const;

export type TimelineStep = (typeof TIMELINE_STEPS)[number];

/** What a step may carry besides its name and time; every field optional. */
export interface StepFields {
  /** `seen`: the source (file, http, api). */
  source?: string;
  container?: string;
  /** `volume-ready`, a volume's `failed`. */
  volume?: string;
  image?: string;
  /** `image-pull-done`: the image's size as the runtime reports it. */
  bytes?: number;
  /** `image-pull-done`: the image was already present (no pull). */
  cached?: boolean;
  /** `network-ready`: the sandbox's IP ('' for a host-network pod has no field). */
  podIP?: string;
  /** `rejected`, `failed`: what went wrong. */
  error?: string;
  /** `failed`: the step that did not happen (tskubelet addition to the contract's fields). */
  failedStep?: TimelineStep;
}

/** One recorded step as served. */
export interface TimelineStepView extends StepFields {
  step: TimelineStep;
  /** Wall time (RFC 3339 with ms). */
  at: string;
  /** Monotonic ms since the pod's first recorded step (0.1 ms resolution). */
  offsetMs: number;
}

export interface TimelineAttempt {
  /** 1 for the first sandbox (and everything before it); +1 for every later sandbox. */
  attempt: number;
  steps: TimelineStepView[];
}

/** The body of `GET /debug/pods/{namespace}/{name}/timeline`. */
export interface PodTimeline {
  apiVersion: 'tskubelet.io/v1alpha1';
  kind: 'PodTimeline';
  namespace: string;
  name: string;
  uid: string;
  attempts: TimelineAttempt[];
  /** Steps no longer held (a full ring overwrote them, or their attempt was dropped). */
  droppedSteps: number;
}

/**
 * Records a pod's steps. Every method is synchronous, does no I/O, starts no timer and never
 * throws; `record` allocates only the entry it keeps. Steps for a UID that was never `begin`-ed
 * (orphans, pods already forgotten) are ignored, so nothing outlives its pod.
 */
export interface TimelineRecorder {
  /** A source delivered the pod (step `seen`); creates its timeline (a known UID: one more `seen`). */
  begin(podUID: string, namespace: string, name: string, source: string): void;
  /** Appends a step to the pod's current attempt (`sandbox-requested` may open a new attempt). */
  record(podUID: string, step: TimelineStep, fields?: StepFields): void;
  /**
   * Like `record`, unless the current attempt already holds this step for the same container and
   * volume (first Ready, each volume once): for callers that see the same fact on every sync.
   */
  recordFirst(podUID: string, step: TimelineStep, fields?: StepFields): void;
  /** The pod is gone: its timeline moves to the small set of recently forgotten ones. */
  forget(podUID: string): void;
  /** The pod's timeline, live or recently forgotten. */
  get(podUID: string): PodTimeline | undefined;
  /** The newest timeline (live first, then recently forgotten) of a pod with that name. */
  findByName(namespace: string, name: string): PodTimeline | undefined;
}
