/**
 * Test fixtures for the runtime manager and its parts (not exported from any index, not part of the
 * build): pods, the fake CRI with the real image manager and back-off, the dependencies the manager
 * takes (with the shared recording logger).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { createMemoryRecorder } from '../api/events.ts';
import type { Container, KubeletPod } from '../api/types.ts';
import { createBackoff } from '../util/backoff.ts';
import { recordingLogger } from '../util/testing.ts';
import { FakeImageService, FakeRuntimeService } from './cri/testing.ts';
import { createHookRunner, type HookRunner } from './hooks.ts';
import { createImageManager } from './image-manager.ts';
import type { RuntimeManagerDeps } from './runtime-manager.ts';
import type { RuntimePodStatus } from './runtime-pod.ts';

/** The mock clock's start. */
export const START = Date.parse('2026-01-10T08:00:00Z');

export function makePod(
  name: string,
  containers: string[],
  opts: { init?: string[]; grace?: number; restartPolicy?: 'Always' | 'OnFailure' | 'Never' } = {},
): KubeletPod {
  const ctr = (n: string): Container => ({ name: n, image: 'busybox:1.29' });
  const pod: KubeletPod = {
    metadata: { name, namespace: 'ns', uid: `uid-${name}` },
    spec: { containers: containers.map(ctr), terminationGracePeriodSeconds: opts.grace ?? 30 },
  };
  if (opts.init) pod.spec.initContainers = opts.init.map(ctr);
  if (opts.restartPolicy) pod.spec.restartPolicy = opts.restartPolicy;
  return pod;
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
 * clock (Date and setTimeout) from START, shared by everything.
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
