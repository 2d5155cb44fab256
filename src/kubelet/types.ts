import type { KubeletPod, PodStatus } from '../api/types.ts';
import type { EventRecorder, NodeEventSink } from '../api/events.ts';
import type { ApiClient } from '../api/client-types.ts';
import type { RuntimeClassLookup } from '../api/runtime-class-informer.ts';
import type { Logger } from '../util/logger.ts';
import type { ImageService, RuntimeService } from '../runtime/cri/index.ts';
import type { RuntimeEventSource } from '../runtime/containerd-events/index.ts';
import type { RuntimePodSummary, ServiceLister } from '../runtime/index.ts';
import type { PodSource } from '../podsource/index.ts';
import type { PodMeasuredVolume, VolumeObjectSource } from '../volume/index.ts';
import type { ContainerManager } from '../cm/index.ts';
import type { ImageFsUsageFn } from '../gc/index.ts';
import type { KubeletMetrics } from '../metrics/index.ts';
import type { NodeView } from './admission.ts';
import type { MirrorPods } from './mirror-pods.ts';
import type { KubeletManagers } from './managers.ts';
import type { RunOnceResult } from './run-once.ts';
import type { EvictionDeps, PressureState } from '../eviction/index.ts';
import type { Logind } from '../shutdown/index.ts';
import type { OpenKmsg } from '../oom/index.ts';
import type { PodWhy } from '../why/index.ts';
import type { PodTimeline, TimelineRecorder } from '../timeline/index.ts';

export type { NodeEventSink } from '../api/events.ts';

/** What the eviction manager reads: the stats summary and whether the image filesystem is separate. */
export type EvictionStats = Pick<EvictionDeps, 'summary' | 'hasDedicatedImageFs'>;

/** Everything from outside the kubelet, in one object that tests replace (upstream Dependencies). */
export interface KubeletDependencies {
  /** The node's primary IP (config nodeIP's first, else detected); host-network pods' IP, hostIP. */
  nodeIP: string | undefined;
  runtimeService: RuntimeService;
  /** containerd's event stream, for the evented PLEG (used when `eventedPleg` is on). */
  runtimeEvents?: RuntimeEventSource;
  imageService: ImageService;
  /** Pod sources; their names are the sources the kubelet waits for before cleaning up orphans. */
  sources: PodSource[];
  recorder: EventRecorder;
  logger: Logger;
  /** The node as admission sees it (the Node object in cluster mode, the machine standalone). */
  node: () => NodeView;
  /** Present in cluster mode: pod statuses, mirror pods and deletions go to the API server. */
  cluster?: {
    api: ApiClient;
    mirrorPods: MirrorPods;
    volumeObjects?: VolumeObjectSource;
    /** The Service informer, for service-link env vars (pods from the API wait for its first list). */
    services?: ServiceLister;
    /** The RuntimeClass informer: a pod's runtimeClassName → the CRI runtime handler. */
    runtimeClasses?: RuntimeClassLookup;
  };
  /** Pod cgroups per QoS class (src/cm); absent or disabled: the runtime's default cgroup parent. */
  containerManager?: ContainerManager;
  /** Prometheus metrics (src/metrics); absent: nothing is measured. */
  metrics?: KubeletMetrics;
  /** Managers to use instead of the default ones (tests: fakes; see managers.ts). */
  managers?: Partial<KubeletManagers>;
  /** Records an event on the Node (the API's recorder in cluster mode; standalone, logged). */
  nodeEvent: NodeEventSink;
  /** systemd-logind for graceful node shutdown (tests: a fake); absent: the real one (systemd tools). */
  logind?: Logind;
  /** Called when the node starts or stops shutting down (the node status is synced at once). */
  onShuttingDownChange?: (shuttingDown: boolean) => void;
  /** The kernel log for the system OOM watcher (tests: a fake); absent: `/dev/kmsg`. */
  openKmsg?: OpenKmsg;
  /** Resource usage for the eviction manager (src/stats); absent: no eviction manager. */
  stats?: EvictionStats;
  /** Each pod's startup timeline (src/timeline); absent: nothing is recorded. */
  timeline?: TimelineRecorder;
  /** Measures the image filesystem for image GC (tests: a fake); absent: statfs (src/gc/image-fs.ts). */
  imageFsUsage?: ImageFsUsageFn;
  /** Wall ms since the epoch (timestamps for the API); default Date.now. May step. */
  now?: () => number;
  /** Monotonic ms (intervals, deadlines, the order of the kubelet's own events); default util/clock's. */
  monotonic?: () => number;
  random?: () => number;
}

export interface PodView {
  pod: KubeletPod;
  status: PodStatus | undefined;
}

export interface Kubelet {
  /** Starts sources, PLEG and the sync loop; resolves when `stop` has finished. */
  run(): Promise<void>;
  stop(): Promise<void>;
  /**
   * Run-once mode (upstream RunOnce): the sources once, admission, syncPod per pod until running
   * or failed; pods are left running. Instead of `run`, never with it.
   */
  runOnce(opts: { sourceTimeoutMs: number; signal: AbortSignal }): Promise<RunOnceResult[]>;
  /** The pods the kubelet manages, with their latest computed status (for /pods). */
  pods(): PodView[];
  /** The pods as the runtime holds them (upstream GetRunningPods, for /runningpods). */
  runningPods(signal?: AbortSignal): Promise<RuntimePodSummary[]>;
  /** The startup timeline of the pod of that name (a desired pod's, else a recently gone one's). */
  podTimeline(namespace: string, name: string): PodTimeline | undefined;
  healthz(): { ok: boolean; message: string };
  /**
   * Node readiness as upstream's runtimeState: the CRI runtime answered Status recently with
   * RuntimeReady and NetworkReady, and the PLEG is healthy. The message says what is wrong.
   */
  runtimeReady(): { ok: boolean; message: string };
  /** `<runtimeName>://<version>` from CRI Version, once known. */
  runtimeVersion(): string;
  /** Every configured source has delivered its first snapshot. */
  sourcesReady(): boolean;
  /** The Ready condition's error while the node shuts down (upstream ShutdownStatus), else undefined. */
  nodeShutdownError(): string | undefined;
  /** Node pressure (the eviction manager's conditions; all false without one). */
  pressure(): PressureState;
  /**
   * Why the pod of that namespace and name is not running or not ready (the `why` document), from the
   * kubelet's own state; undefined when the kubelet has no such pod.
   */
  podWhy(namespace: string, name: string, signal: AbortSignal): Promise<PodWhy | undefined>;
  /** The API source reports the mirror pods bound to this node (cluster mode). */
  setMirrorPods(pods: KubeletPod[]): void;
  /** A pod's volumes that their plugin measures (the volume manager's; for volume stats). */
  measuredVolumes(uid: string): PodMeasuredVolume[];
}
