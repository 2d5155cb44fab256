/**
 * Clock steps (issue 13): the wall clock jumps — an NTP correction, a VM resumed after hours, the
 * date set by hand — backwards and forwards by hours while time goes on. The kubelet must keep its
 * back-offs, periods, leases, probes, evictions and tokens on real (monotonic) time.
 *
 * In-process, not on the bed, and on purpose: the machine's clock is shared and must not be set,
 * and stepping only a kubelet process's clock (a hook offsetting its Date.now) would leave
 * containerd's stamps on the old time, which no real step does. Here the fake CRI and the kubelet
 * read one stepped clock, as they would on a machine whose clock stepped.
 *
 * Two parts. Real time: the kubelet core (sync loop, pod workers, PLEG, runtime manager) on the
 * fake CRI with its production clocks, the process's Date.now stepped (and the API rate limiter
 * likewise); a few seconds. Virtual time (clock-virtual.ts): each component with its clock seams,
 * minutes and hours in milliseconds, compared with the same run without a step.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryRecorder } from '../../../src/api/events.ts';
import { createRateLimiter } from '../../../src/api/rate-limiter.ts';
import type { KubeletPod } from '../../../src/api/types.ts';
import { newKubelet, type Kubelet } from '../../../src/kubelet/index.ts';
import { testKubeletConfig } from '../../../src/config/testing.ts';
import { FakeKmsg } from '../../../src/oom/testing.ts';
import type { PodSource } from '../../../src/podsource/index.ts';
import { FakeImageService, FakeRuntimeService } from '../../../src/runtime/cri/testing.ts';
import { sleep } from '../../../src/util/abort.ts';
import { nullVolumeManager } from '../../../src/volume/testing.ts';
import { monotonicNow } from '../../../src/util/clock.ts';
import { describeError } from '../../../src/util/errors.ts';
import type { Logger } from '../../../src/util/logger.ts';
import { until as poll, UntilTimeout } from '../../kit/poll.ts';
import { buildPod } from '../../kit/pod.ts';
import { check, round, type Check, type ScenarioResult } from '../report.ts';
import type { Scenario, ScenarioContext } from '../scenario.ts';
import {
  crashLoopDelays,
  evictionTimes,
  imagePullTimes,
  leaseRenewals,
  probeTimes,
  processWallStepper,
  tokenRequests,
} from './clock-virtual.ts';

const S = 1_000;
const H = 3_600 * S;

/** Rep i steps back by BACK[i] and forward by FORWARD[i] hours. */
const BACK = [1, 6, 24, 2, 12];
const FORWARD = [2, 12, 48, 1, 6];
const hours = (ms: number) => `${ms > 0 ? '+' : '−'}${Math.abs(ms) / H} h`;

export const clockScenario: Scenario = {
  id: 'clock',
  fault: 'the wall clock steps back and forward by hours (NTP, VM resume, date set) while pods run',
  reps: { quick: 1, full: 3 },
  cluster: false,
  run,
};

async function run(ctx: ScenarioContext): Promise<ScenarioResult> {
  const started = monotonicNow();
  const checks: Check[] = [];
  const notes: string[] = [];
  const reps = Math.max(1, ctx.reps);
  const steps = Array.from({ length: reps }, (_, i) => ({
    back: -(BACK[i % BACK.length] ?? 1) * H,
    forward: (FORWARD[i % FORWARD.length] ?? 2) * H,
  }));

  const core: CoreFigures[] = [];
  for (const s of steps) {
    if (ctx.signal.aborted) break;
    core.push(await coreUnderSteps(s.back, s.forward, ctx.logger));
  }
  checks.push(...coreChecks(core, steps));
  checks.push(...(await virtualChecks(steps)));
  notes.push(
    `Steps per repetition: ${steps.map((s) => `${hours(s.back)} then ${hours(s.forward)}`).join('; ')}.`,
    'Upstream 1.20 under the same steps, from its source: the crash-loop window and the probes’ ' +
      'initialDelaySeconds compare the runtime’s wall stamps with the wall clock (a backward step holds ' +
      'a restart, or every probe of a new container, back for the length of the step; a forward one ends ' +
      'every window at once), the Lease renewTime is the wall time (a backward step makes renewals look ' +
      'stale to the node lifecycle controller), token refresh compares the wall clock with the API ' +
      'server’s expiry; its intervals (work queue, PLEG, eviction, rate limiter) carry monotonic readings.',
    'Real-time part: kubelet core on the fake CRI with its production clocks, the process’s Date.now ' +
      'stepped. Virtual-time part: each component through minutes or hours of virtual time.',
  );
  return {
    id: clockScenario.id,
    fault: clockScenario.fault,
    repetitions: core.length,
    checks,
    durationMs: monotonicNow() - started,
    notes,
  };
}

// ---- real time: the kubelet core with its production clocks ----

interface CoreFigures {
  /** Crash after the backward step → restarted and reported running (ms); undefined: never. */
  restartAfterBackMs: number | undefined;
  /** Resyncs in 3 s at syncFrequency 0.5 s, before and after the backward step. */
  resyncsBefore: number;
  resyncsAfter: number;
  /** healthz and the runtime's readiness right after the forward step. */
  healthyAfterForward: boolean;
  /** A crash inside its 10 s back-off window, then the forward step: restarts within 2.5 s (want 0). */
  restartsInWindowAfterForward: number;
  /** The API rate limiter (10 qps, burst 5, spent) after the backward step: 5 requests took (ms). */
  limiterAfterBackMs: number;
}

function podSource(): PodSource & { send(pods: KubeletPod[]): void } {
  let deliver: ((pods: KubeletPod[]) => void) | undefined;
  let last: KubeletPod[] | undefined;
  return {
    name: 'file',
    start(send) {
      deliver = send;
      if (last) send(last);
    },
    stop: () => Promise.resolve(),
    send(pods) {
      last = pods;
      deliver?.(pods);
    },
  };
}

/** The kit's poll-until (monotonic), `undefined` when it times out. */
function until<T>(get: () => T | undefined | false, timeoutMs: number): Promise<T | undefined> {
  // Not within the time is an answer here (the scenario's checks report it), not a failure.
  return poll('the pod', get, { timeoutMs }).catch((err: unknown) => {
    if (err instanceof UntilTimeout) return undefined;
    throw err;
  });
}

async function coreUnderSteps(backMs: number, forwardMs: number, logger: Logger): Promise<CoreFigures> {
  const wall = processWallStepper();
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-clock-'));
  const cri = new FakeRuntimeService();
  let syncs = 0;
  const src = podSource();
  const kubelet: Kubelet = await newKubelet(
    testKubeletConfig({
      nodeName: 'clock',
      rootDir: dir,
      podLogsDir: join(dir, 'logs'),
      syncFrequencyMs: 500,
    }),
    {
      version: 'reliability',
      nodeIP: '192.0.2.10',
      runtimeService: cri,
      imageService: new FakeImageService(),
      sources: [src],
      recorder: createMemoryRecorder(),
      logger,
      openKmsg: new FakeKmsg().opener,
      imageFsUsage: () => Promise.resolve({ capacityBytes: 100, availableBytes: 90 }),
      node: () => ({
        name: 'clock',
        labels: {},
        allocatable: { milliCPU: 2000, memory: 4 << 30, pods: 110 },
      }),
      managers: {
        volumes: nullVolumeManager({
          setUpPodVolumes: () => {
            syncs++;
            return Promise.resolve();
          },
        }),
      },
      random: () => 0,
    },
  );
  const app = () =>
    kubelet.pods().find((p) => p.pod.metadata.uid === 'uid-clock')?.status?.containerStatuses?.[0];
  const crash = () => {
    const c = cri.latestContainer('app', 'uid-clock');
    if (c?.status.state === 'CONTAINER_RUNNING') cri.exitContainer(c.status.id, 1);
  };
  const syncsIn = async (ms: number) => {
    const before = syncs;
    await sleep(ms);
    return syncs - before;
  };
  const running = kubelet.run();
  try {
    src.send([
      buildPod('clock', {
        namespace: 'clock',
        annotations: { 'kubernetes.io/config.source': 'file' },
        containers: ['app'],
        terminationGracePeriodSeconds: 1,
      }),
    ]);
    await until(() => app()?.state?.running, 10 * S);
    const resyncsBefore = await syncsIn(3 * S);

    wall.step(backMs);
    const resyncsAfter = await syncsIn(3 * S); // a quiet pod: periodic resyncs only
    const t0 = monotonicNow();
    crash();
    const restarted = await until(() => app()?.restartCount === 1 && app()?.state?.running, 10 * S);
    const restartAfterBackMs = restarted ? monotonicNow() - t0 : undefined;

    const limiter = createRateLimiter(10, 5);
    for (let i = 0; i < 5; i++) await limiter.acquire();
    wall.step(backMs);
    const l0 = monotonicNow();
    const five = Promise.all(Array.from({ length: 5 }, () => limiter.acquire(AbortSignal.timeout(10 * S))));
    await five.catch(() => undefined);
    const limiterAfterBackMs = monotonicNow() - l0;
    wall.step(-backMs);

    crash(); // the second crash: a 10 s window
    await sleep(1_500);
    wall.step(forwardMs);
    const healthyAfterForward = kubelet.healthz().ok && kubelet.runtimeReady().ok;
    await sleep(2_500);
    const restartsInWindowAfterForward = (app()?.restartCount ?? 0) - 1;
    return {
      restartAfterBackMs,
      resyncsBefore,
      resyncsAfter,
      healthyAfterForward,
      restartsInWindowAfterForward,
      limiterAfterBackMs,
    };
  } finally {
    wall.restore();
    await kubelet.stop();
    await running;
    await rm(dir, { recursive: true, force: true });
  }
}

function coreChecks(figs: CoreFigures[], steps: { back: number; forward: number }[]): Check[] {
  const per = (f: (x: CoreFigures) => string) => figs.map(f).join(' / ');
  const tag = steps.map((s) => hours(s.back)).join(' / ');
  const fwd = steps.map((s) => hours(s.forward)).join(' / ');
  return [
    check(
      `core: a container crashing after a ${tag} step is restarted and reported running within`,
      '≤ 3 s (first crash: immediate, as without a step)',
      per((f) =>
        f.restartAfterBackMs === undefined ? 'never (10 s)' : `${round(f.restartAfterBackMs / S)} s`,
      ),
      figs.every((f) => f.restartAfterBackMs !== undefined && f.restartAfterBackMs <= 3 * S),
    ),
    check(
      `core: pod resyncs in 3 s (syncFrequency 0.5 s, 1 s tick) after a ${tag} step`,
      '≥ 2, as before the step',
      per((f) => `${f.resyncsAfter} (before: ${f.resyncsBefore})`),
      figs.every((f) => f.resyncsAfter >= 2 && f.resyncsBefore >= 2),
    ),
    check(
      `core: healthz and runtime readiness (PLEG, runtime status age) right after a ${fwd} step`,
      'ok',
      per((f) => (f.healthyAfterForward ? 'ok' : 'not ok')),
      figs.every((f) => f.healthyAfterForward),
    ),
    check(
      `core: restarts of a container inside its 10 s back-off window within 2.5 s of a ${fwd} step`,
      '0 (upstream: the window ends at once)',
      per((f) => String(f.restartsInWindowAfterForward)),
      figs.every((f) => f.restartsInWindowAfterForward === 0),
    ),
    check(
      `API rate limiter (10 qps, burst spent) after a ${tag} step: 5 requests served in`,
      '≤ 1.5 s (0.5 s of tokens)',
      per((f) => `${round(f.limiterAfterBackMs / S)} s`),
      figs.every((f) => f.limiterAfterBackMs <= 1.5 * S),
    ),
  ];
}

// ---- virtual time: each component through minutes or hours ----

const list = (xs: readonly (number | undefined)[], unit = 's') => `[${xs.join(', ')}] ${unit}`;
const same = (a: readonly (number | undefined)[], b: readonly (number | undefined)[]) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

async function virtualChecks(steps: { back: number; forward: number }[]): Promise<Check[]> {
  const checks: Check[] = [];
  /** One figure list, without a step and under each rep's backward and forward step. */
  const compare = async (
    what: string,
    measure: (stepMs?: number) => Promise<(number | undefined)[]>,
    unit = 's',
  ) => {
    let base: (number | undefined)[];
    const runs: { step: number; got: (number | undefined)[] }[] = [];
    try {
      base = await measure();
      for (const s of steps) {
        runs.push({ step: s.back, got: await measure(s.back) });
        runs.push({ step: s.forward, got: await measure(s.forward) });
      }
    } catch (err) {
      checks.push(
        check(what, 'figures as without a step', `measurement failed: ${describeError(err)}`, false),
      );
      return;
    }
    const bad = runs.filter((r) => !same(r.got, base));
    checks.push(
      check(
        `${what} (steps ${runs.map((r) => hours(r.step)).join(', ')})`,
        `${list(base, unit)}, as without a step`,
        bad.length === 0
          ? `${list(base, unit)} in ${runs.length}/${runs.length} runs`
          : bad.map((r) => `${hours(r.step)}: ${list(r.got, unit)}`).join('; '),
        bad.length === 0,
      ),
    );
  };

  await compare(
    'crash-loop back-off: restart delays after 5 crashes, the step 5 s into the 3rd window',
    (st) => crashLoopDelays(5, st === undefined ? undefined : { after: 2, atMs: 5 * S, stepMs: st }),
  );
  await compare(
    'image pull back-off: pull times of a failing image, the step 5 s into the 3rd window',
    (st) => imagePullTimes(5, st === undefined ? undefined : { after: 2, atMs: 5 * S, stepMs: st }),
  );
  await compare(
    'node Lease: renewals in 60 s (every 10 s), the step at 25 s',
    async (st) => [
      (await leaseRenewals(60 * S, st === undefined ? undefined : { atMs: 25 * S, stepMs: st })).renewals,
    ],
    'renewals',
  );
  const rising: string[] = [];
  for (const s of steps) {
    for (const st of [s.back, s.forward]) {
      const r = await leaseRenewals(60 * S, { atMs: 25 * S, stepMs: st });
      if (!r.rising) rising.push(hours(st));
    }
  }
  checks.push(
    check(
      'node Lease: renewTime strictly rising across every step (the node lifecycle controller only counts a later one)',
      'rising in every run',
      rising.length === 0
        ? `rising in ${steps.length * 2}/${steps.length * 2} runs`
        : `fell: ${rising.join(', ')}`,
      rising.length === 0,
    ),
  );
  await compare(
    'liveness probe (period 10 s): probe times in 60 s, the step during the probe at 20 s',
    (st) => probeTimes(60 * S, 0, st === undefined ? undefined : { atMs: 20 * S, stepMs: st }),
  );
  await compare('probe with initialDelaySeconds 30: probe times in 60 s, the step at 5 s', (st) =>
    probeTimes(60 * S, 30, st === undefined ? undefined : { atMs: 5 * S, stepMs: st }),
  );
  await compare(
    'eviction: soft memory threshold (grace 2 min) evicts at, MemoryPressure clears at (transition 5 min), the step at 30 s',
    async (st) => {
      const r = await evictionTimes(st === undefined ? undefined : { atMs: 30 * S, stepMs: st });
      return [r.evictedAt, r.pressureClearedAt];
    },
  );
  await compare(
    'service-account token (1 h): TokenRequests in 1 h of syncs every 10 s, max lifetime used before refresh, the step at 1 min',
    async (st) => {
      const r = await tokenRequests(H, st === undefined ? undefined : { atMs: 60 * S, stepMs: st });
      return [r.requests, Math.round(r.maxLifetimeUsedPercent)];
    },
    '(requests, % lifetime)',
  );
  return checks;
}
