/**
 * The runtime's view of a pod, read back from CRI (upstream kubecontainer.PodStatus): every sandbox and
 * every container the runtime holds for one pod UID, newest first, with the kubelet's bookkeeping
 * (hash, restart count) decoded from the CRI labels and annotations it wrote at creation.
 */
import { monotonicNow } from '../util/clock.ts';
import type { Container, Pod } from '../api/types.ts';
import { isRestartableInitContainer, restartPolicy } from '../api/pod-util.ts';
export type RuntimeContainerState = 'created' | 'running' | 'exited' | 'unknown';

export interface RuntimeContainerStatus {
  id: string;
  name: string;
  state: RuntimeContainerState;
  /** Unix milliseconds; 0 when not applicable. */
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  image: string;
  imageRef: string;
  /** Container spec hash at creation (annotation io.kubernetes.container.hash). */
  hash: string;
  /** Restart count at creation (annotation io.kubernetes.container.restartCount). */
  restartCount: number;
  podSandboxId: string;
  attempt: number;
  terminationMessagePath: string;
  terminationMessagePolicy: string;
  /** Grace period the pod had at creation (annotation), used to kill orphans honestly. */
  terminationGracePeriodSeconds: number | undefined;
}

export interface RuntimeSandboxStatus {
  id: string;
  ready: boolean;
  createdAt: number;
  attempt: number;
  ip: string;
  ips: string[];
  hostNetwork: boolean;
}

export interface RuntimePodStatus {
  uid: string;
  name: string;
  namespace: string;
  /** Newest first. */
  sandboxes: RuntimeSandboxStatus[];
  /** Newest first. */
  containers: RuntimeContainerStatus[];
  /** When this status was read: monotonic ms (util/clock), for ordering reads only. */
  timestamp: number;
}

export function emptyRuntimePodStatus(uid: string, name: string, namespace: string): RuntimePodStatus {
  return { uid, name, namespace, sandboxes: [], containers: [], timestamp: monotonicNow() };
}

/**
 * Per container list, its first (newest) status of each name. Callers look up every container of
 * a pod in turn, which a linear search makes quadratic (a 1,000-container pod stalled the event
 * loop for tens of ms per sync). A list is only appended to while the reader builds it: an index
 * whose size no longer matches is rebuilt.
 */
const byNameIndex = new WeakMap<
  readonly RuntimeContainerStatus[],
  { size: number; byName: Map<string, RuntimeContainerStatus> }
>();
/** Below this many statuses a linear search is cheaper than an index. */
const INDEX_FROM = 16;

/** The newest status of the named container, if the runtime has one. */
export function findContainerStatus(
  status: RuntimePodStatus,
  name: string,
): RuntimeContainerStatus | undefined {
  const list = status.containers;
  if (list.length < INDEX_FROM) return list.find((c) => c.name === name);
  let index = byNameIndex.get(list);
  if (index?.size !== list.length) {
    const byName = new Map<string, RuntimeContainerStatus>();
    for (const c of list) if (!byName.has(c.name)) byName.set(c.name, c);
    index = { size: list.length, byName };
    byNameIndex.set(list, index);
  }
  return index.byName.get(name);
}

/** A sandbox's IPs, the primary first (empty for a host-network sandbox, which has none). */
export function sandboxIPs(sb: Pick<RuntimeSandboxStatus, 'ip' | 'ips'>): string[] {
  return [sb.ip, ...sb.ips].filter((ip) => ip !== '');
}

/** The pod IPs of the newest ready sandbox (empty for host-network or unready pods). */
export function podIPs(status: RuntimePodStatus): string[] {
  const sb = status.sandboxes[0];
  return sb?.ready ? sandboxIPs(sb) : [];
}

/**
 * Upstream kubecontainer.ShouldContainerBeRestarted. A sidecar init container restarts whatever
 * the pod's restart policy says (its own policy is Always), as computePodActions restarts it.
 */
export function shouldContainerBeRestarted(
  container: Container,
  pod: Pod,
  status: RuntimePodStatus,
): boolean {
  if (pod.metadata.deletionTimestamp) return false;
  const cs = findContainerStatus(status, container.name);
  if (!cs) return true;
  if (cs.state === 'running') return false;
  if (cs.state === 'unknown' || cs.state === 'created') return true;
  if (isRestartableInitContainer(container)) return true;
  const policy = restartPolicy(pod);
  if (policy === 'Never') return false;
  if (policy === 'OnFailure' && cs.exitCode === 0) return false;
  return true;
}
