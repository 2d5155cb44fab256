/**
 * The clock scenario's virtual-time measurements: each takes one kubelet component with the clock
 * seams it has in production (a wall clock that steps, a monotonic one that does not), drives it
 * through minutes or hours of virtual time in milliseconds, and reports the figures the checks
 * compare with the same run without a step. `wall.step` moves the component's wall clock and
 * `Date.now()` alike, so a component that reads the process clock behind its seam is caught too.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryRecorder } from '../../../src/api/events.ts';
import { FakeApi } from '../../../src/api/testing.ts';
import type { ApiRequest } from '../../../src/api/client-types.ts';
import type { KubeletPod, Probe } from '../../../src/api/types.ts';
import { createEvictionManager } from '../../../src/eviction/manager.ts';
import type { Threshold } from '../../../src/eviction/signals.ts';
import {
  LOW_PRIORITY,
  memoryStats,
  memorySummary,
  Gi,
  Mi,
  pod as evictionPod,
} from '../../../src/eviction/testing.ts';
import { createLeaseController } from '../../../src/node/lease.ts';
import { FakeClock as NodeClock, FakeCluster } from '../../../src/node/testing.ts';
import type { Lease } from '../../../src/node/types.ts';
import { createProbeManager } from '../../../src/prober/index.ts';
import { createFakeClock as createProbeClock } from '../../../src/prober/testing.ts';
import { FakeImageService, FakeRuntimeService } from '../../../src/runtime/cri/testing.ts';
import { createImageManager } from '../../../src/runtime/images/image-manager.ts';
import { createRuntimeManager } from '../../../src/runtime/kuberuntime/runtime-manager.ts';
import { createTokenManager, type TokenRequestSpec } from '../../../src/volume/token-manager.ts';
import { sleep } from '../../../src/util/abort.ts';
import { createBackoff } from '../../../src/util/backoff.ts';
import { nullLogger } from '../../../src/util/logger.ts';
import { createTestClock, type TestClock } from '../../../src/util/testing.ts';
import { buildPod } from '../../kit/pod.ts';

const S = 1_000;
const MIN = 60 * S;

/** A wall step: of the component's clock and of the process's Date.now, undone by `restore`. */
export interface WallStepper {
  step(ms: number): void;
  restore(): void;
}

export function processWallStepper(...clocks: { stepWall: (ms: number) => void }[]): WallStepper {
  const real = Date.now.bind(Date);
  let offset = 0;
  Date.now = () => real() + offset;
  return {
    step(ms) {
      offset += ms;
      for (const c of clocks) c.stepWall(ms);
    },
    restore() {
      Date.now = real;
    },
  };
}

/** Where and how far the wall clock steps, if at all. */
export interface Step {
  /** After which event of the measurement (the n-th crash, failure …), and how long after it. */
  after: number;
  atMs: number;
  stepMs: number;
}

const sameStep = (s: Step | undefined, n: number) => s !== undefined && s.after === n;

/**
 * Crash-loop back-off: a container that crashes right after each start, `crashes` times, on the
 * fake CRI (its stamps on the stepping wall clock) and the runtime manager, synced every second as
 * the PLEG and the work queue would. Answers each restart's delay after its crash, in seconds.
 */
export async function crashLoopDelays(crashes: number, step?: Step): Promise<number[]> {
  const clock = createTestClock();
  const wall = processWallStepper(clock);
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-clock-'));
  try {
    const fakeClock = { now: clock.now, sleep };
    const cri = new FakeRuntimeService({ clock: fakeClock });
    const recorder = createMemoryRecorder();
    const manager = createRuntimeManager({
      runtime: cri,
      images: createImageManager({
        images: new FakeImageService({ clock: fakeClock }),
        recorder,
        monotonic: clock.monotonic,
        rateLimiter: { acquire: () => Promise.resolve(), waiting: () => 0 },
      }),
      recorder,
      logger: nullLogger,
      backoff: createBackoff(),
      podLogsDir: dir,
      rootDir: dir,
      hostDNS: () => ({ servers: [], searches: [], options: [] }),
      mountsFor: () => Promise.resolve([]),
      now: clock.now,
      monotonic: clock.monotonic,
    });
    const p: KubeletPod = buildPod('crash', { namespace: 'clock', containers: ['app'] });
    const sync = async () =>
      manager.syncPod(p, await manager.getPodStatus(p.metadata.uid, p.metadata.name, p.metadata.namespace));
    await sync();
    const delays: number[] = [];
    for (let n = 0; n < crashes; n++) {
      const running = cri.latestContainer('app', p.metadata.uid);
      if (!running) throw new Error('no app container to crash');
      cri.exitContainer(running.status.id, 1);
      let elapsed = 0;
      for (;;) {
        if (sameStep(step, n) && elapsed === step?.atMs) wall.step(step.stepMs);
        if ((await sync()).started.includes('app')) break;
        if (elapsed > 10 * MIN) throw new Error(`no restart ${elapsed / S} s after crash ${n + 1}`);
        clock.advance(S);
        elapsed += S;
      }
      delays.push(elapsed / S);
    }
    return delays;
  } finally {
    wall.restore();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Image pull back-off: a pull that always fails, tried every second; when each pull happened (s). */
export async function imagePullTimes(pulls: number, step?: Step): Promise<number[]> {
  const clock = createTestClock();
  const wall = processWallStepper(clock);
  try {
    const images = new FakeImageService({ clock: { now: clock.now, sleep } });
    images.injectError('pullImage', 'NOT_FOUND', { message: 'not found' });
    const manager = createImageManager({
      images,
      recorder: createMemoryRecorder(),
      monotonic: clock.monotonic,
      rateLimiter: { acquire: () => Promise.resolve(), waiting: () => 0 },
    });
    const p: KubeletPod = buildPod('pull', {
      namespace: 'clock',
      image: 'reg.example/app:1',
      containers: ['app'],
    });
    const container = p.spec.containers[0]!;
    const sandbox = { metadata: { name: 'pull', uid: 'uid-pull', namespace: 'clock', attempt: 0 } };
    const times: number[] = [];
    let t = 0;
    while (times.length < pulls && t <= 30 * MIN) {
      // `after`: the index of the failed pull whose back-off window the step falls in.
      if (sameStep(step, times.length - 1) && t === (times.at(-1) ?? 0) * S + (step?.atMs ?? 0)) {
        wall.step(step?.stepMs ?? 0);
      }
      const before = images.callsTo('pullImage').length;
      await manager.ensureImage(p, container, sandbox).catch(() => undefined);
      if (images.callsTo('pullImage').length > before) times.push(t / S);
      clock.advance(S);
      t += S;
    }
    return times;
  } finally {
    wall.restore();
  }
}

/** Lease renewals in `windowMs` (renewal every 10 s), a step at `atMs`; and whether renewTime only rose. */
export async function leaseRenewals(
  windowMs: number,
  step?: { atMs: number; stepMs: number },
): Promise<{ renewals: number; rising: boolean; lastVsWallMs: number }> {
  const cluster = new FakeCluster();
  const clock = new NodeClock();
  const wall = processWallStepper(clock);
  try {
    const lease = createLeaseController({
      api: cluster.client(),
      logger: nullLogger,
      holderIdentity: 'node-clock',
      namespace: 'kube-node-lease',
      leaseDurationSeconds: 40,
      renewIntervalMs: 10 * S,
      now: clock.now,
      sleep: clock.sleep,
      random: () => 0,
    });
    const ac = new AbortController();
    const running = lease.run(ac.signal);
    if (step) {
      await clock.advance(step.atMs);
      wall.step(step.stepMs);
      await clock.advance(windowMs - step.atMs);
    } else {
      await clock.advance(windowMs);
    }
    ac.abort();
    await running;
    const times = cluster.requests
      .filter((r) => r.method === 'PUT' || r.method === 'POST')
      .map((r) => Date.parse((r.body as Lease).spec?.renewTime ?? ''));
    const rising = times.every((t, i) => i === 0 || t > times[i - 1]!);
    return { renewals: times.length, rising, lastVsWallMs: (times.at(-1) ?? 0) - clock.now() };
  } finally {
    wall.restore();
  }
}

/**
 * Probes of a running container (period 10 s, `initialDelaySeconds`) over `windowMs`, with a step
 * at `atMs` (taken while a probe is in flight when it falls on one); when each probe ran (s).
 */
export async function probeTimes(
  windowMs: number,
  initialDelaySeconds: number,
  step?: { atMs: number; stepMs: number },
): Promise<number[]> {
  const clock = createProbeClock();
  const wall = processWallStepper(clock);
  try {
    const t0 = clock.monotonic();
    const at: number[] = [];
    const probe: Probe = { exec: { command: ['check'] }, periodSeconds: 10, initialDelaySeconds };
    const m = createProbeManager({
      exec: () => {
        const t = clock.monotonic() - t0;
        at.push(t / S);
        if (step && t === step.atMs) wall.step(step.stepMs);
        return Promise.resolve({ stdout: Buffer.from('ok'), stderr: Buffer.from(''), exitCode: 0 });
      },
      podIP: () => '10.0.0.2',
      recorder: createMemoryRecorder(),
      logger: nullLogger,
      onChange: () => {},
      now: () => clock.now(),
      monotonic: () => clock.monotonic(),
      random: () => 0,
      timers: clock.timers,
    });
    const uid = 'uid-probe';
    m.addPod(
      buildPod('probe', { namespace: 'clock', uid, containers: [{ name: 'app', livenessProbe: probe }] }),
    );
    m.updateContainers(uid, [{ name: 'app', containerId: 'c1', state: 'running', startedAt: clock.now() }]);
    if (step && step.atMs % (10 * S) !== 0) {
      await clock.advance(step.atMs);
      wall.step(step.stepMs);
      await clock.advance(windowMs - step.atMs);
    } else {
      await clock.advance(windowMs);
    }
    await m.stop();
    return at;
  } finally {
    wall.restore();
  }
}

/**
 * Memory eviction, passes every 10 s: a soft threshold (2 min grace) crossed at 0 s, relieved by
 * the eviction; when the eviction happened and when MemoryPressure cleared (s after the crossing),
 * a step at `stepAtMs`. Stats are stamped with the (stepping) wall clock, as the real ones.
 */
export async function evictionTimes(step?: {
  atMs: number;
  stepMs: number;
}): Promise<{ evictedAt: number | undefined; pressureClearedAt: number | undefined }> {
  const clock = createTestClock();
  const wall = processWallStepper(clock);
  try {
    const pods = [evictionPod('a', { priority: LOW_PRIORITY })];
    let available = 1500 * Mi;
    const soft: Threshold = {
      signal: 'memory.available',
      value: { quantity: 2 * Gi },
      gracePeriodMs: 2 * MIN,
    };
    const evicted: string[] = [];
    const manager = createEvictionManager(
      { thresholds: [soft], pressureTransitionPeriodMs: 5 * MIN, maxPodGracePeriodSeconds: 5 },
      {
        summary: () =>
          Promise.resolve(
            memorySummary(
              available,
              pods.map((p) => memoryStats(p, 100 * Mi)),
              clock.now(),
            ),
          ),
        hasDedicatedImageFs: () => Promise.resolve(false),
        activePods: () => pods.filter((p) => !evicted.includes(p.metadata.uid)),
        killPod: (p) => {
          evicted.push(p.metadata.uid);
          available = 3 * Gi;
          return Promise.resolve();
        },
        podCleanedUp: () => true,
        deleteAllUnusedContainers: () => Promise.resolve(),
        deleteUnusedImages: () => Promise.resolve(),
        recorder: { event: () => {} },
        nodeEvent: () => {},
        logger: nullLogger,
        monotonic: clock.monotonic,
        sleep: () => Promise.resolve(),
      },
    );
    let evictedAt: number | undefined;
    let pressureClearedAt: number | undefined;
    for (let t = 0; t <= 20 * MIN && pressureClearedAt === undefined; t += 10 * S) {
      if (step && t === step.atMs) wall.step(step.stepMs);
      await manager.synchronize();
      if (evictedAt === undefined && evicted.length > 0) evictedAt = t / S;
      if (evictedAt !== undefined && !manager.pressure().memory) pressureClearedAt = t / S;
      clock.advance(10 * S);
    }
    return { evictedAt, pressureClearedAt };
  } finally {
    wall.restore();
  }
}

/**
 * Service-account tokens of 1 h, asked for every 10 s (each pod sync) for `windowMs`: how many
 * TokenRequests, and the largest age a handed-out token had (its server lifetime used, in %).
 * The API server's clock never steps; the kubelet's wall clock steps at `atMs`.
 */
export async function tokenRequests(
  windowMs: number,
  step?: { atMs: number; stepMs: number },
): Promise<{ requests: number; maxLifetimeUsedPercent: number }> {
  const clock: TestClock = createTestClock();
  const wall = processWallStepper(clock);
  try {
    const serverNow = () => clock.monotonic() + 1_700_000_000_000;
    const api = new FakeApi();
    let issued = 0;
    const issuedAt = new Map<string, number>();
    api.respond('POST', /\/serviceaccounts\/[^/]+\/token$/, (req: ApiRequest) => {
      const body = req.body as { spec: TokenRequestSpec };
      const token = `tok-${++issued}`;
      issuedAt.set(token, serverNow());
      return {
        spec: body.spec,
        status: {
          token,
          expirationTimestamp: new Date(serverNow() + body.spec.expirationSeconds * S).toISOString(),
        },
      };
    });
    const tokens = createTokenManager({ api, monotonic: clock.monotonic, random: () => 0 });
    const spec: TokenRequestSpec = {
      audiences: [],
      expirationSeconds: 3600,
      boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-web' },
    };
    let maxUsed = 0;
    for (let t = 0; t <= windowMs; t += 10 * S) {
      if (step && t === step.atMs) wall.step(step.stepMs);
      const got = await tokens.getToken('clock', 'default', spec);
      const age = serverNow() - (issuedAt.get(got.token) ?? serverNow());
      maxUsed = Math.max(maxUsed, (age / (3600 * S)) * 100);
      clock.advance(10 * S);
    }
    return { requests: api.requestsFor('POST').length, maxLifetimeUsedPercent: maxUsed };
  } finally {
    wall.restore();
  }
}
