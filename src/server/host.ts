/**
 * What the kubelet API asks of the kubelet, as function fields (upstream's HostInterface; Virtual
 * Kubelet's PodHandlerConfig habit), so the server is testable without a kubelet or a runtime.
 */
import type { KubeletPod, Pod, PodStatus } from '../api/types.ts';
import type { RuntimeService } from '../runtime/cri/index.ts';
import type { PodWhy } from '../why/index.ts';
import type { PodTimeline } from '../timeline/index.ts';

export interface HostPod {
  pod: KubeletPod;
  /** The kubelet's latest computed status; undefined before the first sync. */
  status: PodStatus | undefined;
}

/** A text response prepared elsewhere (Prometheus exposition). */
export interface TextBody {
  contentType: string;
  body: string;
}

export interface KubeletApiHost {
  readonly nodeName: string;
  healthz(): { ok: boolean; message: string };
  /** The pods bound to this kubelet (static ones included), with their computed status. */
  pods(): HostPod[];
  /** A pod by namespace and name (upstream GetPodByName), static pods by their own name too. */
  getPod(namespace: string, name: string): HostPod | undefined;
  /** The pods as the runtime holds them (upstream GetRunningPods), as minimal Pod objects. */
  runningPods(signal: AbortSignal): Promise<Pod[]>;
  /** The running container of that name in the pod, or undefined (exec, attach, run). */
  findRunningContainer(
    pod: KubeletPod,
    containerName: string,
    signal: AbortSignal,
  ): Promise<string | undefined>;
  /** The pod's ready sandbox, or undefined (port-forward). */
  findReadySandbox(pod: KubeletPod, signal: AbortSignal): Promise<string | undefined>;
  /** The CRI log path of a container (CRI ContainerStatus); rejects NotFound when it is gone. */
  containerLogPath(containerID: string, signal: AbortSignal): Promise<string>;
  isContainerRunning(containerID: string, signal: AbortSignal): Promise<boolean>;
  /** The streaming and exec calls of CRI. */
  readonly runtime: Pick<RuntimeService, 'exec' | 'attach' | 'portForward' | 'execSync'>;
  /** The effective configuration as a KubeletConfiguration (for /configz). */
  configz(): unknown;
  /** Machine info (upstream cadvisor MachineInfo subset) for /spec/. */
  spec(): Promise<unknown>;
  metrics(which: 'main' | 'probes' | 'resource' | 'cadvisor'): Promise<TextBody>;
  /** The Summary API (/stats/summary). */
  statsSummary(onlyCpuAndMemory: boolean, signal: AbortSignal): Promise<unknown>;
  /** Directory served at /logs/ (upstream: /var/log). */
  readonly systemLogDir: string;
  /** Why the pod is not running or not ready (the `why` document, PodWhy); undefined: no such pod. */
  podWhy(namespace: string, name: string, signal: AbortSignal): Promise<PodWhy | undefined>;
  /** The pod's startup timeline (a desired pod's, else a recently gone one's); undefined: unknown. */
  podTimeline(namespace: string, name: string): PodTimeline | undefined;
}
