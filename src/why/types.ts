/**
 * `why`: the tskubelet.io/v1alpha1 contract served at `/debug/pods/{namespace}/{name}/why`, and the snapshot
 * of the kubelet's own state for one pod that the pure `explainPod` turns into it.
 */
import type { KubeletPod, PodStatus } from '../api/types.ts';
import type { ProbeState } from '../prober/index.ts';

/** A flat evidence object: strings, numbers, booleans or string arrays. */
export type WhyEvidence = Record<string, string | number | boolean | string[]>;

export interface WhyFinding {
  /** Kubernetes' own reason where one exists (ErrImagePull, CrashLoopBackOff, …), else ours. */
  reason: string;
  container?: string;
  /** Plain language, with the numbers. */
  message: string;
  evidence: WhyEvidence;
  /** RFC 3339: when the state this finding describes began, when known. */
  since?: string;
}

export interface PodWhy {
  apiVersion: 'tskubelet.io/v1alpha1';
  kind: 'PodWhy';
  namespace: string;
  name: string;
  uid: string;
  phase: string;
  ready: boolean;
  /** The most blocking finding in one sentence, or that nothing holds the pod. */
  summary: string;
  /** Most blocking first. Empty when the pod is fine. */
  findings: WhyFinding[];
}

/** One probe worker of the pod, as the prober describes it. */
export type WhyProbe = ProbeState;

/** One image of the pod being pulled or in pull back-off. Times are wall ms. */
export interface WhyImagePull {
  image: string;
  container: string;
  pullingSince?: number;
  /** Bytes pulled so far, when the runtime reports them (CRI does not today). */
  bytes?: number;
  backOffLeftMs?: number;
  backOffMs?: number;
  lastError?: string;
}

/**
 * Everything the kubelet knows about one pod that `why` needs, read at one instant. All times are
 * wall ms (the gatherer converts the kubelet's monotonic stamps), so `explainPod` is a pure function.
 */
export interface WhySnapshot {
  /** Wall ms: the instant the snapshot was read. */
  now: number;
  pod: KubeletPod;
  /** The kubelet's latest computed status; undefined before the first sync. */
  status: PodStatus | undefined;
  /** A sync of the pod has finished at least once. */
  synced: boolean;
  /** The pod worker's phase; undefined when no worker has the pod yet. */
  worker: 'syncing' | 'terminating' | 'terminated' | undefined;
  /** Refused at admission: the handler's reason (predicate) and message. */
  admission?: { reason: string; message: string };
  /** Stopped by the kubelet itself (eviction, node shutdown): the status it forces. */
  stoppedBy?: { reason: string; message: string };
  /** Where the last sync stopped. */
  syncError?: { step: 'volumes' | 'sandbox' | 'sync'; message: string; at: number };
  /** Why containers wait after the last sync (upstream ReasonCache), by container name. */
  waiting: Record<string, { reason: string; message: string }>;
  /** Crash-loop back-off by container name: the current delay and when the next try may start. */
  crashLoop: Record<string, { delayMs: number; nextRetryAt?: number }>;
  imagePulls: WhyImagePull[];
  probes: WhyProbe[];
  /** The last lines the newest instance of a container logged (bounded), by container name. */
  logTails: Record<string, string[]>;
  /** The pod's kill: when it started, the grace period it has, the preStop hooks running now. */
  termination?: {
    startedAt?: number;
    gracePeriodSeconds: number;
    preStopRunning: { container: string; since: number }[];
  };
}
