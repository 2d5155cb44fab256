/**
 * Test fixtures for the runtime manager and its parts (not exported from any index, not part of the
 * build): pods, the fake CRI with the real image manager and back-off, the dependencies the manager
 * takes (with the shared recording logger); the pods, contexts and services of the environment
 * tests; the fake image store, pods and secrets of the image manager tests.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { createMemoryRecorder } from '../api/events.ts';
import type { RateLimiter } from '../api/rate-limiter.ts';
import { deferred, type Deferred } from '../api/testing.ts';
import type { Container, KubeletPod, PullPolicy } from '../api/types.ts';
import { createBackoff } from '../util/backoff.ts';
import { KubeletError } from '../util/errors.ts';
import { recordingLogger } from '../util/testing.ts';
import { FakeImageService, FakeRuntimeService } from './cri/testing.ts';
import type {
  AuthConfig,
  CallOptions,
  Image,
  ImageService,
  ImageSpec,
  KeyValue,
  PodSandboxConfig,
} from './cri/types.ts';
import type { EnvContext } from './env/env-context.ts';
import { createHookRunner, type HookRunner } from './lifecycle/hooks.ts';
import { ImageError, createImageManager, type ImageManagerDeps } from './images/image-manager.ts';
import {
  DOCKER_CONFIG_JSON_KEY,
  SECRET_TYPE_DOCKER_CONFIG_JSON,
  type PullSecret,
} from './images/pull-secrets.ts';
import type { RuntimeManagerDeps } from './kuberuntime/runtime-manager.ts';
import type { RuntimePodStatus } from './kuberuntime/runtime-pod.ts';
import type { Service, ServiceLister } from './env/service-env.ts';
import { buildPod } from '../../test/kit/pod.ts';

/** The mock clock's start. */
export const START = Date.parse('2026-01-10T08:00:00Z');

export function makePod(
  name: string,
  containers: string[],
  opts: { init?: string[]; grace?: number; restartPolicy?: 'Always' | 'OnFailure' | 'Never' } = {},
): KubeletPod {
  return buildPod(name, {
    namespace: 'ns',
    containers,
    terminationGracePeriodSeconds: opts.grace ?? 30,
    ...(opts.init ? { initContainers: opts.init } : {}),
    ...(opts.restartPolicy ? { restartPolicy: opts.restartPolicy } : {}),
  });
}

/** The container named `name` of a pod made by `makePod` (init containers included). */
export function containerOf(pod: KubeletPod, name: string): Container {
  const c = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name} in pod ${pod.metadata.name}`);
  return c;
}

/** Container name → state, newest run of each. */
export const stateOf = (s: RuntimePodStatus) =>
  Object.fromEntries(s.containers.map((c) => [c.name, c.state]));

/**
 * The CRI calls that changed something since the last look, as `method name:attempt` (containers)
 * or `method sandbox:attempt`, plus StopContainer's grace period.
 */
export function criSteps(cri: FakeRuntimeService): () => string[] {
  let mark = 0;
  return () => {
    const calls = cri.calls.slice(mark);
    mark = cri.calls.length;
    const out: string[] = [];
    for (const { method, args } of calls) {
      const id = typeof args[0] === 'string' ? args[0] : '';
      // Fake IDs: `<name>_<ns>_<uid>_<attempt>` for sandboxes, `<sandbox>_<name>_<attempt>` for containers.
      const ctr = id.split('_').slice(-2).join(':');
      switch (method) {
        case 'runPodSandbox':
          out.push(`${method} sandbox`);
          break;
        case 'stopPodSandbox':
        case 'removePodSandbox':
          out.push(`${method} sandbox:${id.split('_').at(-1) ?? ''}`);
          break;
        case 'createContainer': {
          const m = (args[1] as { metadata: { name: string; attempt: number } }).metadata;
          out.push(`${method} ${m.name}:${m.attempt}`);
          break;
        }
        case 'startContainer':
        case 'removeContainer':
          out.push(`${method} ${ctr}`);
          break;
        case 'stopContainer':
          out.push(`${method} ${ctr} grace=${String(args[1])}`);
          break;
      }
    }
    return out;
  };
}

/**
 * The fake CRI (runtime and images) with the real image manager, back-off and hook runner (exec
 * through the fake's ExecSync), a memory recorder,
 * a recording logger and a temporary root dir, as `RuntimeManagerDeps`. Time is node:test's mock
 * clock (Date and setTimeout) from START, shared by everything: the wall and the monotonic clock
 * both read the mocked Date (a test that steps one of them passes its own).
 */
export async function fakeRuntimeDeps(t: TestContext) {
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-runtime-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START });
  const cri = new FakeRuntimeService();
  const images = new FakeImageService();
  const recorder = createMemoryRecorder();
  const logger = recordingLogger();
  const hooks = createHookRunner({
    exec: (id, cmd, timeout, opts) => cri.execSync(id, cmd, timeout, opts),
    recorder,
    logger,
  });
  const deps: RuntimeManagerDeps & { hooks: HookRunner } = {
    runtime: cri,
    images: createImageManager({
      images,
      recorder,
      monotonic: () => Date.now(),
      rateLimiter: { acquire: () => Promise.resolve(), waiting: () => 0 },
    }),
    recorder,
    logger,
    backoff: createBackoff(),
    podLogsDir: join(dir, 'logs'),
    rootDir: dir,
    hostDNS: () => ({ servers: ['192.0.2.53'], searches: [], options: [] }),
    mountsFor: () => Promise.resolve([]),
    hooks,
    now: () => Date.now(),
    monotonic: () => Date.now(),
  };
  return {
    dir,
    cri,
    images,
    recorder,
    logger,
    deps,
    advance: (ms: number) => t.mock.timers.tick(ms),
    steps: criSteps(cri),
    /** The reasons of the events recorded so far, in order. */
    reasons: () => recorder.events.map((e) => e.reason),
  };
}

// ---- the container environment (env.ts and its sources) ----

/** A Service with one port, as the API serves it. */
export function svc(
  name: string,
  namespace: string,
  clusterIP: string,
  port: number,
  protocol = 'TCP',
): Service {
  return { metadata: { name, namespace }, spec: { clusterIP, ports: [{ port, protocol }] } };
}

/** The pod of the environment tests (upstream's dapi-test-pod-name), labelled and annotated. */
export function envPod(
  namespace: string,
  containers: Container[],
  mutate: (p: KubeletPod) => void = () => undefined,
): KubeletPod {
  const p = buildPod('dapi-test-pod-name', {
    namespace,
    uid: 'uid-1',
    labels: { app: 'web', 'example.com/tier': 'front' },
    annotations: { note: 'hello "world"' },
    containers,
    nodeName: 'node-name',
    spec: { serviceAccountName: 'special' },
  });
  mutate(p);
  return p;
}

/** A lister over a fixed list, as the Service informer answers once synced; records namespaces asked. */
export function listerOf(services: Service[], synced = true): ServiceLister & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    hasSynced: () => synced,
    list: (ns) => {
      asked.push(ns);
      return services.filter((s) => s.metadata?.namespace === ns);
    },
  };
}

/**
 * The context of `c`'s environment in an `envPod` of `namespace` (default `test1`); `services` as a
 * list becomes a synced lister.
 */
export function envContext(
  c: Container,
  opts: Partial<Omit<EnvContext, 'container' | 'services'>> & {
    namespace?: string;
    services?: Service[] | ServiceLister;
  } = {},
): EnvContext {
  const { namespace, services, ...rest } = opts;
  return {
    pod: opts.pod ?? envPod(namespace ?? 'test1', [c]),
    container: c,
    hostIP: '10.0.0.5',
    podIPs: ['1.2.3.4'],
    nodeName: 'node-name',
    nodeAllocatable: { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi' },
    ...(services ? { services: Array.isArray(services) ? listerOf(services) : services } : {}),
    ...rest,
  };
}

/** Variables in key order, for comparisons that do not test the order. */
export const sortedByKey = (envs: KeyValue[]) =>
  [...envs].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

/** Asserts that `p` rejects with a KubeletError of `code` whose message contains (or matches) `text`. */
export async function rejectsWithCode(
  p: Promise<unknown>,
  code: string,
  text: string | RegExp,
): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof KubeletError, `not a KubeletError: ${String(err)}`);
    assert.equal(err.code, code);
    if (typeof text === 'string') assert.ok(err.message.includes(text), err.message);
    else assert.match(err.message, text);
    return true;
  });
}

// ---- the image manager (image-*.ts) ----

/** A sandbox config for pulls (the image manager passes it through). */
export const SANDBOX_CONFIG: PodSandboxConfig = {
  metadata: { name: 'p', uid: 'u', namespace: 'ns', attempt: 0 },
};

/** One pullImage call of `fakeImages`, settled by the test through `result`. */
export interface PullCall {
  image: string;
  auth: AuthConfig | undefined;
  signal: AbortSignal | undefined;
  result: Deferred<string>;
}

/**
 * An ImageService whose store is a set of references. pullImage either answers at once through
 * `onPull` or, without it, parks the call in `pulls` for the test to settle.
 */
export function fakeImages() {
  const present = new Set<string>();
  const pulls: PullCall[] = [];
  const statusCalls: string[] = [];
  let statusError: Error | undefined;
  let onPull: ((image: string, auth: AuthConfig | undefined) => string) | undefined;
  const svc: ImageService = {
    listImages: () => Promise.resolve([]),
    imageStatus(spec: ImageSpec): Promise<Image | null> {
      statusCalls.push(spec.image);
      if (statusError) return Promise.reject(statusError);
      if (!present.has(spec.image)) return Promise.resolve(null);
      return Promise.resolve({
        id: `sha256:id-of-${spec.image}`,
        repoTags: [spec.image],
        repoDigests: [],
        size: 1,
        username: '',
      });
    },
    pullImage(
      spec: ImageSpec,
      auth?: AuthConfig,
      _sb?: PodSandboxConfig,
      opts?: CallOptions,
    ): Promise<string> {
      const call: PullCall = { image: spec.image, auth, signal: opts?.signal, result: deferred<string>() };
      pulls.push(call);
      opts?.signal?.addEventListener('abort', () => call.result.reject(opts.signal?.reason), { once: true });
      if (onPull) {
        try {
          const ref = onPull(spec.image, auth);
          present.add(spec.image);
          call.result.resolve(ref);
        } catch (err) {
          call.result.reject(err);
        }
      }
      return call.result.promise;
    },
    removeImage: () => Promise.resolve(),
    imageFsInfo: () => Promise.resolve([]),
  };
  return {
    svc,
    present,
    pulls,
    statusCalls,
    failStatus(err: Error) {
      statusError = err;
    },
    answer(fn: (image: string, auth: AuthConfig | undefined) => string) {
      onPull = fn;
    },
  };
}

/** A pod in `ns` naming `pullSecrets` as its imagePullSecrets. */
export function imagePod(name: string, containers: Container[], pullSecrets?: string[]): KubeletPod {
  return buildPod(name, {
    namespace: 'ns',
    containers,
    ...(pullSecrets ? { spec: { imagePullSecrets: pullSecrets.map((n) => ({ name: n })) } } : {}),
  });
}

/** A container `app` of `image`. */
export function imageContainer(image: string, imagePullPolicy?: PullPolicy): Container {
  const c: Container = { name: 'app', image };
  if (imagePullPolicy) c.imagePullPolicy = imagePullPolicy;
  return c;
}

/** A kubernetes.io/dockerconfigjson secret with these `auths`. */
export function dockerSecret(
  name: string,
  auths: Record<string, { username: string; password: string }>,
): PullSecret {
  return {
    metadata: { name, namespace: 'ns' },
    type: SECRET_TYPE_DOCKER_CONFIG_JSON,
    data: { [DOCKER_CONFIG_JSON_KEY]: Buffer.from(JSON.stringify({ auths })).toString('base64') },
  };
}

/** An image manager on `fakeImages` with a memory recorder, a movable clock and no rate limit. */
export function imageManagerSetup(overrides: Partial<ImageManagerDeps> = {}) {
  const images = fakeImages();
  const recorder = createMemoryRecorder();
  let nowMs = 1_000_000;
  const unlimited: RateLimiter = { acquire: () => Promise.resolve(), waiting: () => 0 };
  const manager = createImageManager({
    images: images.svc,
    recorder,
    monotonic: () => nowMs,
    rateLimiter: unlimited,
    ...overrides,
  });
  return {
    images,
    manager,
    reasons: () => recorder.events.map((e) => e.reason),
    events: recorder.events,
    advance(ms: number) {
      nowMs += ms;
    },
  };
}

/** The ImageError reason ensureImage rejects with (fails the test if it resolves). */
export async function imageErrorReason(p: Promise<string>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ImageError, `expected an ImageError, got ${String(err)}`);
    return err.reason;
  }
  assert.fail('ensureImage resolved');
}
