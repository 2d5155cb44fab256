/**
 * The contract of the node status setters: the static settings and live inputs they read, the image
 * list they are handed, and the events they ask for. Shared by the setters and their callers.
 */
import type { EventType } from '../api/events.ts';

/** What the kubelet supplies; read at every status computation. */
export interface NodeStatusInputs {
  /** Runtime and network readiness plus PLEG health; `message` says what is wrong when not ok. */
  runtimeReady(): { ok: boolean; message: string };
  /** `<runtime type>://<version>`, e.g. `containerd://1.6.20~ds1`. */
  runtimeVersion(): string;
  /** Node-pressure signals (the eviction manager's; all false until there is one). */
  pressure(): { memory: boolean; disk: boolean; pid: boolean };
  /** Graceful shutdown under way: the Ready condition's error (upstream ShutdownStatus). */
  nodeShutdownError?(): string | undefined;
}

/** Static settings the setters need. */
export interface NodeStatusConfig {
  nodeName: string;
  /** Value of the `kubernetes.io/hostname` label and the Hostname address (upstream kl.hostname). */
  hostname: string;
  /** The InternalIP address; undefined when none could be found (addresses are then left alone). */
  nodeIP: string | undefined;
  maxPods: number;
  kubeletVersion: string;
  /** daemonEndpoints.kubeletEndpoint.Port: the kubelet API port. */
  kubeletPort: number;
  /** systemReserved + kubeReserved, summed per resource (capacity.ts ResourceAmounts: cpu in cores). */
  reserved: Record<string, number>;
  /** Hard eviction thresholds that reserve capacity (upstream hardEvictionReservation). */
  evictionHard: { memoryAvailable?: string; nodefsAvailable?: string };
  /** nodeStatusMaxImages: images reported in status.images, largest first; -1 = all. Default 50. */
  maxImages?: number;
}

/** An image as CRI ListImages reports it (the fields the images setter reads; a CRI Image fits). */
export interface NodeImageInfo {
  id: string;
  repoTags: readonly string[];
  repoDigests: readonly string[];
  /** Bytes. */
  size: number;
}

/** The node's images for one status computation: the list, or why it could not be had. */
export type NodeImageList = { ok: true; images: readonly NodeImageInfo[] } | { ok: false; error: string };

/** An event a setter wants recorded; the caller records it once the status is written. */
export interface NodeStatusEvent {
  type: EventType;
  reason: string;
  message: string;
}

/** The event a condition transition calls for (upstream recordNodeStatusEvent). */
export function nodeStatusEvent(nodeName: string, reason: string): NodeStatusEvent {
  return { type: 'Normal', reason, message: `Node ${nodeName} status is now: ${reason}` };
}
