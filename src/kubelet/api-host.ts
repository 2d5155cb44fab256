/**
 * The kubelet's side of the kubelet API (upstream's HostInterface implemented by *Kubelet): pods
 * from the kubelet's own state, containers and sandboxes from the runtime, log paths and streaming
 * URLs from CRI. The server package never sees the kubelet itself, only this object.
 */
import type { KubeletPod, Pod } from '../api/types.ts';
import { isCriNotFound, type RuntimeService } from '../runtime/cri/index.ts';
import { combineSignals } from '../util/abort.ts';
import type { RuntimePodSummary } from '../runtime/index.ts';
import type { HostPod, KubeletApiHost, TextBody } from '../server/index.ts';
import type { PodWhy } from '../why/index.ts';
import type { PodView } from './kubelet.ts';
import type { PodTimeline } from '../timeline/index.ts';

export interface ApiHostDeps {
  nodeName: string;
  kubelet: {
    pods(): PodView[];
    healthz(): { ok: boolean; message: string };
    runningPods(signal?: AbortSignal): Promise<RuntimePodSummary[]>;
    podWhy(namespace: string, name: string, signal: AbortSignal): Promise<PodWhy | undefined>;
    podTimeline?(namespace: string, name: string): PodTimeline | undefined;
  };
  runtime: RuntimeService;
  configz: () => unknown;
  spec: () => Promise<unknown>;
  metrics: (which: 'main' | 'probes' | 'resource' | 'cadvisor') => Promise<TextBody>;
  statsSummary: (onlyCpuAndMemory: boolean, signal: AbortSignal) => Promise<unknown>;
  systemLogDir?: string;
  /** Deadline of the CRI calls made for one API request. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export function createApiHost(deps: ApiHostDeps): KubeletApiHost {
  const timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  async function runtimePod(pod: KubeletPod, signal: AbortSignal): Promise<RuntimePodSummary | undefined> {
    const uid = pod.metadata.uid;
    const pods = await deps.kubelet.runningPods(signal);
    return pods.find((p) => p.uid === uid);
  }

  return {
    nodeName: deps.nodeName,
    healthz: () => deps.kubelet.healthz(),
    pods: () => deps.kubelet.pods(),
    getPod(namespace: string, name: string): HostPod | undefined {
      return deps.kubelet
        .pods()
        .find((p) => p.pod.metadata.namespace === namespace && p.pod.metadata.name === name);
    },
    async runningPods(signal) {
      const pods = await deps.kubelet.runningPods(signal);
      return pods.map((p): Pod => ({
        metadata: { name: p.name, namespace: p.namespace, uid: p.uid },
        spec: {
          containers: [...new Set(p.containers.map((c) => c.name))].map((name) => ({ name, image: '' })),
        },
      }));
    },
    async findRunningContainer(pod, containerName, signal) {
      const rp = await runtimePod(pod, signal);
      const running = (rp?.containers ?? [])
        .filter((c) => c.name === containerName && c.state === 'running')
        .sort((a, b) => b.createdAt - a.createdAt);
      return running[0]?.id;
    },
    async findReadySandbox(pod, signal) {
      const rp = await runtimePod(pod, signal);
      const ready = (rp?.sandboxes ?? [])
        .filter((s) => s.state === 'ready')
        .sort((a, b) => b.createdAt - a.createdAt);
      return ready[0]?.id;
    },
    async containerLogPath(containerID, signal) {
      const s = await deps.runtime.containerStatus(containerID, { signal, timeoutMs });
      return s.logPath;
    },
    async isContainerRunning(containerID, signal) {
      try {
        const s = await deps.runtime.containerStatus(containerID, { signal, timeoutMs });
        return s.state === 'CONTAINER_RUNNING';
      } catch (err) {
        if (isCriNotFound(err)) return false;
        throw err;
      }
    },
    runtime: deps.runtime,
    configz: deps.configz,
    spec: deps.spec,
    metrics: deps.metrics,
    statsSummary: deps.statsSummary,
    systemLogDir: deps.systemLogDir ?? '/var/log',
    podWhy: (namespace, name, signal) =>
      deps.kubelet.podWhy(namespace, name, combineSignals([signal], timeoutMs)),
    podTimeline: (namespace, name) => deps.kubelet.podTimeline?.(namespace, name),
  };
}
