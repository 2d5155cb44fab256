import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMemoryRecorder, type EventType } from '../api/events.ts';
import type { KubeletPod, Toleration } from '../api/types.ts';
import type { PodStats, Summary } from '../stats/index.ts';
import { flush, recordingLogger } from '../util/testing.ts';
import {
  createEvictionManager,
  EVICTED_REASON,
  EVICTION_MONITORING_PERIOD_MS,
  type EvictionConfig,
  type EvictionManager,
} from './manager.ts';
import type { Threshold } from './signals.ts';
import {
  container,
  containerMemoryStats,
  DEFAULT_PRIORITY,
  diskStats,
  diskSummary,
  Gi,
  HIGH_PRIORITY,
  LOW_PRIORITY,
  memoryStats,
  memorySummary,
  Mi,
  names,
  nodeSummary,
  pod,
  processStats,
} from './testing.ts';
import { until as poll } from '../../test/kit/poll.ts';

const T0 = Date.parse('2026-01-10T08:00:00Z');
const MIN = 60_000;

const hard = (signal: Threshold['signal'], quantity: number, minReclaim?: number): Threshold => ({
  signal,
  value: { quantity },
  gracePeriodMs: 0,
  ...(minReclaim === undefined ? {} : { minReclaim: { quantity: minReclaim } }),
});
const soft = (signal: Threshold['signal'], quantity: number, gracePeriodMs: number): Threshold => ({
  signal,
  value: { quantity },
  gracePeriodMs,
});

interface Kill {
  pod: string;
  grace: number;
  status: { reason: string; message: string };
}

/**
 * The manager on a fake clock and a fake sleep (which advances the clock and yields a turn of the
 * event loop), with the kubelet's answers the test sets: the summary (or an error), the active pods,
 * whether the image filesystem is dedicated, what node-level GC does. `calls` records, in order,
 * every summary, GC, event and kill.
 */
function setup(cfg: Partial<EvictionConfig> & { thresholds: readonly Threshold[] }) {
  const recorder = createMemoryRecorder();
  const logger = recordingLogger();
  const h = {
    now: T0,
    summary: memorySummary(100 * Gi) as Summary<number> | Error,
    /** What the summary becomes once node-level GC has run (upstream mockDiskGC summaryAfterGC). */
    afterGC: undefined as Summary<number> | Error | undefined,
    gcError: undefined as Error | undefined,
    dedicatedImageFs: false as boolean | Error,
    pods: [] as KubeletPod[],
    activePodsError: undefined as Error | undefined,
    killError: undefined as Error | undefined,
    /** Runs after each kill (e.g. to relieve the pressure). */
    onKill: undefined as ((p: KubeletPod) => void) | undefined,
    cleanedUp: (_uid: string): boolean => true,
    killed: [] as Kill[],
    calls: [] as string[],
    signals: [] as AbortSignal[],
    sleeps: [] as number[],
    nodeEvents: [] as { type: EventType; reason: string; message: string }[],
    evictions: [] as string[],
    /** kubelet_eviction_stats_age_seconds observations, as `signal seconds`. */
    statsAges: [] as string[],
    recorder,
    logger,
    manager: undefined as unknown as EvictionManager,
    /** Advances the clock, sets the summary, runs one pass; the UIDs of the evicted pods. */
    async pass(advanceMs: number, summary?: Summary<number> | Error): Promise<string[]> {
      h.now += advanceMs;
      if (summary) h.summary = summary;
      return names(await h.manager.synchronize());
    },
    logged(level: string, pattern: RegExp) {
      return logger.lines.filter((l) => l.level === level && pattern.test(l.msg));
    },
  };
  /** upstream mockDiskGC: records the call, may change the summary, may fail. */
  async function gc(what: string): Promise<void> {
    h.calls.push(what);
    await flush(1);
    if (h.afterGC) h.summary = h.afterGC;
    if (h.gcError) throw h.gcError;
  }
  h.manager = createEvictionManager(
    { pressureTransitionPeriodMs: 5 * MIN, maxPodGracePeriodSeconds: 5, ...cfg },
    {
      summary(signal) {
        h.calls.push('summary');
        h.signals.push(signal);
        const s = h.summary;
        return s instanceof Error ? Promise.reject(s) : Promise.resolve(structuredClone(s));
      },
      hasDedicatedImageFs() {
        h.calls.push('dedicatedImageFs');
        const d = h.dedicatedImageFs;
        return d instanceof Error ? Promise.reject(d) : Promise.resolve(d);
      },
      activePods() {
        if (h.activePodsError) throw h.activePodsError;
        return h.pods;
      },
      async killPod(p, grace, status) {
        h.calls.push(`kill:${p.metadata.uid}`);
        h.killed.push({ pod: p.metadata.uid, grace, status });
        await flush(1);
        h.onKill?.(p);
        if (h.killError) throw h.killError;
      },
      podCleanedUp: (uid) => h.cleanedUp(uid),
      deleteAllUnusedContainers: () => gc('containers'),
      deleteUnusedImages: () => gc('images'),
      recorder: {
        event(p, type, reason, message) {
          h.calls.push(`event:${reason}`);
          recorder.event(p, type, reason, message);
        },
      },
      nodeEvent(type, reason, message) {
        h.calls.push(`nodeEvent:${reason}`);
        h.nodeEvents.push({ type, reason, message });
      },
      recordEviction: (signal) => h.evictions.push(signal),
      recordEvictionStatsAge: (signal, seconds) => h.statsAges.push(`${signal} ${seconds}`),
      now: () => h.now,
      logger,
      monotonic: () => h.now,
      async sleep(ms) {
        h.calls.push(`sleep:${ms}`);
        h.sleeps.push(ms);
        h.now += ms;
        await new Promise<void>((r) => setImmediate(r));
      },
    },
  );
  return h;
}

/** Waits (event-loop turns, never wall time) until `cond` holds. */
const until = (cond: () => boolean, what = 'condition') => poll(what, cond, { intervalMs: 0 });

/** upstream TestMemoryPressure's pods: the last one (best effort, low priority, low usage) goes first. */
function memoryPods() {
  const guaranteed = { requests: { cpu: '100m', memory: '1Gi' }, limits: { cpu: '100m', memory: '1Gi' } };
  const burstable = { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '200m', memory: '1Gi' } };
  const pods = [
    pod('guaranteed-low-priority-high-usage', { priority: LOW_PRIORITY, ...guaranteed }),
    pod('burstable-below-requests', { priority: DEFAULT_PRIORITY, ...burstable }),
    pod('burstable-above-requests', { priority: DEFAULT_PRIORITY, ...burstable }),
    pod('best-effort-high-priority-high-usage', { priority: HIGH_PRIORITY }),
    pod('best-effort-low-priority-low-usage', { priority: LOW_PRIORITY }),
  ];
  const usage = [900 * Mi, 50 * Mi, 400 * Mi, 400 * Mi, 100 * Mi];
  const stats = pods.map((p, i) => memoryStats(p, usage[i] ?? 0));
  return { pods, stats, toEvict: 'best-effort-low-priority-low-usage' };
}

/** upstream TestDiskPressureNodeFs's pods (no volumes): the first one (low priority, 900Mi rootfs) goes first. */
function diskPods() {
  const burstable = { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '200m', memory: '1Gi' } };
  const pods = [
    pod('low-priority-high-usage', {
      priority: LOW_PRIORITY,
      requests: { cpu: '100m', memory: '1Gi' },
      limits: { cpu: '100m', memory: '1Gi' },
    }),
    pod('below-requests', { priority: DEFAULT_PRIORITY, ...burstable }),
    pod('above-requests', { priority: DEFAULT_PRIORITY, ...burstable }),
    pod('high-priority-high-usage', { priority: HIGH_PRIORITY }),
    pod('low-priority-low-usage', { priority: LOW_PRIORITY }),
  ];
  const stats = [
    diskStats(pods[0] ?? pod('x'), { root: 900 * Mi }),
    diskStats(pods[1] ?? pod('x'), { logs: 50 * Mi }),
    diskStats(pods[2] ?? pod('x'), { root: 400 * Mi }),
    diskStats(pods[3] ?? pod('x'), { perVolume: 400 * Mi }),
    diskStats(pods[4] ?? pod('x'), { root: 100 * Mi }),
  ];
  return { pods, stats, toEvict: 'low-priority-high-usage' };
}

const bestEffort = (name = 'best-admit', extra: { tolerations?: Toleration[] } = {}) => pod(name, extra);
const burstable = pod('burst-admit', {
  requests: { cpu: '100m', memory: '100Mi' },
  limits: { cpu: '200m', memory: '200Mi' },
});
const guaranteed = pod('guaranteed-admit', {
  requests: { cpu: '100m', memory: '1Gi' },
  limits: { cpu: '100m', memory: '1Gi' },
});

/** A manager whose last pass observed exactly the given pressures (no active pods, so nobody evicted). */
async function underPressure(...which: ('memory' | 'disk' | 'pid')[]) {
  const h = setup({
    thresholds: [hard('memory.available', Gi), hard('nodefs.available', Gi), hard('pid.available', 100)],
  });
  await h.pass(
    0,
    nodeSummary({
      memory: which.includes('memory') ? 500 * Mi : 2 * Gi,
      nodefs: which.includes('disk') ? 500 * Mi : 2 * Gi,
      pids: which.includes('pid') ? [1000, 950] : [1000, 10],
    }),
  );
  return h;
}

describe('admit (upstream Admit)', () => {
  it('admits every pod before any pass', () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    for (const p of [bestEffort(), burstable, guaranteed])
      assert.deepEqual(h.manager.admit(p), { admit: true });
  });

  it('admits every pod when no threshold is crossed', async () => {
    const h = await underPressure();
    assert.deepEqual(h.manager.pressure(), { memory: false, disk: false, pid: false });
    for (const p of [bestEffort(), burstable, guaranteed])
      assert.deepEqual(h.manager.admit(p), { admit: true });
  });

  it('refuses a BestEffort pod under MemoryPressure, reason Evicted', async () => {
    const h = await underPressure('memory');
    assert.deepEqual(h.manager.admit(bestEffort()), {
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [MemoryPressure]. ',
    });
    assert.equal(EVICTED_REASON, 'Evicted');
  });

  it('admits Burstable and Guaranteed pods under MemoryPressure', async () => {
    const h = await underPressure('memory');
    assert.deepEqual(h.manager.admit(burstable), { admit: true });
    assert.deepEqual(h.manager.admit(guaranteed), { admit: true });
  });

  it('admits a BestEffort pod that tolerates the memory-pressure taint', async () => {
    const h = await underPressure('memory');
    const tolerating: Toleration[][] = [
      [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }],
      [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists' }],
      [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Equal' }],
      [{ key: 'node.kubernetes.io/memory-pressure' }],
      [{ operator: 'Exists' }],
      [{ operator: 'Exists', effect: 'NoSchedule' }],
      [{ key: 'node.kubernetes.io/disk-pressure', operator: 'Exists' }, { operator: 'Exists' }],
    ];
    for (const tolerations of tolerating) {
      assert.deepEqual(
        h.manager.admit(bestEffort('tolerant', { tolerations })),
        { admit: true },
        JSON.stringify(tolerations),
      );
    }
  });

  it('refuses a BestEffort pod whose tolerations do not cover the memory-pressure taint', async () => {
    const h = await underPressure('memory');
    const notTolerating: Toleration[][] = [
      [{ key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' }],
      [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoExecute' }],
      [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'PreferNoSchedule' }],
      [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Equal', value: 'true' }],
      [{ operator: 'Exists', effect: 'NoExecute' }],
    ];
    for (const tolerations of notTolerating) {
      assert.equal(
        h.manager.admit(bestEffort('intolerant', { tolerations })).admit,
        false,
        JSON.stringify(tolerations),
      );
    }
  });

  it('refuses every non-critical pod under DiskPressure', async () => {
    const h = await underPressure('disk');
    for (const p of [bestEffort(), burstable, guaranteed]) {
      assert.deepEqual(h.manager.admit(p), {
        admit: false,
        reason: 'Evicted',
        message: 'The node had condition: [DiskPressure]. ',
      });
    }
  });

  it('refuses a BestEffort pod tolerating memory pressure under DiskPressure', async () => {
    const h = await underPressure('disk');
    const p = bestEffort('tolerant', {
      tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists' }],
    });
    assert.equal(h.manager.admit(p).admit, false);
  });

  it('refuses every non-critical pod under MemoryPressure and DiskPressure together (upstream TestAdmitUnderNodeConditions)', async () => {
    const h = await underPressure('memory', 'disk');
    for (const p of [bestEffort(), burstable, guaranteed]) {
      const r = h.manager.admit(p);
      assert.equal(r.admit, false);
      assert.equal(r.reason, 'Evicted');
      const listed = /^The node had condition: \[(.*)\]\. $/.exec(r.message ?? '')?.[1]?.split(' ');
      assert.deepEqual(listed?.sort(), ['DiskPressure', 'MemoryPressure']);
    }
  });

  it('refuses every non-critical pod under PIDPressure', async () => {
    const h = await underPressure('pid');
    for (const p of [bestEffort(), burstable, guaranteed]) {
      assert.deepEqual(h.manager.admit(p), {
        admit: false,
        reason: 'Evicted',
        message: 'The node had condition: [PIDPressure]. ',
      });
    }
  });

  it('admits critical pods under DiskPressure: static, mirror and system-critical priority', async () => {
    const h = await underPressure('disk', 'memory', 'pid');
    const critical = [
      pod('static-file', { annotations: { 'kubernetes.io/config.source': 'file' } }),
      pod('static-http', { annotations: { 'kubernetes.io/config.source': 'http' } }),
      pod('mirror', { annotations: { 'kubernetes.io/config.mirror': 'abc' } }),
      pod('system-critical', { priority: 2_000_000_000 }),
      pod('system-node-critical', { priority: 2_000_001_000 }),
    ];
    for (const p of critical) assert.deepEqual(h.manager.admit(p), { admit: true }, p.metadata.name);
  });

  it('does not count an API pod or a priority just below 2e9 as critical', async () => {
    const h = await underPressure('disk');
    assert.equal(
      h.manager.admit(pod('api', { annotations: { 'kubernetes.io/config.source': 'api' } })).admit,
      false,
    );
    assert.equal(h.manager.admit(pod('high', { priority: 1_999_999_999 })).admit, false);
  });
});

describe('synchronize: memory (upstream TestMemoryPressure, TestMinReclaim, TestAllocatableMemoryPressure)', () => {
  it('reports MemoryPressure on a soft crossing, evicts after the grace period with evictionMaxPodGracePeriod, at once with grace 0 on a hard one, and holds the condition for the transition period', async () => {
    const h = setup({
      thresholds: [hard('memory.available', Gi), soft('memory.available', 2 * Gi, 2 * MIN)],
    });
    const { pods, stats, toEvict } = memoryPods();
    h.pods = pods;
    const at = (available: number) => memorySummary(available, stats);

    assert.deepEqual(await h.pass(0, at(2 * Gi)), []);
    assert.equal(h.manager.pressure().memory, false);
    assert.equal(h.manager.admit(bestEffort()).admit, true);

    // The soft threshold is crossed: pressure at once, no eviction before the grace period.
    assert.deepEqual(await h.pass(MIN, at(1500 * Mi)), []);
    assert.equal(h.manager.pressure().memory, true);
    assert.deepEqual([...h.killed], []);

    // Past the grace period: the best-effort low-priority pod goes, with the max pod grace period.
    assert.deepEqual(await h.pass(3 * MIN, at(1500 * Mi)), [toEvict]);
    assert.equal(h.manager.pressure().memory, true);
    assert.deepEqual(
      h.killed.map((k) => `${k.pod} grace=${k.grace}`),
      [`${toEvict} grace=5`],
    );
    h.killed.length = 0;

    // Pressure gone long enough: no condition.
    assert.deepEqual(await h.pass(20 * MIN, at(3 * Gi)), []);
    assert.equal(h.manager.pressure().memory, false);

    // The hard threshold is crossed: the same pod goes at once, grace 0.
    assert.deepEqual(await h.pass(MIN, at(500 * Mi)), [toEvict]);
    assert.equal(h.manager.pressure().memory, true);
    assert.deepEqual(
      h.killed.map((k) => `${k.pod} grace=${k.grace}`),
      [`${toEvict} grace=0`],
    );
    assert.equal(h.manager.admit(bestEffort()).admit, false);
    assert.equal(h.manager.admit(burstable).admit, true);
    h.killed.length = 0;

    // Relieved, but within the transition period: still MemoryPressure, nobody evicted.
    assert.deepEqual(await h.pass(MIN, at(2 * Gi)), []);
    assert.equal(h.manager.pressure().memory, true);
    assert.equal(h.manager.admit(bestEffort()).admit, false);
    assert.equal(h.manager.admit(burstable).admit, true);

    // Past the transition period: no pressure, everything admitted.
    assert.deepEqual(await h.pass(5 * MIN, at(2 * Gi)), []);
    assert.equal(h.manager.pressure().memory, false);
    assert.equal(h.manager.admit(bestEffort()).admit, true);
    assert.equal(h.manager.admit(burstable).admit, true);
    assert.deepEqual([...h.killed], []);
  });

  it('keeps evicting until the minimum reclaim is met, then holds the condition for the transition period', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi, 500 * Mi)] });
    const { pods, stats, toEvict } = memoryPods();
    h.pods = pods;
    const at = (available: number) => memorySummary(available, stats);

    assert.deepEqual(await h.pass(0, at(2 * Gi)), []);
    assert.equal(h.manager.pressure().memory, false);
    assert.deepEqual(await h.pass(MIN, at(500 * Mi)), [toEvict]);
    // Above the threshold but below threshold + min reclaim: still evicting.
    assert.deepEqual(await h.pass(MIN, at(1.2 * Gi)), [toEvict]);
    assert.equal(h.manager.pressure().memory, true);
    // Above threshold + min reclaim: nobody evicted, pressure held.
    assert.deepEqual(await h.pass(MIN, at(2 * Gi)), []);
    assert.equal(h.manager.pressure().memory, true);
    assert.deepEqual(await h.pass(5 * MIN, at(2 * Gi)), []);
    assert.equal(h.manager.pressure().memory, false);
    assert.deepEqual(
      h.killed.map((k) => k.grace),
      [0, 0],
    );
  });

  it('evicts on the allocatable memory threshold and reports MemoryPressure', async () => {
    const h = setup({ thresholds: [hard('allocatableMemory.available', Gi)] });
    const { pods, stats, toEvict } = memoryPods();
    h.pods = pods;
    assert.deepEqual(await h.pass(0, memorySummary(4 * Gi, stats)), []);
    assert.equal(h.manager.admit(bestEffort()).admit, true);
    // A pod the kubelet no longer counts as active still shows in the summary.
    const extra = pod('guaranteed-high-2', { requests: { memory: '1Gi' }, limits: { memory: '1Gi' } });
    assert.deepEqual(await h.pass(MIN, memorySummary(500 * Mi, [...stats, memoryStats(extra, Gi)])), [
      toEvict,
    ]);
    assert.equal(h.manager.pressure().memory, true);
    assert.equal(h.killed[0]?.grace, 0);
    assert.equal(h.manager.admit(bestEffort()).admit, false);
    assert.equal(h.manager.admit(burstable).admit, true);
    assert.deepEqual(await h.pass(MIN, memorySummary(2 * Gi, stats)), []);
    assert.equal(h.manager.pressure().memory, true);
    assert.deepEqual(await h.pass(5 * MIN, memorySummary(2 * Gi, stats)), []);
    assert.equal(h.manager.pressure().memory, false);
    assert.equal(h.manager.admit(bestEffort()).admit, true);
    assert.deepEqual(h.evictions, ['allocatableMemory.available']);
  });

  it('observes the age of the stats an eviction acts on, by signal, and none for stats without a time', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    const { pods, stats, toEvict } = memoryPods();
    h.pods = pods;
    assert.deepEqual(await h.pass(MIN, memorySummary(500 * Mi, stats, h.now + MIN - 7_000)), [toEvict]);
    assert.deepEqual(h.statsAges, ['memory.available 7']);
    h.pods = pods.filter((p) => p.metadata.uid !== toEvict);
    assert.equal((await h.pass(MIN, memorySummary(500 * Mi, stats, 0))).length, 1);
    assert.deepEqual(h.statsAges, ['memory.available 7'], 'a zero time is no observation (upstream IsZero)');
  });

  it('never evicts a critical pod, even the only candidate (upstream TestStaticCriticalPodsAreNotEvicted)', async () => {
    const h = setup({
      thresholds: [hard('memory.available', Gi), soft('memory.available', 2 * Gi, 2 * MIN)],
    });
    const critical = pod('critical', {
      priority: 2_000_000_000,
      requests: { cpu: '100m', memory: '1Gi' },
      limits: { cpu: '100m', memory: '1Gi' },
      annotations: { 'kubernetes.io/config.source': 'file' },
    });
    h.pods = [critical];
    const stats = [memoryStats(critical, 800 * Mi)];
    assert.deepEqual(await h.pass(MIN, memorySummary(1500 * Mi, stats)), []);
    assert.equal(h.manager.pressure().memory, true);
    assert.deepEqual(await h.pass(3 * MIN, memorySummary(1500 * Mi, stats)), []);
    assert.deepEqual([...h.killed], []);
    // Static without a priority is still critical.
    delete critical.spec.priority;
    assert.deepEqual(await h.pass(20 * MIN, memorySummary(500 * Mi, stats)), []);
    assert.equal(h.manager.pressure().memory, true);
    assert.deepEqual([...h.killed], []);
    assert.deepEqual([...h.recorder.events], []);
    assert.deepEqual([...h.evictions], []);
    assert.ok(h.logged('error', /cannot evict a critical pod/).length >= 2);
    assert.equal(h.logged('info', /unable to evict any pods/).length, 2);
  });

  it('skips a critical pod ranked first and evicts the next one', async () => {
    const mirror = pod('mirror', {
      priority: LOW_PRIORITY,
      annotations: { 'kubernetes.io/config.mirror': 'x' },
    });
    const staticPod = pod('static', {
      priority: LOW_PRIORITY,
      annotations: { 'kubernetes.io/config.source': 'file' },
    });
    const plain = pod('plain', { priority: HIGH_PRIORITY });
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    h.pods = [mirror, staticPod, plain];
    const stats = [memoryStats(mirror, 2 * Gi), memoryStats(staticPod, Gi), memoryStats(plain, Mi)];
    assert.deepEqual(await h.pass(0, memorySummary(500 * Mi, stats)), ['plain']);
    assert.deepEqual(
      h.logged('error', /cannot evict a critical pod/).map((l) => l.fields['pod']),
      ['ns/mirror', 'ns/static'],
    );
  });

  it('evicts at most one pod per pass', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    const { pods, stats } = memoryPods();
    h.pods = pods;
    assert.equal((await h.pass(0, memorySummary(100 * Mi, stats))).length, 1);
    assert.equal(h.killed.length, 1);
  });

  it('reclaims memory before any other starved resource, without node-level GC', async () => {
    const h = setup({
      thresholds: [hard('nodefs.available', Gi), hard('pid.available', 100), hard('memory.available', Gi)],
    });
    const hog = pod('memory-hog');
    const filler = pod('disk-filler');
    h.pods = [filler, hog];
    const stats: PodStats<number>[] = [
      { ...diskStats(filler, { root: 10 * Gi }), memory: { time: 0, workingSetBytes: Mi } },
      { ...diskStats(hog, { root: Mi }), memory: { time: 0, workingSetBytes: 10 * Gi } },
    ];
    assert.deepEqual(
      await h.pass(0, nodeSummary({ memory: 100 * Mi, nodefs: 100 * Mi, pids: [1000, 990] }, stats)),
      ['memory-hog'],
    );
    assert.deepEqual(h.nodeEvents, [
      { type: 'Warning', reason: 'EvictionThresholdMet', message: 'Attempting to reclaim memory' },
    ]);
    assert.ok(!h.calls.includes('containers') && !h.calls.includes('images'));
    assert.deepEqual(h.evictions, ['memory.available']);
    assert.deepEqual(h.manager.pressure(), { memory: true, disk: true, pid: true });
  });

  it('does not act twice on the same measurement (stale observations)', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    const { pods, stats, toEvict } = memoryPods();
    h.pods = pods;
    assert.deepEqual(await h.pass(0, memorySummary(500 * Mi, stats, T0)), [toEvict]);
    assert.deepEqual(await h.pass(10_000, memorySummary(500 * Mi, stats, T0)), []);
    assert.equal(h.manager.pressure().memory, true, 'the condition stays');
    assert.deepEqual(h.nodeEvents.length, 1);
    assert.deepEqual(await h.pass(10_000, memorySummary(500 * Mi, stats, T0 + 10_000)), [toEvict]);
  });
});

describe('synchronize: what an eviction records', () => {
  function oneHog() {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    const hog = pod('hog', { containers: [container('x')] });
    h.pods = [hog];
    h.summary = memorySummary(500 * Mi, [containerMemoryStats(hog, { x: Gi })]);
    return h;
  }
  const message =
    'The node was low on resource: memory. Container x was using 1Gi, which exceeds its request of 0. ';

  it('kills the pod with reason Evicted and the eviction message', async () => {
    const h = oneHog();
    assert.deepEqual(await h.pass(0), ['hog']);
    assert.deepEqual(h.killed, [{ pod: 'hog', grace: 0, status: { reason: 'Evicted', message } }]);
  });

  it('records the Evicted pod event before killing the pod', async () => {
    const h = oneHog();
    await h.pass(0);
    assert.deepEqual(h.recorder.events, [{ pod: 'ns/hog', type: 'Warning', reason: 'Evicted', message }]);
    assert.ok(h.calls.indexOf('event:Evicted') < h.calls.indexOf('kill:hog'));
  });

  it('records the EvictionThresholdMet node event before reclaiming', async () => {
    const h = oneHog();
    await h.pass(0);
    assert.deepEqual(h.nodeEvents, [
      { type: 'Warning', reason: 'EvictionThresholdMet', message: 'Attempting to reclaim memory' },
    ]);
    assert.ok(h.calls.indexOf('nodeEvent:EvictionThresholdMet') < h.calls.indexOf('event:Evicted'));
  });

  it('counts the eviction under its signal', async () => {
    const h = oneHog();
    await h.pass(0);
    assert.deepEqual(h.evictions, ['memory.available']);
  });

  it('still counts a pod whose kill failed as evicted, and logs the failure', async () => {
    const h = oneHog();
    h.killError = new Error('runtime down');
    assert.deepEqual(await h.pass(0), ['hog']);
    assert.deepEqual(h.evictions, ['memory.available']);
    assert.equal(h.logged('error', /pod failed to evict/).length, 1);
  });

  it('passes its abort signal to the stats calls', async () => {
    const h = oneHog();
    const ac = new AbortController();
    await h.manager.synchronize(ac.signal);
    assert.ok(h.signals.length > 0 && h.signals.every((s) => s === ac.signal));
  });

  it('logs the condition turning on and off', async () => {
    const h = oneHog();
    await h.pass(0);
    assert.deepEqual(
      h.logged('warn', /node condition on/).map((l) => l.fields['condition']),
      ['MemoryPressure'],
    );
    await h.pass(6 * MIN, memorySummary(2 * Gi));
    assert.deepEqual(
      h.logged('info', /node condition off/).map((l) => l.fields['condition']),
      ['MemoryPressure'],
    );
  });
});

describe('synchronize: disk (upstream TestDiskPressureNodeFs, TestNodeReclaimFuncs)', () => {
  it('reports DiskPressure on a soft crossing, evicts after its grace period, at once on a hard one, and holds the condition', async () => {
    const h = setup({
      thresholds: [hard('nodefs.available', Gi), soft('nodefs.available', 2 * Gi, 2 * MIN)],
    });
    const { pods, stats, toEvict } = diskPods();
    h.pods = pods;
    const at = (nodefs: number) => diskSummary(nodefs, 200 * Gi, stats);

    assert.deepEqual(await h.pass(0, at(16 * Gi)), []);
    assert.equal(h.manager.pressure().disk, false);
    assert.equal(h.manager.admit(bestEffort()).admit, true);

    assert.deepEqual(await h.pass(MIN, at(1.5 * Gi)), []);
    assert.equal(h.manager.pressure().disk, true);

    assert.deepEqual(await h.pass(3 * MIN, at(1.5 * Gi)), [toEvict]);
    assert.equal(h.killed.at(-1)?.grace, 5);

    assert.deepEqual(await h.pass(20 * MIN, at(16 * Gi)), []);
    assert.equal(h.manager.pressure().disk, false);

    assert.deepEqual(await h.pass(MIN, at(500 * Mi)), [toEvict]);
    assert.equal(h.killed.at(-1)?.grace, 0);
    assert.equal(h.manager.admit(bestEffort()).admit, false);

    assert.deepEqual(await h.pass(MIN, at(16 * Gi)), []);
    assert.equal(h.manager.pressure().disk, true);
    assert.equal(h.manager.admit(bestEffort()).admit, false);

    assert.deepEqual(await h.pass(5 * MIN, at(16 * Gi)), []);
    assert.equal(h.manager.pressure().disk, false);
    assert.equal(h.manager.admit(bestEffort()).admit, true);
    assert.equal(h.killed.length, 2);
    assert.deepEqual(h.evictions, ['nodefs.available', 'nodefs.available']);
  });

  it('deletes unused containers, then unused images, then checks the summary again before evicting', async () => {
    const h = setup({ thresholds: [hard('nodefs.available', Gi, 500 * Mi)] });
    const { pods, stats, toEvict } = diskPods();
    h.pods = pods;
    assert.deepEqual(await h.pass(0, diskSummary(0.9 * Gi, 200 * Gi, stats)), [toEvict]);
    assert.deepEqual(
      h.calls.filter((c) => !c.startsWith('dedicated')),
      [
        'summary',
        'nodeEvent:EvictionThresholdMet',
        'containers',
        'images',
        'summary',
        `event:Evicted`,
        `kill:${toEvict}`,
      ],
    );
    assert.deepEqual(h.nodeEvents[0]?.message, 'Attempting to reclaim ephemeral-storage');
  });

  it('evicts nobody when node-level reclaim brings the filesystem back above the threshold', async () => {
    const h = setup({ thresholds: [hard('nodefs.available', Gi, 500 * Mi)] });
    const { pods, stats, toEvict } = diskPods();
    h.pods = pods;
    assert.deepEqual(await h.pass(0, diskSummary(16 * Gi, 200 * Gi, stats)), []);
    h.afterGC = diskSummary(16 * Gi, 200 * Gi, stats);
    assert.deepEqual(await h.pass(MIN, diskSummary(0.9 * Gi, 200 * Gi, stats)), []);
    assert.equal(h.manager.pressure().disk, true);
    assert.ok(h.calls.includes('containers') && h.calls.includes('images'));
    assert.deepEqual([...h.killed], []);
    assert.equal(h.logged('info', /able to reduce pressure without evicting/).length, 1);

    // Pressure gone, then back without GC helping: the pod goes.
    h.afterGC = undefined;
    assert.deepEqual(await h.pass(20 * MIN, diskSummary(16 * Gi, 200 * Gi, stats)), []);
    h.calls.length = 0;
    assert.deepEqual(await h.pass(MIN, diskSummary(0.9 * Gi, 200 * Gi, stats)), [toEvict]);
    assert.ok(h.calls.includes('images'));
    assert.equal(h.killed[0]?.grace, 0);

    // Relieved: no GC, nobody evicted, condition held.
    h.calls.length = 0;
    assert.deepEqual(await h.pass(MIN, diskSummary(16 * Gi, 200 * Gi, stats)), []);
    assert.ok(!h.calls.includes('images') && !h.calls.includes('containers'));
    assert.equal(h.manager.pressure().disk, true);
    assert.deepEqual(await h.pass(5 * MIN, diskSummary(16 * Gi, 200 * Gi, stats)), []);
    assert.equal(h.manager.pressure().disk, false);
  });

  it('checks every threshold, not only the one reclaimed, after node-level reclaim', async () => {
    // Image GC relieves the image filesystem, but the node filesystem is now crossed: eviction goes ahead.
    const h = setup({ thresholds: [hard('imagefs.available', Gi), hard('nodefs.available', Gi)] });
    const { pods, stats, toEvict } = diskPods();
    h.pods = pods;
    h.afterGC = diskSummary(500 * Mi, 16 * Gi, stats);
    assert.deepEqual(await h.pass(0, diskSummary(16 * Gi, 500 * Mi, stats)), [toEvict]);
  });

  it('logs a failing GC step and still checks the summary again', async () => {
    const h = setup({ thresholds: [hard('nodefs.available', Gi)] });
    const { pods, stats } = diskPods();
    h.pods = pods;
    h.gcError = new Error('gc broke');
    h.afterGC = diskSummary(16 * Gi, 200 * Gi, stats);
    assert.deepEqual(await h.pass(0, diskSummary(500 * Mi, 200 * Gi, stats)), []);
    assert.deepEqual(
      h.calls.filter((c) => c === 'containers' || c === 'images' || c === 'summary'),
      ['summary', 'containers', 'images', 'summary'],
    );
    assert.equal(h.logged('warn', /unexpected error when reclaiming/).length, 2);
  });

  it('evicts when the summary after reclaim cannot be read', async () => {
    const h = setup({ thresholds: [hard('nodefs.available', Gi)] });
    const { pods, stats, toEvict } = diskPods();
    h.pods = pods;
    h.afterGC = new Error('stats unavailable');
    assert.deepEqual(await h.pass(0, diskSummary(500 * Mi, 200 * Gi, stats)), [toEvict]);
    assert.equal(h.logged('error', /failed to get summary stats after resource reclaim/).length, 1);
  });

  it('reclaims inodes the same way and names them in the events', async () => {
    const h = setup({ thresholds: [hard('nodefs.inodesFree', 1000)] });
    const many = pod('many-files', { volumes: [{ name: 'v', emptyDir: {} }] });
    const few = pod('few-files', { volumes: [{ name: 'v', emptyDir: {} }] });
    h.pods = [few, many];
    const stats = [
      diskStats(many, { root: 50_000, logs: 10, perVolume: 100_000 }, 'inodes'),
      diskStats(few, { root: 10, logs: 10, perVolume: 10 }, 'inodes'),
    ];
    assert.deepEqual(await h.pass(0, nodeSummary({ nodefs: 10 * Gi, inodesFree: 500 }, stats)), [
      'many-files',
    ]);
    assert.equal(h.manager.pressure().disk, true);
    assert.deepEqual(h.nodeEvents[0]?.message, 'Attempting to reclaim inodes');
    assert.equal(h.killed[0]?.status.message, 'The node was low on resource: inodes. ');
    assert.ok(h.calls.includes('containers') && h.calls.includes('images'));
    assert.deepEqual(h.evictions, ['nodefs.inodesFree']);
  });

  describe('with a dedicated image filesystem', () => {
    const bigRoot = pod('big-rootfs', { volumes: [{ name: 'v', emptyDir: {} }] });
    const bigLogs = pod('big-logs', { volumes: [{ name: 'v', emptyDir: {} }] });
    const stats = [
      diskStats(bigRoot, { root: 5 * Gi, logs: Mi, perVolume: Mi }),
      diskStats(bigLogs, { root: Mi, logs: Gi, perVolume: Mi }),
    ];

    it('does no node-level reclaim for nodefs pressure and ranks pods by logs and volumes', async () => {
      const h = setup({ thresholds: [hard('nodefs.available', Gi)] });
      h.dedicatedImageFs = true;
      h.pods = [bigRoot, bigLogs];
      h.afterGC = diskSummary(16 * Gi, 16 * Gi, stats);
      assert.deepEqual(await h.pass(0, diskSummary(500 * Mi, 16 * Gi, stats)), ['big-logs']);
      assert.ok(!h.calls.includes('containers') && !h.calls.includes('images'));
      assert.equal(h.calls.filter((c) => c === 'summary').length, 1);
    });

    it('reclaims containers and images for imagefs pressure and ranks pods by rootfs', async () => {
      const h = setup({ thresholds: [hard('imagefs.available', Gi)] });
      h.dedicatedImageFs = true;
      h.pods = [bigLogs, bigRoot];
      assert.deepEqual(await h.pass(0, diskSummary(16 * Gi, 500 * Mi, stats)), ['big-rootfs']);
      assert.ok(h.calls.includes('containers') && h.calls.includes('images'));
    });

    it('without one, ranks nodefs pressure on every filesystem and reclaims node-level first', async () => {
      const h = setup({ thresholds: [hard('nodefs.available', Gi)] });
      h.pods = [bigLogs, bigRoot];
      assert.deepEqual(await h.pass(0, diskSummary(500 * Mi, 16 * Gi, stats)), ['big-rootfs']);
      assert.ok(h.calls.includes('containers') && h.calls.includes('images'));
    });

    it('asks whether the image filesystem is dedicated only once', async () => {
      const h = setup({ thresholds: [hard('nodefs.available', Gi)] });
      await h.pass(0);
      await h.pass(MIN);
      await h.pass(MIN);
      assert.equal(h.calls.filter((c) => c === 'dedicatedImageFs').length, 1);
    });
  });
});

describe('synchronize: PIDs', () => {
  it('reports PIDPressure and evicts the lowest priority, then the pod with the most processes, without GC', async () => {
    const h = setup({ thresholds: [hard('pid.available', 100)] });
    const lowBusy = pod('low-busy', { priority: LOW_PRIORITY });
    const lowIdle = pod('low-idle', { priority: LOW_PRIORITY });
    const highBusy = pod('high-busy', { priority: HIGH_PRIORITY });
    h.pods = [highBusy, lowIdle, lowBusy];
    const stats = [processStats(lowBusy, 20), processStats(lowIdle, 6), processStats(highBusy, 500)];
    assert.deepEqual(await h.pass(0, nodeSummary({ pids: [1000, 950] }, stats)), ['low-busy']);
    assert.deepEqual(h.manager.pressure(), { memory: false, disk: false, pid: true });
    assert.deepEqual(h.nodeEvents[0]?.message, 'Attempting to reclaim pids');
    assert.equal(h.killed[0]?.status.message, 'The node was low on resource: pids. ');
    assert.ok(!h.calls.includes('containers') && !h.calls.includes('images'));
    assert.deepEqual(h.evictions, ['pid.available']);
  });
});

describe('synchronize: nothing to do or nothing possible', () => {
  it('evicts nobody when no threshold is crossed', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    h.pods = memoryPods().pods;
    assert.deepEqual(await h.pass(0, memorySummary(2 * Gi, memoryPods().stats)), []);
    assert.deepEqual([...h.nodeEvents], []);
    assert.deepEqual([...h.killed], []);
  });

  it('logs a failing summary, evicts nothing and keeps the last conditions', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    assert.deepEqual(await h.pass(0, memorySummary(500 * Mi)), []);
    assert.equal(h.manager.pressure().memory, true);
    h.pods = memoryPods().pods;
    assert.deepEqual(await h.pass(MIN, new Error('cri down')), []);
    assert.equal(h.logged('error', /failed to get summary stats/).length, 1);
    assert.equal(h.manager.pressure().memory, true);
    assert.deepEqual([...h.killed], []);
    assert.equal(h.nodeEvents.length, 1, 'only the first pass met a threshold');
  });

  it('logs a failing summary on a fresh manager and reports no pressure', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    h.pods = memoryPods().pods;
    assert.deepEqual(await h.pass(0, new Error('cri down')), []);
    assert.deepEqual(h.manager.pressure(), { memory: false, disk: false, pid: false });
    assert.deepEqual([...h.killed], []);
  });

  it('skips the pass when it cannot tell whether the image filesystem is dedicated, and asks again next time', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    const { pods, stats, toEvict } = memoryPods();
    h.pods = pods;
    h.dedicatedImageFs = new Error('no imagefs info');
    assert.deepEqual(await h.pass(0, memorySummary(500 * Mi, stats)), []);
    assert.ok(!h.calls.includes('summary'));
    assert.equal(h.logged('warn', /cannot tell whether the image filesystem is dedicated/).length, 1);
    h.dedicatedImageFs = false;
    assert.deepEqual(await h.pass(MIN), [toEvict]);
    assert.equal(h.calls.filter((c) => c === 'dedicatedImageFs').length, 2);
  });

  it('logs that no pod is active and evicts nobody', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    assert.deepEqual(await h.pass(0, memorySummary(500 * Mi)), []);
    assert.equal(h.logged('error', /no pods are active to evict/).length, 1);
    assert.equal(h.nodeEvents.length, 1);
  });

  it('does nothing with no thresholds and no local limits', async () => {
    const h = setup({ thresholds: [] });
    h.pods = memoryPods().pods;
    assert.deepEqual(await h.pass(0, memorySummary(0, memoryPods().stats)), []);
    assert.deepEqual(h.manager.pressure(), { memory: false, disk: false, pid: false });
    assert.deepEqual([...h.nodeEvents], []);
  });
});

describe('synchronize: local ephemeral storage (upstream localStorageEviction)', () => {
  const cache = pod('cache-user', { volumes: [{ name: 'cache', emptyDir: { sizeLimit: '100Mi' } }] });
  const cacheStats = (used: number): PodStats<number> => ({
    podRef: { name: 'cache-user', namespace: 'ns', uid: 'cache-user' },
    startTime: 0,
    containers: [],
    volume: [{ name: 'cache', time: 0, usedBytes: used }],
  });
  const writer = pod('writer', { limits: { 'ephemeral-storage': '100Mi' } });
  const writerStats = (root: number): PodStats<number> => diskStats(writer, { root, logs: 0 });
  const twoContainers = pod('two', {
    containers: [
      container('a', { limits: { 'ephemeral-storage': '100Mi' } }),
      container('b', { limits: { 'ephemeral-storage': '1Gi' } }),
    ],
  });

  it('evicts a pod over its emptyDir sizeLimit with grace 0, even without thresholds', async () => {
    const h = setup({ thresholds: [] });
    h.pods = [cache];
    const message = 'Usage of EmptyDir volume "cache" exceeds the limit "100Mi". ';
    assert.deepEqual(await h.pass(0, memorySummary(10 * Gi, [cacheStats(200 * Mi)])), ['cache-user']);
    assert.deepEqual(h.killed, [{ pod: 'cache-user', grace: 0, status: { reason: 'Evicted', message } }]);
    assert.deepEqual(h.recorder.events, [
      { pod: 'ns/cache-user', type: 'Warning', reason: 'Evicted', message },
    ]);
    assert.deepEqual(h.evictions, ['emptydirfs.limit']);
    assert.deepEqual([...h.nodeEvents], []);
  });

  it('evicts a pod over its total ephemeral-storage limit', async () => {
    const h = setup({ thresholds: [] });
    h.pods = [writer];
    assert.deepEqual(await h.pass(0, memorySummary(10 * Gi, [writerStats(200 * Mi)])), ['writer']);
    assert.deepEqual(h.evictions, ['ephemeralpodfs.limit']);
    assert.equal(
      h.killed[0]?.status.message,
      'Pod ephemeral local storage usage exceeds the total limit of containers 100Mi. ',
    );
  });

  it('evicts a pod whose container is over its own ephemeral-storage limit', async () => {
    const h = setup({ thresholds: [] });
    h.pods = [twoContainers];
    const stats: PodStats<number> = {
      podRef: { name: 'two', namespace: 'ns', uid: 'two' },
      startTime: 0,
      containers: [
        {
          name: 'a',
          startTime: 0,
          rootfs: { time: 0, usedBytes: 150 * Mi },
          logs: { time: 0, usedBytes: 0 },
        },
        { name: 'b', startTime: 0, rootfs: { time: 0, usedBytes: 0 }, logs: { time: 0, usedBytes: 0 } },
      ],
    };
    assert.deepEqual(await h.pass(0, memorySummary(10 * Gi, [stats])), ['two']);
    assert.deepEqual(h.evictions, ['ephemeralcontainerfs.limit']);
    assert.equal(
      h.killed[0]?.status.message,
      'Container a exceeded its local ephemeral storage limit "100Mi". ',
    );
  });

  it('evicts every pod over a local limit in the same pass', async () => {
    const h = setup({ thresholds: [] });
    h.pods = [cache, writer, pod('innocent')];
    assert.deepEqual(await h.pass(0, memorySummary(10 * Gi, [cacheStats(200 * Mi), writerStats(200 * Mi)])), [
      'cache-user',
      'writer',
    ]);
  });

  it('skips threshold eviction in a pass that evicted for local storage', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    const hog = pod('hog');
    h.pods = [hog, cache];
    assert.deepEqual(
      await h.pass(0, memorySummary(100 * Mi, [memoryStats(hog, 10 * Gi), cacheStats(200 * Mi)])),
      ['cache-user'],
    );
    assert.deepEqual([...h.nodeEvents], []);
    assert.equal(h.manager.pressure().memory, true, 'the conditions are still updated');
  });

  it('does not evict a critical pod over its local limit', async () => {
    const h = setup({ thresholds: [] });
    const critical = pod('cache-user', {
      volumes: [{ name: 'cache', emptyDir: { sizeLimit: '100Mi' } }],
      annotations: { 'kubernetes.io/config.source': 'file' },
    });
    h.pods = [critical];
    assert.deepEqual(await h.pass(0, memorySummary(10 * Gi, [cacheStats(200 * Mi)])), []);
    assert.deepEqual([...h.killed], []);
  });

  it('leaves out the writable layer with a dedicated image filesystem', async () => {
    const h = setup({ thresholds: [] });
    h.dedicatedImageFs = true;
    h.pods = [writer];
    assert.deepEqual(await h.pass(0, memorySummary(10 * Gi, [writerStats(200 * Mi)])), []);
  });

  it('ignores pods the summary has no stats for', async () => {
    const h = setup({ thresholds: [] });
    h.pods = [cache, writer];
    assert.deepEqual(await h.pass(0, memorySummary(10 * Gi, [])), []);
  });

  it('logs and skips a pod whose limits do not parse, and judges the others', async () => {
    const h = setup({ thresholds: [] });
    const broken = pod('broken', { volumes: [{ name: 'cache', emptyDir: { sizeLimit: 'lots' } }] });
    h.pods = [broken, writer];
    const brokenStats: PodStats<number> = {
      ...cacheStats(200 * Mi),
      podRef: { name: 'broken', namespace: 'ns', uid: 'broken' },
    };
    assert.deepEqual(await h.pass(0, memorySummary(10 * Gi, [brokenStats, writerStats(200 * Mi)])), [
      'writer',
    ]);
    assert.deepEqual(
      h.logged('error', /local storage/).map((l) => l.fields['pod']),
      ['ns/broken'],
    );
  });
});

describe('pressure()', () => {
  it('follows the reported conditions', async () => {
    const h = setup({
      thresholds: [hard('memory.available', Gi), hard('nodefs.available', Gi), hard('pid.available', 100)],
      pressureTransitionPeriodMs: 0,
    });
    assert.deepEqual(h.manager.pressure(), { memory: false, disk: false, pid: false });
    // A zero transition period reports nothing, as upstream (duration < period never holds).
    await h.pass(0, nodeSummary({ memory: 100 * Mi, nodefs: 100 * Mi, pids: [1000, 999] }));
    assert.deepEqual(h.manager.pressure(), { memory: false, disk: false, pid: false });

    const h2 = setup({
      thresholds: [hard('memory.available', Gi), hard('nodefs.available', Gi), hard('pid.available', 100)],
    });
    await h2.pass(0, nodeSummary({ memory: 100 * Mi, nodefs: 10 * Gi, pids: [1000, 10] }));
    assert.deepEqual(h2.manager.pressure(), { memory: true, disk: false, pid: false });
    await h2.pass(MIN, nodeSummary({ memory: 10 * Gi, nodefs: 100 * Mi, pids: [1000, 999] }));
    assert.deepEqual(h2.manager.pressure(), { memory: true, disk: true, pid: true });
    await h2.pass(4.5 * MIN, nodeSummary({ memory: 10 * Gi, nodefs: 10 * Gi, pids: [1000, 10] }));
    assert.deepEqual(h2.manager.pressure(), { memory: false, disk: true, pid: true });
    await h2.pass(MIN, nodeSummary({ memory: 10 * Gi, nodefs: 10 * Gi, pids: [1000, 10] }));
    assert.deepEqual(h2.manager.pressure(), { memory: false, disk: false, pid: false });
  });
});

describe('start and stop', () => {
  it('runs a pass every monitoring interval until stopped', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    h.manager.start();
    await until(() => h.sleeps.length >= 3, 'three passes');
    await h.manager.stop();
    const after = h.calls.length;
    await flush();
    assert.equal(h.calls.length, after, 'nothing runs after stop');
    assert.deepEqual(h.sleeps.slice(0, 3), [EVICTION_MONITORING_PERIOD_MS, 10_000, 10_000]);
    const loop = h.calls.filter((c) => c === 'summary' || c.startsWith('sleep:'));
    loop.forEach((c, i) =>
      assert.equal(c.startsWith('sleep:'), i % 2 === 1, `strict alternation at ${i}: ${c}`),
    );
  });

  it('uses the configured monitoring interval', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)], monitoringIntervalMs: 2500 });
    h.manager.start();
    await until(() => h.sleeps.length >= 2, 'two passes');
    await h.manager.stop();
    assert.deepEqual(h.sleeps.slice(0, 2), [2500, 2500]);
  });

  it('runs one loop however many times it is started', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    h.manager.start();
    h.manager.start();
    await until(() => h.sleeps.length >= 3, 'three passes');
    await h.manager.stop();
    h.manager.start();
    await flush();
    const loop = h.calls.filter((c) => c === 'summary' || c.startsWith('sleep:'));
    loop.forEach((c, i) =>
      assert.equal(c.startsWith('sleep:'), i % 2 === 1, `strict alternation at ${i}: ${c}`),
    );
  });

  it('stops at once when never started', async () => {
    const h = setup({ thresholds: [] });
    await h.manager.stop();
    assert.deepEqual([...h.calls], []);
  });

  it('logs when it has no thresholds to watch', async () => {
    const h = setup({ thresholds: [] });
    h.manager.start();
    await until(() => h.sleeps.length >= 1, 'one pass');
    await h.manager.stop();
    assert.equal(h.logged('info', /no thresholds/).length, 1);
  });

  it('waits for evicted pods to be cleaned up, polling every second, before the next pass', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    const { pods, stats, toEvict } = memoryPods();
    h.pods = pods;
    h.summary = memorySummary(500 * Mi, stats);
    h.onKill = () => (h.summary = memorySummary(10 * Gi, stats));
    let polls = 0;
    h.cleanedUp = (uid) => {
      assert.equal(uid, toEvict);
      return ++polls >= 3;
    };
    h.manager.start();
    await until(() => h.sleeps.length >= 4, 'cleanup and one more pass');
    await h.manager.stop();
    assert.deepEqual(h.sleeps.slice(0, 4), [1000, 1000, 1000, 10_000]);
    assert.equal(h.logged('info', /pods successfully cleaned up/).length, 1);
    assert.equal(h.killed.length, 1);
  });

  it('gives up waiting for cleanup after 30 seconds', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    const { pods, stats } = memoryPods();
    h.pods = pods;
    h.summary = memorySummary(500 * Mi, stats);
    h.onKill = () => (h.summary = memorySummary(10 * Gi, stats));
    h.cleanedUp = () => false;
    h.manager.start();
    await until(() => h.sleeps.includes(10_000), 'the pass after the timeout');
    await h.manager.stop();
    const polls = h.sleeps.indexOf(10_000);
    assert.equal(polls, 30);
    assert.ok(h.sleeps.slice(0, polls).every((ms) => ms === 1000));
    assert.equal(h.logged('warn', /timed out waiting for pods to be cleaned up/).length, 1);
  });

  it('stops while waiting for cleanup', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    const { pods, stats } = memoryPods();
    h.pods = pods;
    h.summary = memorySummary(500 * Mi, stats);
    h.cleanedUp = () => false;
    h.manager.start();
    await until(() => h.sleeps.length >= 2, 'cleanup polling');
    await h.manager.stop();
    assert.ok(h.sleeps.every((ms) => ms === 1000));
  });

  it('logs a pass that throws and carries on', async () => {
    const h = setup({ thresholds: [hard('memory.available', Gi)] });
    h.activePodsError = new Error('pod manager broke');
    h.manager.start();
    await until(() => h.sleeps.length >= 2, 'two passes');
    await h.manager.stop();
    assert.ok(h.logged('error', /pass failed/).length >= 2);
  });

  it('stop ends a real (unfaked) sleep at once', async () => {
    const recorder = createMemoryRecorder();
    let summaries = 0;
    const m = createEvictionManager(
      {
        thresholds: [hard('memory.available', Gi)],
        pressureTransitionPeriodMs: MIN,
        maxPodGracePeriodSeconds: 0,
        monitoringIntervalMs: 3_600_000,
      },
      {
        summary: () => {
          summaries++;
          return Promise.resolve(memorySummary(10 * Gi));
        },
        hasDedicatedImageFs: () => Promise.resolve(false),
        activePods: () => [],
        killPod: () => Promise.resolve(),
        podCleanedUp: () => true,
        deleteAllUnusedContainers: () => Promise.resolve(),
        deleteUnusedImages: () => Promise.resolve(),
        recorder,
        nodeEvent: () => {},
        logger: recordingLogger(),
      },
    );
    m.start();
    await until(() => summaries === 1, 'the first pass');
    const started = Date.now();
    await m.stop();
    assert.ok(Date.now() - started < 1000, 'stop did not wait for the hour-long interval');
    assert.equal(summaries, 1);
  });
});
