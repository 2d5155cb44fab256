/**
 * What the console's stream carries: pods, containers and the node reduced to the fields the page
 * shows, computed from the kubelet's own state (the pods and their computed statuses).
 */
import type { ContainerStatus, KubeletPod, PodStatus } from '../api/types.ts';
import { podSource } from '../api/pod-source.ts';

export type ContainerStateName = 'waiting' | 'running' | 'terminated' | 'unknown';

export interface ConsoleContainer {
  name: string;
  image: string;
  state: ContainerStateName;
  reason?: string;
  message?: string;
  exitCode?: number;
  startedAt?: string;
  finishedAt?: string;
  ready: boolean;
  restartCount: number;
  /** The previous run's end, when it has one. */
  last?: { exitCode: number; reason?: string; finishedAt?: string };
}

export interface ConsolePod {
  uid: string;
  namespace: string;
  name: string;
  /** `file`, `http` or `api` (kubernetes.io/config.source). */
  source: string;
  phase: string;
  ready: boolean;
  reason?: string;
  message?: string;
  podIP?: string;
  startTime?: string;
  qosClass?: string;
  deletionTimestamp?: string;
  restarts: number;
  initContainers: ConsoleContainer[];
  containers: ConsoleContainer[];
}

export interface ConsoleCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/** Node usage from the kubelet's own Summary API. */
export interface NodeUsage {
  cpuNanoCores?: number;
  memoryWorkingSetBytes?: number;
  memoryAvailableBytes?: number;
  fsUsedBytes?: number;
  fsCapacityBytes?: number;
  imageFsUsedBytes?: number;
  imageFsCapacityBytes?: number;
}

export interface ConsoleNode {
  name: string;
  mode: 'standalone' | 'cluster';
  conditions: ConsoleCondition[];
  /** Quantities as Kubernetes writes them (`cpu: "2"`, `memory: "24Gi"`, `pods: "110"`). */
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  info: Record<string, string>;
  usage?: NodeUsage;
}

function containerOf(name: string, image: string, s: ContainerStatus | undefined): ConsoleContainer {
  if (!s) return { name, image, state: 'unknown', ready: false, restartCount: 0 };
  const c: ConsoleContainer = {
    name,
    image: s.image || image,
    state: 'unknown',
    ready: s.ready,
    restartCount: s.restartCount,
  };
  const { waiting, running, terminated } = s.state;
  if (running) {
    c.state = 'running';
    if (running.startedAt) c.startedAt = running.startedAt;
  } else if (terminated) {
    c.state = 'terminated';
    c.exitCode = terminated.exitCode;
    if (terminated.reason) c.reason = terminated.reason;
    if (terminated.message) c.message = terminated.message;
    if (terminated.startedAt) c.startedAt = terminated.startedAt;
    if (terminated.finishedAt) c.finishedAt = terminated.finishedAt;
  } else if (waiting) {
    c.state = 'waiting';
    if (waiting.reason) c.reason = waiting.reason;
    if (waiting.message) c.message = waiting.message;
  }
  const last = s.lastState.terminated;
  if (last) {
    c.last = {
      exitCode: last.exitCode,
      ...(last.reason ? { reason: last.reason } : {}),
      ...(last.finishedAt ? { finishedAt: last.finishedAt } : {}),
    };
  }
  return c;
}

function containersOf(
  specs: readonly { name: string; image?: string }[] | undefined,
  statuses: readonly ContainerStatus[] | undefined,
): ConsoleContainer[] {
  return (specs ?? []).map((c) =>
    containerOf(
      c.name,
      c.image ?? '',
      statuses?.find((s) => s.name === c.name),
    ),
  );
}

/** A pod as the console lists it; before its first sync (no status) it is Pending. */
export function consolePod(pod: KubeletPod, status: PodStatus | undefined): ConsolePod {
  const initContainers = containersOf(pod.spec.initContainers, status?.initContainerStatuses);
  const containers = containersOf(pod.spec.containers, status?.containerStatuses);
  const ready = status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const out: ConsolePod = {
    uid: pod.metadata.uid,
    namespace: pod.metadata.namespace,
    name: pod.metadata.name,
    source: podSource(pod) ?? 'api',
    phase: status?.phase ?? 'Pending',
    ready,
    restarts: [...initContainers, ...containers].reduce((n, c) => n + c.restartCount, 0),
    initContainers,
    containers,
  };
  if (status?.reason) out.reason = status.reason;
  if (status?.message) out.message = status.message;
  if (status?.podIP) out.podIP = status.podIP;
  if (status?.startTime) out.startTime = status.startTime;
  if (status?.qosClass) out.qosClass = status.qosClass;
  if (pod.metadata.deletionTimestamp) out.deletionTimestamp = pod.metadata.deletionTimestamp;
  if (!status) out.reason = 'NotYetSynced';
  return out;
}

/** The Summary API's node numbers the console shows (`/stats/summary` shape, loosely typed). */
export function usageFromSummary(summary: unknown): NodeUsage | undefined {
  if (typeof summary !== 'object' || summary === null) return undefined;
  const node = (summary as { node?: SummaryNode }).node;
  if (!node) return undefined;
  const u: NodeUsage = {};
  const set = (k: keyof NodeUsage, v: unknown) => {
    if (typeof v === 'number' && Number.isFinite(v)) u[k] = v;
  };
  set('cpuNanoCores', node.cpu?.usageNanoCores);
  set('memoryWorkingSetBytes', node.memory?.workingSetBytes);
  set('memoryAvailableBytes', node.memory?.availableBytes);
  set('fsUsedBytes', node.fs?.usedBytes);
  set('fsCapacityBytes', node.fs?.capacityBytes);
  set('imageFsUsedBytes', node.runtime?.imageFs?.usedBytes);
  set('imageFsCapacityBytes', node.runtime?.imageFs?.capacityBytes);
  return u;
}

interface SummaryNode {
  cpu?: { usageNanoCores?: unknown };
  memory?: { workingSetBytes?: unknown; availableBytes?: unknown };
  fs?: { usedBytes?: unknown; capacityBytes?: unknown };
  runtime?: { imageFs?: { usedBytes?: unknown; capacityBytes?: unknown } };
}
