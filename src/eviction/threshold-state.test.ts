import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeObservations, type Observation, type Observations } from './observations.ts';
import type { Signal, Threshold } from './signals.ts';
import { Gi, memorySummary, Mi, pod, memoryStats } from './testing.ts';
import {
  INITIAL_THRESHOLD_STATE,
  step,
  thresholdsMet,
  thresholdToReclaim,
  type ThresholdState,
} from './threshold-state.ts';

const T0 = Date.parse('2026-01-10T08:00:00Z');
const MIN = 60_000;

function obs(entries: Partial<Record<Signal, Partial<Observation> & { available: number }>>): Observations {
  const out = new Map<Signal, Observation>();
  for (const [signal, o] of Object.entries(entries) as [
    Signal,
    Partial<Observation> & { available: number },
  ][]) {
    out.set(signal, { capacity: o.available * 2, time: 0, ...o });
  }
  return out;
}

const hardMemory: Threshold = { signal: 'memory.available', value: { quantity: Gi }, gracePeriodMs: 0 };
const softMemory: Threshold = {
  signal: 'memory.available',
  value: { quantity: 2 * Gi },
  gracePeriodMs: 2 * MIN,
};
const hardMemoryWithReclaim: Threshold = { ...hardMemory, minReclaim: { quantity: 500 * Mi } };
const hardNodefs: Threshold = { signal: 'nodefs.available', value: { quantity: Gi }, gracePeriodMs: 0 };
const hardPid: Threshold = { signal: 'pid.available', value: { quantity: 100 }, gracePeriodMs: 0 };

/** Runs `step` over a sequence of (minutes after T0, observations), threading the state. */
function run(
  thresholds: readonly Threshold[],
  passes: [minutes: number, observations: Observations][],
  transitionMs = 5 * MIN,
) {
  let state: ThresholdState = INITIAL_THRESHOLD_STATE;
  return passes.map(([minutes, observations]) => {
    const r = step(thresholds, transitionMs, state, observations, T0 + minutes * MIN);
    state = r.state;
    return r;
  });
}

describe('thresholdsMet (upstream thresholdsMet)', () => {
  it('meets nothing without thresholds', () => {
    assert.deepEqual(thresholdsMet([], obs({ 'memory.available': { available: 0 } }), false), []);
  });

  it('meets a threshold whose signal is below its value', () => {
    assert.deepEqual(
      thresholdsMet([hardMemory], obs({ 'memory.available': { available: 500 * Mi } }), false),
      [hardMemory],
    );
  });

  it('does not meet a threshold whose signal is above its value', () => {
    assert.deepEqual(
      thresholdsMet([hardMemory], obs({ 'memory.available': { available: 2 * Gi } }), false),
      [],
    );
  });

  it('does not meet a threshold exactly at its value (the operator is LessThan)', () => {
    assert.deepEqual(thresholdsMet([hardMemory], obs({ 'memory.available': { available: Gi } }), false), []);
  });

  it('adds the minimum reclaim to the value when asked to enforce it', () => {
    const o = obs({ 'memory.available': { available: Gi } });
    assert.deepEqual(thresholdsMet([hardMemoryWithReclaim], o, true), [hardMemoryWithReclaim]);
  });

  it('ignores the minimum reclaim when not enforcing it', () => {
    const o = obs({ 'memory.available': { available: Gi } });
    assert.deepEqual(thresholdsMet([hardMemoryWithReclaim], o, false), []);
  });

  it('stops meeting a min-reclaim threshold once available exceeds value plus reclaim', () => {
    const o = obs({ 'memory.available': { available: 2 * Gi } });
    assert.deepEqual(thresholdsMet([hardMemoryWithReclaim], o, true), []);
  });

  it('meets nothing for a signal that was not observed', () => {
    assert.deepEqual(thresholdsMet([hardNodefs], obs({ 'memory.available': { available: 0 } }), false), []);
  });

  describe('with percentages (upstream TestPercentageThresholdsMet)', () => {
    const memory: Threshold = {
      signal: 'memory.available',
      value: { percentage: 0.2 },
      gracePeriodMs: 0,
      minReclaim: { percentage: 0.05 },
    };
    const nodefs: Threshold = { signal: 'nodefs.available', value: { percentage: 0.3 }, gracePeriodMs: 0 };
    const both = [memory, nodefs];
    const at = (memAvail: number, fsAvail?: number): Observations =>
      obs({
        'memory.available': { available: memAvail, capacity: 1000 * Mi },
        ...(fsAvail === undefined ? {} : { 'nodefs.available': { available: fsAvail, capacity: 1000 * Gi } }),
      });

    it('meets both when both are low', () => {
      assert.deepEqual(thresholdsMet(both, at(100 * Mi, 100 * Gi), false), both);
    });
    it('meets none when both are high', () => {
      assert.deepEqual(thresholdsMet(both, at(300 * Mi, 400 * Gi), false), []);
    });
    it('meets only the disk threshold when only disk is low', () => {
      assert.deepEqual(thresholdsMet(both, at(300 * Mi, 100 * Gi), false), [nodefs]);
    });
    it('meets only the memory threshold when only memory is low', () => {
      assert.deepEqual(thresholdsMet(both, at(100 * Mi, 400 * Gi), false), [memory]);
    });
    it('meets memory with min reclaim below 25% available', () => {
      assert.deepEqual(thresholdsMet(both, at(225 * Mi), true), [memory]);
    });
    it('does not meet memory with min reclaim above 25% available', () => {
      assert.deepEqual(thresholdsMet(both, at(300 * Mi), true), []);
    });
  });
});

describe('step (upstream synchronize bookkeeping)', () => {
  it('reports the condition and acts at once on a hard threshold', () => {
    const [r] = run([hardMemory], [[0, obs({ 'memory.available': { available: 500 * Mi } })]]);
    assert.deepEqual(r?.conditions, ['MemoryPressure']);
    assert.deepEqual(r?.actionable, [hardMemory]);
  });

  it('reports nothing when no threshold is crossed', () => {
    const [r] = run([hardMemory, softMemory], [[0, obs({ 'memory.available': { available: 3 * Gi } })]]);
    assert.deepEqual(r?.conditions, []);
    assert.deepEqual(r?.actionable, []);
    assert.deepEqual(r?.state.met, []);
  });

  it('reports the condition of a soft threshold at once but acts only after its grace period', () => {
    const low = obs({ 'memory.available': { available: 1500 * Mi } });
    const [first, early, late] = run(
      [hardMemory, softMemory],
      [
        [1, low],
        [2, low],
        [4, low],
      ],
    );
    assert.deepEqual(first?.conditions, ['MemoryPressure']);
    assert.deepEqual(first?.actionable, []);
    assert.deepEqual(early?.actionable, [], 'one minute of a two-minute grace period');
    assert.deepEqual(late?.actionable, [softMemory]);
  });

  it('acts on a soft threshold exactly when its grace period has elapsed', () => {
    const low = obs({ 'memory.available': { available: 1500 * Mi } });
    const [, atGrace] = run(
      [softMemory],
      [
        [0, low],
        [2, low],
      ],
    );
    assert.deepEqual(atGrace?.actionable, [softMemory]);
  });

  it('restarts the grace period when the soft threshold stops being crossed', () => {
    const low = obs({ 'memory.available': { available: 1500 * Mi } });
    const high = obs({ 'memory.available': { available: 3 * Gi } });
    const results = run(
      [softMemory],
      [
        [0, low],
        [1, high],
        [2, low],
        [3, low],
        [4, low],
      ],
    );
    assert.deepEqual(
      results.map((r) => r.actionable.length),
      [0, 0, 0, 0, 1],
    );
    assert.equal(results[3]?.state.firstObservedAt.size, 1);
    assert.deepEqual([...(results[3]?.state.firstObservedAt.values() ?? [])], [T0 + 2 * MIN]);
  });

  it('holds the condition for the pressure transition period after the last crossing', () => {
    const low = obs({ 'memory.available': { available: 500 * Mi } });
    const high = obs({ 'memory.available': { available: 3 * Gi } });
    const results = run(
      [hardMemory],
      [
        [0, low],
        [1, high],
        [4, high],
        [5, high],
      ],
    );
    assert.deepEqual(
      results.map((r) => r.conditions),
      [['MemoryPressure'], ['MemoryPressure'], ['MemoryPressure'], []],
    );
    assert.deepEqual(
      results.map((r) => r.actionable.length),
      [1, 0, 0, 0],
      'a held condition drives no eviction',
    );
  });

  it('with a zero transition period reports no condition at all (duration < period never holds)', () => {
    const [r] = run([hardMemory], [[0, obs({ 'memory.available': { available: 500 * Mi } })]], 0);
    assert.deepEqual(r?.conditions, []);
    assert.deepEqual(r?.actionable, [hardMemory]);
  });

  it('keeps a met threshold active until its minimum reclaim is reached (upstream TestMinReclaim)', () => {
    const results = run(
      [hardMemoryWithReclaim],
      [
        [0, obs({ 'memory.available': { available: 2 * Gi } })],
        [1, obs({ 'memory.available': { available: 500 * Mi } })],
        [2, obs({ 'memory.available': { available: 1.2 * Gi } })],
        [3, obs({ 'memory.available': { available: 2 * Gi } })],
        [8, obs({ 'memory.available': { available: 2 * Gi } })],
      ],
    );
    assert.deepEqual(
      results.map((r) => r.actionable.length),
      [0, 1, 1, 0, 0],
    );
    assert.deepEqual(
      results.map((r) => r.conditions.length),
      [0, 1, 1, 1, 0],
    );
  });

  it('does not keep a threshold active by min reclaim before it was ever met', () => {
    const [r] = run([hardMemoryWithReclaim], [[0, obs({ 'memory.available': { available: 1.2 * Gi } })]]);
    assert.deepEqual(r?.actionable, []);
    assert.deepEqual(r?.conditions, []);
  });

  it('does not carry a soft threshold whose grace period was not met as "met"', () => {
    const [r] = run([softMemory], [[0, obs({ 'memory.available': { available: 1500 * Mi } })]]);
    assert.deepEqual(r?.state.met, []);
  });

  describe('stale observations (upstream thresholdsUpdatedStats)', () => {
    const at = (time: number, available = 500 * Mi) => obs({ 'memory.available': { available, time } });

    it('acts on the first observation of a signal', () => {
      const [r] = run([hardMemory], [[0, at(T0)]]);
      assert.deepEqual(r?.actionable, [hardMemory]);
    });

    it('does not act twice on the same measurement', () => {
      const [, again] = run(
        [hardMemory],
        [
          [0, at(T0)],
          [1, at(T0)],
        ],
      );
      assert.deepEqual(again?.actionable, []);
      assert.deepEqual(again?.conditions, ['MemoryPressure'], 'the condition stays');
      assert.deepEqual(again?.state.met, [hardMemory], 'the threshold stays met');
    });

    it('acts on a measurement stamped before the last one: the wall clock stepped back, it is new', () => {
      // Upstream wants a later time, so after a backward step it evicts nothing until the clock
      // has caught up with the last stamp.
      const [, older] = run(
        [hardMemory],
        [
          [0, at(T0)],
          [1, at(T0 - 3_600_000)],
        ],
      );
      assert.deepEqual(older?.actionable, [hardMemory]);
    });

    it('acts again on a newer measurement', () => {
      const [, , newer] = run(
        [hardMemory],
        [
          [0, at(T0)],
          [1, at(T0)],
          [2, at(T0 + MIN)],
        ],
      );
      assert.deepEqual(newer?.actionable, [hardMemory]);
    });

    it('always acts on a measurement without a time', () => {
      const [, again] = run(
        [hardMemory],
        [
          [0, at(0)],
          [1, at(0)],
        ],
      );
      assert.deepEqual(again?.actionable, [hardMemory]);
    });
  });

  it('reports each condition once, sorted, whatever the number of signals crossing it', () => {
    const [r] = run(
      [
        hardMemory,
        { ...hardMemory, signal: 'allocatableMemory.available' },
        hardNodefs,
        { signal: 'nodefs.inodesFree', value: { quantity: 1000 }, gracePeriodMs: 0 },
        hardPid,
      ],
      [
        [
          0,
          obs({
            'memory.available': { available: Mi },
            'allocatableMemory.available': { available: Mi },
            'nodefs.available': { available: Mi },
            'nodefs.inodesFree': { available: 10 },
            'pid.available': { available: 10 },
          }),
        ],
      ],
    );
    assert.deepEqual(r?.conditions, ['DiskPressure', 'MemoryPressure', 'PIDPressure']);
    assert.equal(r?.actionable.length, 5);
  });

  it('maps the inode and image filesystem signals to DiskPressure', () => {
    for (const signal of ['nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree'] as const) {
      const [r] = run(
        [{ signal, value: { quantity: 1000 }, gracePeriodMs: 0 }],
        [[0, obs({ [signal]: { available: 10 } })]],
      );
      assert.deepEqual(r?.conditions, ['DiskPressure'], signal);
    }
  });

  it('never changes the state it was given', () => {
    const r = step(
      [hardMemory],
      5 * MIN,
      INITIAL_THRESHOLD_STATE,
      obs({ 'memory.available': { available: 0 } }),
      T0,
    );
    assert.equal(r.conditions.length, 1);
    assert.deepEqual(INITIAL_THRESHOLD_STATE.met, []);
    assert.equal(INITIAL_THRESHOLD_STATE.firstObservedAt.size, 0);
    assert.equal(INITIAL_THRESHOLD_STATE.conditionLastObservedAt.size, 0);
    assert.equal(INITIAL_THRESHOLD_STATE.lastObservations.size, 0);
  });
});

describe('thresholdToReclaim (upstream byEvictionPriority + getReclaimableThreshold)', () => {
  it('picks nothing from nothing', () => {
    assert.equal(thresholdToReclaim([]), undefined);
  });

  it('picks memory before other signals', () => {
    assert.equal(thresholdToReclaim([hardNodefs, hardPid, hardMemory]), hardMemory);
  });

  it('picks allocatable memory before other signals', () => {
    const allocatable: Threshold = { ...hardMemory, signal: 'allocatableMemory.available' };
    assert.equal(thresholdToReclaim([hardNodefs, hardPid, allocatable]), allocatable);
  });

  it('otherwise picks the first in the given order', () => {
    assert.equal(thresholdToReclaim([hardNodefs, hardPid]), hardNodefs);
    assert.equal(thresholdToReclaim([hardPid, hardNodefs]), hardPid);
  });
});

describe('makeObservations (upstream makeSignalObservations)', () => {
  const time = T0;

  it('observes memory as available out of available plus working set, with its time', () => {
    const { observations } = makeObservations(memorySummary(Gi, [], time));
    assert.deepEqual(observations.get('memory.available'), { available: Gi, capacity: 2 * Gi, time });
  });

  it('observes allocatable memory from the `pods` system container', () => {
    const s = memorySummary(Gi, [], time);
    s.node.systemContainers = [
      { name: 'kubelet', startTime: 0, memory: { time, availableBytes: 1, workingSetBytes: 1 } },
      { name: 'pods', startTime: 0, memory: { time, availableBytes: 300 * Mi, workingSetBytes: 700 * Mi } },
    ];
    const { observations } = makeObservations(s);
    assert.deepEqual(observations.get('allocatableMemory.available'), {
      available: 300 * Mi,
      capacity: 1000 * Mi,
      time,
    });
  });

  it('observes no allocatable memory without a `pods` system container', () => {
    const s = memorySummary(Gi);
    delete s.node.systemContainers;
    assert.equal(makeObservations(s).observations.has('allocatableMemory.available'), false);
  });

  it('observes nothing for memory without both available and working set', () => {
    const s = memorySummary(Gi);
    s.node.memory = { time, availableBytes: Gi };
    assert.equal(makeObservations(s).observations.has('memory.available'), false);
  });

  it('observes the node filesystem bytes and inodes', () => {
    const { observations } = makeObservations({
      node: {
        nodeName: 'n',
        startTime: 0,
        fs: { time, availableBytes: 10, capacityBytes: 100, inodesFree: 5, inodes: 50 },
      },
      pods: [],
    });
    assert.deepEqual(observations.get('nodefs.available'), { available: 10, capacity: 100, time });
    assert.deepEqual(observations.get('nodefs.inodesFree'), { available: 5, capacity: 50, time });
  });

  it('observes the image filesystem bytes and inodes', () => {
    const { observations } = makeObservations({
      node: {
        nodeName: 'n',
        startTime: 0,
        runtime: { imageFs: { time, availableBytes: 10, capacityBytes: 100, inodesFree: 5, inodes: 50 } },
      },
      pods: [],
    });
    assert.deepEqual(observations.get('imagefs.available'), { available: 10, capacity: 100, time });
    assert.deepEqual(observations.get('imagefs.inodesFree'), { available: 5, capacity: 50, time });
  });

  it('observes image filesystem inodes only along with its bytes, as upstream', () => {
    const { observations } = makeObservations({
      node: { nodeName: 'n', startTime: 0, runtime: { imageFs: { time, inodesFree: 5, inodes: 50 } } },
      pods: [],
    });
    assert.equal(observations.has('imagefs.inodesFree'), false);
  });

  it('observes PIDs as the maximum less the running processes', () => {
    const { observations } = makeObservations({
      node: { nodeName: 'n', startTime: 0, rlimit: { time, maxpid: 4096, curproc: 96 } },
      pods: [],
    });
    assert.deepEqual(observations.get('pid.available'), { available: 4000, capacity: 4096, time });
  });

  it('observes nothing from an empty node', () => {
    assert.equal(makeObservations({ node: { nodeName: 'n', startTime: 0 }, pods: [] }).observations.size, 0);
  });

  it('looks pod stats up by UID', () => {
    const a = pod('a');
    const b = pod('b');
    const { podStats } = makeObservations(memorySummary(Gi, [memoryStats(a, Mi), memoryStats(b, 2 * Mi)]));
    assert.equal(podStats('a')?.memory?.workingSetBytes, Mi);
    assert.equal(podStats('b')?.memory?.workingSetBytes, 2 * Mi);
    assert.equal(podStats('c'), undefined);
  });
});
