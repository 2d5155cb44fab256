/**
 * Test support for integration tests: a real containerd (test/harness) and an in-process tskubelet
 * assembled by the same `newKubelet` as the CLI's, with temporary manifest, root and log directories.
 * The bed access itself (setupEnv, manifests, the bed's pods) is the test kit's (test/kit/bed.ts),
 * and so is the poll (`eventually`, test/kit/poll.ts): the tests import them from there.
 */
import { before, after } from 'node:test';
import { createMemoryRecorder } from '../../src/api/events.ts';
import { newKubelet, type AssembledKubelet, type Kubelet, type PodView } from '../../src/kubelet/index.ts';
import { machineNodeView } from '../../src/kubelet/node-view.ts';
import type { KubeletConfig } from '../../src/config/index.ts';
import { testKubeletConfig } from '../../src/config/testing.ts';
import { eventually } from '../kit/poll.ts';
import type { RuntimeEventSource } from '../../src/runtime/containerd-events/index.ts';
import { setupEnv, testLogger, NODE, type Env } from '../kit/bed.ts';

export interface RunningKubelet {
  kubelet: AssembledKubelet;
  events: ReturnType<typeof createMemoryRecorder>['events'];
  done: Promise<void>;
  stop(): Promise<void>;
}

export interface KubeletTestOptions {
  maxPods?: number;
  /** Also read pods from this URL (the HTTP source), polled every second. */
  manifestURL?: string;
  /** Pod cgroups per QoS class under /kubepods, as the CLI's default (true). */
  cgroupsPerQOS?: boolean;
  /** Given: the evented PLEG runs on this event source (`--evented-pleg`). */
  runtimeEvents?: RuntimeEventSource;
  /** Any other setting, over the test config's. */
  config?: Partial<KubeletConfig>;
}

/**
 * A kubelet assembled as the CLI assembles it (`newKubelet`) on the bed's containerd, reading
 * manifests from `env.manifests` every second; no listeners, no eviction (testKubeletConfig).
 */
export async function startKubelet(env: Env, opts: KubeletTestOptions = {}): Promise<RunningKubelet> {
  const { mkdir } = await import('node:fs/promises');
  await mkdir(env.manifests, { recursive: true });
  const logger = testLogger();
  const recorder = createMemoryRecorder();
  const maxPods = opts.maxPods ?? 110;
  const cgroupsPerQOS = opts.cgroupsPerQOS ?? true;
  const kubelet = await newKubelet(
    testKubeletConfig({
      nodeName: NODE,
      rootDir: env.rootDir,
      podLogsDir: env.logsDir,
      maxPods,
      syncFrequencyMs: 60_000,
      staticPodPath: env.manifests,
      fileCheckFrequencyMs: 1_000,
      ...(opts.manifestURL ? { staticPodURL: opts.manifestURL, httpCheckFrequencyMs: 1_000 } : {}),
      eventedPleg: opts.runtimeEvents !== undefined,
      cgroupsPerQOS,
      enforceNodeAllocatable: cgroupsPerQOS ? ['pods'] : [],
      containerRuntimeEndpoint: env.bed.endpoint,
      ...opts.config,
    }),
    {
      logger,
      version: 'itest',
      nodeIP: '127.0.0.1',
      runtimeService: env.cri.runtime,
      imageService: env.cri.image,
      ...(opts.runtimeEvents ? { runtimeEvents: opts.runtimeEvents } : {}),
      recorder,
      node: () => machineNodeView(NODE, maxPods),
    },
  );
  const done = kubelet.run();
  return {
    kubelet,
    events: recorder.events,
    done,
    stop: async () => {
      await kubelet.stop();
      await done;
    },
  };
}

/** The kubelet's view of the pod whose name starts with `<name>-` (static pods get the node suffix). */
export function findPod(k: Kubelet, name: string): PodView | undefined {
  return k.pods().find((p) => p.pod.metadata.name === `${name}-${NODE}`);
}

export async function waitForPhase(
  k: Kubelet,
  name: string,
  phase: string,
  timeoutMs = 30_000,
): Promise<PodView> {
  return eventually(
    `pod ${name} phase ${phase}`,
    () => {
      const p = findPod(k, name);
      return p?.status?.phase === phase ? p : undefined;
    },
    timeoutMs,
    () => findPod(k, name)?.status,
  );
}

/**
 * Registers before/after hooks for a describe block: a clean bed and one running kubelet, shared by
 * the block's tests, torn down afterwards. Read `env`/`k` inside tests (they are set by `before`).
 */
export function useKubelet(opts: KubeletTestOptions = {}): {
  readonly env: Env;
  readonly k: RunningKubelet;
} {
  let env: Env | undefined;
  let k: RunningKubelet | undefined;
  before(async () => {
    env = await setupEnv();
    k = await startKubelet(env, opts);
  });
  after(async () => {
    await k?.stop();
    await env?.close();
  });
  return {
    get env(): Env {
      if (!env) throw new Error('useKubelet: env read outside a test');
      return env;
    },
    get k(): RunningKubelet {
      if (!k) throw new Error('useKubelet: kubelet read outside a test');
      return k;
    },
  };
}
