/**
 * Support for the `limits` scenario: an in-process kubelet on the fake CRI fed by the real file
 * source, an event-loop delay meter, polling, and the manifests it writes.
 */
import { join } from 'node:path';
import { createMemoryRecorder } from '../../../src/api/events.ts';
import type { KubeletPod } from '../../../src/api/types.ts';
import { newKubelet } from '../../../src/kubelet/index.ts';
import { testKubeletConfig } from '../../../src/config/testing.ts';
import type { Kubelet } from '../../../src/kubelet/types.ts';
import { FakeKmsg } from '../../../src/oom/testing.ts';
import { createFileSource } from '../../../src/podsource/file-source.ts';
import type { PodSource, SourceProblem } from '../../../src/podsource/types.ts';
import { FakeImageService, FakeRuntimeService } from '../../../src/runtime/cri/testing.ts';
import type { Logger } from '../../../src/util/logger.ts';
import { until as poll } from '../../kit/poll.ts';

export const NODE = 'limits-node';

export function until<T>(
  what: string,
  get: () => T | undefined | false,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<T> {
  return poll(what, get, { timeoutMs, intervalMs: 50, ...(signal ? { signal } : {}) });
}

/** The real file source, observed: when each snapshot came and what it reported. */
export interface WatchedSource {
  source: PodSource;
  snapshots: { at: number; pods: number }[];
  problems: SourceProblem[];
}

export function watchedFileSource(
  path: string,
  logger: Logger,
  opts: { checkFrequencyMs?: number; beforeSend?: () => void } = {},
): WatchedSource {
  const checkFrequencyMs = opts.checkFrequencyMs ?? 20_000;
  const snapshots: { at: number; pods: number }[] = [];
  const problems: SourceProblem[] = [];
  const inner = createFileSource({
    path,
    nodeName: NODE,
    checkFrequencyMs,
    logger,
    onProblem: (p) => problems.push(p),
  });
  return {
    snapshots,
    problems,
    source: {
      name: 'file',
      start(send) {
        inner.start((pods) => {
          snapshots.push({ at: performance.now(), pods: pods.length });
          // Before the kubelet has the pods: a measurement can end here with the source's work.
          opts.beforeSend?.();
          send(pods);
        });
      },
      stop: () => inner.stop(),
    },
  };
}

export interface RunningKubelet {
  kubelet: Kubelet;
  cri: FakeRuntimeService;
  stop(): Promise<void>;
}

/** A kubelet on the fake CRI with real managers, in `dir`, fed by `source`; maxPods 110. */
export async function startKubelet(dir: string, source: PodSource, logger: Logger): Promise<RunningKubelet> {
  const cri = new FakeRuntimeService();
  const images = new FakeImageService();
  images.addImage('docker.io/library/busybox:1.29');
  const kubelet = await newKubelet(
    testKubeletConfig({
      nodeName: NODE,
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      syncFrequencyMs: 60_000,
    }),
    {
      version: 'reliability',
      nodeIP: '192.0.2.10',
      runtimeService: cri,
      imageService: images,
      sources: [source],
      recorder: createMemoryRecorder(),
      logger,
      openKmsg: new FakeKmsg().opener,
      node: () => ({
        name: NODE,
        labels: {},
        allocatable: { milliCPU: 64_000, memory: 256 * 2 ** 30, pods: 110 },
      }),
    },
  );
  const running = kubelet.run();
  return {
    kubelet,
    cri,
    async stop() {
      await kubelet.stop();
      await running;
    },
  };
}

/** True when every container of the pod runs (as the kubelet's computed status says). */
export function allRunning(
  pod: { status?: { containerStatuses?: { state: { running?: unknown } }[] } | undefined },
  n: number,
): boolean {
  const cs = pod.status?.containerStatuses ?? [];
  return cs.length === n && cs.every((c) => c.state.running !== undefined);
}

export function podManifest(name: string, containers: object[]): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers } });
}

export type Statused = { pod: KubeletPod; status?: { phase?: string; reason?: string } | undefined };
