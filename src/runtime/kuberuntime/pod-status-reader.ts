/**
 * Reads the runtime's view of pods back from CRI (upstream kubeGenericRuntimeManager.GetPodStatus and
 * GetPods): sandbox and container statuses decoded from the labels and annotations the kubelet wrote
 * at creation, and the termination message of every exited container. It only reads: it never
 * creates, stops or removes anything.
 */
import {
  ANNOTATION_CONTAINER_HASH,
  ANNOTATION_CONTAINER_RESTART_COUNT,
  ANNOTATION_CONTAINER_TERMINATION_MESSAGE_PATH,
  ANNOTATION_CONTAINER_TERMINATION_MESSAGE_POLICY,
  ANNOTATION_POD_TERMINATION_GRACE_PERIOD,
  LABEL_CONTAINER_NAME,
  LABEL_POD_NAME,
  LABEL_POD_NAMESPACE,
  LABEL_POD_UID,
} from '../../config/defaults.ts';
import {
  type ContainerState,
  type ContainerStatus,
  type PodSandboxStatus,
  type RuntimeService,
  isCriNotFound,
} from '../cri/index.ts';
import { intAnnotation } from './labels.ts';
import type {
  RuntimeContainerState,
  RuntimeContainerStatus,
  RuntimePodStatus,
  RuntimeSandboxStatus,
} from './runtime-pod.ts';
import { exitedContainerMessage } from './termination-message.ts';
import { monotonicNow } from '../../util/clock.ts';

/** One pod as seen by a cheap relist: sandboxes and containers with their states. */
export interface RuntimePodSummary {
  uid: string;
  name: string;
  namespace: string;
  sandboxes: { id: string; state: 'ready' | 'notready'; createdAt: number }[];
  containers: {
    id: string;
    name: string;
    state: RuntimeContainerState;
    createdAt: number;
    podSandboxId: string;
  }[];
}

export interface PodStatusReader {
  /** Reads everything the runtime holds for a pod UID, newest sandbox and container first. */
  getPodStatus(uid: string, name: string, namespace: string, signal?: AbortSignal): Promise<RuntimePodStatus>;
  /** Every pod the runtime holds (from labels), without per-container status calls. */
  listPods(signal?: AbortSignal): Promise<RuntimePodSummary[]>;
  /** Drops what is remembered about a container that has been removed. */
  forgetContainer(id: string): void;
}

export interface PodStatusReaderDeps {
  runtime: RuntimeService;
  /** Wall ms, compared with the runtime's own stamps (a container's finishedAt). */
  now: () => number;
  /** Monotonic ms for the statuses' `timestamp`; default util/clock's. */
  monotonic?: () => number;
}

/** How many exited containers' messages are remembered (an exited container's message never changes). */
const MESSAGE_CACHE_SIZE = 4096;
/** A log read this soon after the exit may miss lines the runtime is still copying: not cached. */
const LOG_SETTLE_MS = 2_000;

const nsToMs = (ns: number) => Math.floor(ns / 1e6);

function criState(s: ContainerState): RuntimeContainerState {
  switch (s) {
    case 'CONTAINER_CREATED':
      return 'created';
    case 'CONTAINER_RUNNING':
      return 'running';
    case 'CONTAINER_EXITED':
      return 'exited';
    case 'CONTAINER_UNKNOWN':
      return 'unknown';
  }
}

function toContainerStatus(s: ContainerStatus, podSandboxId: string): RuntimeContainerStatus {
  const a = s.annotations ?? {};
  return {
    id: s.id,
    name: s.labels?.[LABEL_CONTAINER_NAME] ?? s.metadata.name,
    state: criState(s.state),
    createdAt: nsToMs(s.createdAt),
    startedAt: nsToMs(s.startedAt),
    finishedAt: nsToMs(s.finishedAt),
    exitCode: s.exitCode,
    reason: s.reason,
    message: s.message,
    image: s.image?.image ?? '',
    imageRef: s.imageRef,
    hash: a[ANNOTATION_CONTAINER_HASH] ?? '',
    restartCount: intAnnotation(a, ANNOTATION_CONTAINER_RESTART_COUNT) ?? 0,
    podSandboxId,
    attempt: s.metadata.attempt,
    terminationMessagePath: a[ANNOTATION_CONTAINER_TERMINATION_MESSAGE_PATH] ?? '',
    terminationMessagePolicy: a[ANNOTATION_CONTAINER_TERMINATION_MESSAGE_POLICY] ?? '',
    terminationGracePeriodSeconds: intAnnotation(a, ANNOTATION_POD_TERMINATION_GRACE_PERIOD),
  };
}

/** A CRI PodSandboxStatus as the runtime manager reads it. */
export function toSandboxStatus(s: PodSandboxStatus): RuntimeSandboxStatus {
  const network = s.network;
  return {
    id: s.id,
    ready: s.state === 'SANDBOX_READY',
    createdAt: nsToMs(s.createdAt),
    attempt: s.metadata.attempt,
    ip: network?.ip ?? '',
    ips: (network?.additionalIps ?? []).map((p) => p.ip),
    // containerd reports no IP for host-network sandboxes; the namespace mode is what tells.
    hostNetwork: s.linux?.namespaces?.options?.network === 'NODE',
  };
}

/**
 * Between a list call and the status call for one of its items, the object may be removed (the pod
 * worker prunes a container while the PLEG relists): as upstream, it is left out as if the list had
 * not seen it, rather than failing the whole status read.
 */
function unlessGone(err: unknown): undefined {
  if (isCriNotFound(err)) return undefined;
  throw err;
}

function present<T>(items: (T | undefined)[]): T[] {
  return items.filter((x): x is T => x !== undefined);
}

/**
 * Newest first: by attempt (the kubelet gives each new sandbox, and each restart of a container, the
 * previous attempt + 1), then by creation time. Upstream sorts by creation time only, a wall stamp: a
 * container restarted after the clock stepped back would sort behind the one it replaced, and the
 * kubelet would take the old, exited instance for the current one.
 */
function newestFirst(
  a: { attempt: number; createdAt: number },
  b: { attempt: number; createdAt: number },
): number {
  return b.attempt - a.attempt || b.createdAt - a.createdAt;
}

export function createPodStatusReader(deps: PodStatusReaderDeps): PodStatusReader {
  const { runtime, now } = deps;
  const monotonic = deps.monotonic ?? monotonicNow;
  /** Termination messages of exited containers by container ID (upstream re-reads them every time). */
  const messages = new Map<string, string>();

  async function exitMessage(s: ContainerStatus, status: RuntimeContainerStatus): Promise<string> {
    const cached = messages.get(s.id);
    if (cached !== undefined) return cached;
    const r = await exitedContainerMessage({
      exitCode: s.exitCode,
      reason: s.reason,
      message: s.message,
      mounts: s.mounts ?? [],
      logPath: s.logPath ?? '',
      terminationMessagePath: status.terminationMessagePath,
      terminationMessagePolicy: status.terminationMessagePolicy,
    });
    if (!r.fromLogs || now() - status.finishedAt > LOG_SETTLE_MS) {
      messages.set(s.id, r.message);
      if (messages.size > MESSAGE_CACHE_SIZE) {
        const oldest = messages.keys().next();
        if (!oldest.done) messages.delete(oldest.value);
      }
    }
    return r.message;
  }

  async function getPodStatus(
    uid: string,
    name: string,
    namespace: string,
    signal?: AbortSignal,
  ): Promise<RuntimePodStatus> {
    const selector = { [LABEL_POD_UID]: uid };
    const [sandboxes, containers] = await Promise.all([
      runtime.listPodSandbox({ labelSelector: selector }, { signal }),
      runtime.listContainers({ labelSelector: selector }, { signal }),
    ]);
    const sandboxStatuses = present(
      await Promise.all(
        sandboxes.map((s) => runtime.podSandboxStatus(s.id, { signal }).then(toSandboxStatus, unlessGone)),
      ),
    );
    const containerStatuses = present(
      await Promise.all(
        containers.map(async (c) => {
          const s = await runtime.containerStatus(c.id, { signal }).catch(unlessGone);
          if (!s) return undefined;
          const status = toContainerStatus(s, c.podSandboxId);
          if (status.state === 'exited') status.message = await exitMessage(s, status);
          return status;
        }),
      ),
    );
    sandboxStatuses.sort(newestFirst);
    containerStatuses.sort(newestFirst);
    return {
      uid,
      name,
      namespace,
      sandboxes: sandboxStatuses,
      containers: containerStatuses,
      timestamp: monotonic(),
    };
  }

  async function listPods(signal?: AbortSignal): Promise<RuntimePodSummary[]> {
    const [sandboxes, containers] = await Promise.all([
      runtime.listPodSandbox(undefined, { signal }),
      runtime.listContainers(undefined, { signal }),
    ]);
    const pods = new Map<string, RuntimePodSummary>();
    const podFor = (labels: Record<string, string>, fallbackUid: string) => {
      const uid = labels[LABEL_POD_UID] ?? fallbackUid;
      let p = pods.get(uid);
      if (!p) {
        p = {
          uid,
          name: labels[LABEL_POD_NAME] ?? '',
          namespace: labels[LABEL_POD_NAMESPACE] ?? '',
          sandboxes: [],
          containers: [],
        };
        pods.set(uid, p);
      }
      return p;
    };
    for (const s of sandboxes) {
      podFor(s.labels ?? {}, s.metadata.uid).sandboxes.push({
        id: s.id,
        state: s.state === 'SANDBOX_READY' ? 'ready' : 'notready',
        createdAt: nsToMs(s.createdAt),
      });
    }
    for (const c of containers) {
      const labels = c.labels ?? {};
      if (labels[LABEL_POD_UID] === undefined) continue; // not created by a kubelet
      podFor(labels, '').containers.push({
        id: c.id,
        name: labels[LABEL_CONTAINER_NAME] ?? c.metadata.name,
        state: criState(c.state),
        createdAt: nsToMs(c.createdAt),
        podSandboxId: c.podSandboxId,
      });
    }
    return [...pods.values()];
  }

  return {
    getPodStatus,
    listPods,
    forgetContainer: (id) => {
      messages.delete(id);
    },
  };
}
