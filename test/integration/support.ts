/**
 * Test support for integration tests: a real containerd (test/harness) and an in-process tskubelet
 * assembled by the same `newKubelet` as the CLI's, with temporary manifest, root and log directories.
 */
import { before, after } from 'node:test';
import { mkdtemp, readFile, rm, writeFile, unlink, rename } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startContainerd, removeAllPods, type ContainerdBed } from '../harness/index.ts';
import { createCriClient, type CriClient } from '../../src/runtime/cri/index.ts';
import { createMemoryRecorder } from '../../src/api/events.ts';
import { createLogger, nullLogger, type Logger } from '../../src/util/logger.ts';
import { newKubelet, type AssembledKubelet, type Kubelet, type PodView } from '../../src/kubelet/index.ts';
import { machineNodeView } from '../../src/kubelet/node-view.ts';
import type { KubeletConfig } from '../../src/config/index.ts';
import { testKubeletConfig } from '../../src/config/testing.ts';
import { until } from '../kit/poll.ts';
import { buildManifest } from '../kit/pod.ts';
import type { Pod } from '../../src/api/types.ts';
import { LABEL_POD_UID } from '../../src/config/defaults.ts';
import type { Container as CriContainer, PodSandbox } from '../../src/runtime/cri/types.ts';
import type { RuntimeEventSource } from '../../src/runtime/containerd-events/index.ts';

export const IMAGE = 'docker.io/library/busybox:1.29';
export const NODE = 'itest';

export function testLogger(): Logger {
  return process.env.TSKUBELET_TEST_VERBOSE ? createLogger({ verbosity: 4, format: 'text' }) : nullLogger;
}

export interface Env {
  bed: ContainerdBed;
  cri: CriClient;
  dir: string;
  manifests: string;
  rootDir: string;
  logsDir: string;
  close(): Promise<void>;
}

/**
 * Unmounts every mount below `dir`, deepest first. A kubelet that stops leaves its pods (and their
 * tmpfs volumes) in place by design; a test's temporary root must not be removed through them.
 */
export async function unmountUnder(dir: string): Promise<void> {
  const mounts = (await readFile('/proc/mounts', 'utf8'))
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) await promisify(execFile)('umount', ['-l', m]);
}

/** Starts the bed (clean: no pods) and makes the temporary directories. */
export async function setupEnv(): Promise<Env> {
  const bed = await startContainerd();
  await removeAllPods(bed);
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-it-'));
  const cri = createCriClient({ endpoint: bed.endpoint });
  return {
    bed,
    cri,
    dir,
    manifests: join(dir, 'manifests'),
    rootDir: join(dir, 'root'),
    logsDir: join(dir, 'logs'),
    async close() {
      await removeAllPods(bed);
      cri.close();
      await bed.stop();
      await unmountUnder(dir);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

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

/** A Pod manifest object with sensible test defaults. */
export function podManifest(name: string, spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>): Pod {
  return buildManifest(name, { terminationGracePeriodSeconds: 2, spec });
}

/** Writes atomically (temp file + rename), as editors and config management do. */
export async function writeManifest(env: Env, file: string, pod: Pod | string): Promise<void> {
  const text = typeof pod === 'string' ? pod : stringify(pod);
  const tmp = join(env.manifests, `.${file}.tmp`);
  await writeFile(tmp, text);
  await rename(tmp, join(env.manifests, file));
}

export async function removeManifest(env: Env, file: string): Promise<void> {
  await unlink(join(env.manifests, file));
}

/** The kit's poll-until (test/kit/poll.ts) every 100 ms, 30 s unless told, with the state seen on failure. */
export function eventually<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 30_000,
  describe?: () => unknown,
): Promise<T> {
  return until(what, check, { timeoutMs, intervalMs: 100, ...(describe ? { describe } : {}) });
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

export async function sandboxesOf(env: Env, uid: string): Promise<PodSandbox[]> {
  return env.cri.runtime.listPodSandbox({ labelSelector: { [LABEL_POD_UID]: uid } });
}

export async function containersOf(env: Env, uid: string): Promise<CriContainer[]> {
  return env.cri.runtime.listContainers({ labelSelector: { [LABEL_POD_UID]: uid } });
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
