import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isHardThreshold,
  isSignal,
  parseThresholds,
  SIGNAL_CONDITION,
  SIGNAL_RESOURCE,
  SIGNALS,
  thresholdKey,
  thresholdQuantity,
  type Threshold,
  type ThresholdConfig,
} from './signals.ts';
import { Gi, Mi } from './testing.ts';

function config(partial: Partial<ThresholdConfig>): ThresholdConfig {
  return {
    evictionHard: {},
    evictionSoft: {},
    evictionSoftGracePeriod: {},
    evictionMinimumReclaim: {},
    enforceNodeAllocatable: [],
    ...partial,
  };
}

/** Order-independent comparison, as upstream's thresholdList.Equal. */
function sorted(ts: readonly Threshold[]): Threshold[] {
  return [...ts].sort((a, b) => thresholdKey(a).localeCompare(thresholdKey(b)));
}

function parsesTo(cfg: Partial<ThresholdConfig>, expected: Threshold[]): void {
  const { thresholds, errors } = parseThresholds(config(cfg));
  assert.deepEqual(errors, []);
  assert.deepEqual(sorted(thresholds), sorted(expected));
}

/** The config is refused: at least one error, each naming the problem (checked by `pattern`). */
function refuses(cfg: Partial<ThresholdConfig>, pattern: RegExp): void {
  const { errors } = parseThresholds(config(cfg));
  assert.ok(errors.length > 0, 'expected an error');
  assert.ok(
    errors.some((e) => pattern.test(e)),
    `no error matches ${String(pattern)}: ${JSON.stringify(errors)}`,
  );
}

describe('the signal tables (upstream signalToNodeCondition, signalToResource)', () => {
  it('maps each signal to the node condition it drives', () => {
    assert.deepEqual(SIGNAL_CONDITION, {
      'memory.available': 'MemoryPressure',
      'allocatableMemory.available': 'MemoryPressure',
      'nodefs.available': 'DiskPressure',
      'nodefs.inodesFree': 'DiskPressure',
      'imagefs.available': 'DiskPressure',
      'imagefs.inodesFree': 'DiskPressure',
      'pid.available': 'PIDPressure',
    });
  });

  it('maps each signal to the resource its reclaim frees', () => {
    assert.deepEqual(SIGNAL_RESOURCE, {
      'memory.available': 'memory',
      'allocatableMemory.available': 'memory',
      'nodefs.available': 'ephemeral-storage',
      'nodefs.inodesFree': 'inodes',
      'imagefs.available': 'ephemeral-storage',
      'imagefs.inodesFree': 'inodes',
      'pid.available': 'pids',
    });
  });

  it('knows exactly the seven upstream signals', () => {
    assert.equal(SIGNALS.length, 7);
    for (const s of SIGNALS) assert.ok(isSignal(s), s);
    for (const s of ['mem.available', 'memory', 'nodefs.Available', '', 'cpu.available'])
      assert.ok(!isSignal(s), s);
  });
});

describe('parseThresholds (upstream ParseThresholdConfig)', () => {
  it('gives no thresholds and no error for an empty config', () => {
    parsesTo({}, []);
  });

  it('parses hard and soft memory thresholds with their grace period and minimum reclaim', () => {
    parsesTo(
      {
        evictionHard: { 'memory.available': '150Mi' },
        evictionSoft: { 'memory.available': '300Mi' },
        evictionSoftGracePeriod: { 'memory.available': '30s' },
        evictionMinimumReclaim: { 'memory.available': '0' },
      },
      [
        {
          signal: 'memory.available',
          value: { quantity: 150 * Mi },
          gracePeriodMs: 0,
          minReclaim: { quantity: 0 },
        },
        {
          signal: 'memory.available',
          value: { quantity: 300 * Mi },
          gracePeriodMs: 30_000,
          minReclaim: { quantity: 0 },
        },
      ],
    );
  });

  it('parses percentages as fractions of capacity, minimum reclaim included', () => {
    parsesTo(
      {
        evictionHard: { 'memory.available': '10%' },
        evictionSoft: { 'memory.available': '30%' },
        evictionSoftGracePeriod: { 'memory.available': '30s' },
        evictionMinimumReclaim: { 'memory.available': '5%' },
      },
      [
        {
          signal: 'memory.available',
          value: { percentage: 0.1 },
          gracePeriodMs: 0,
          minReclaim: { percentage: 0.05 },
        },
        {
          signal: 'memory.available',
          value: { percentage: 0.3 },
          gracePeriodMs: 30_000,
          minReclaim: { percentage: 0.05 },
        },
      ],
    );
  });

  it('parses disk thresholds for the node and image filesystems', () => {
    parsesTo(
      {
        evictionHard: { 'imagefs.available': '150Mi', 'nodefs.available': '100Mi' },
        evictionSoft: { 'imagefs.available': '300Mi', 'nodefs.available': '200Mi' },
        evictionSoftGracePeriod: { 'imagefs.available': '30s', 'nodefs.available': '30s' },
        evictionMinimumReclaim: { 'imagefs.available': '2Gi', 'nodefs.available': '1Gi' },
      },
      [
        {
          signal: 'imagefs.available',
          value: { quantity: 150 * Mi },
          gracePeriodMs: 0,
          minReclaim: { quantity: 2 * Gi },
        },
        {
          signal: 'nodefs.available',
          value: { quantity: 100 * Mi },
          gracePeriodMs: 0,
          minReclaim: { quantity: Gi },
        },
        {
          signal: 'imagefs.available',
          value: { quantity: 300 * Mi },
          gracePeriodMs: 30_000,
          minReclaim: { quantity: 2 * Gi },
        },
        {
          signal: 'nodefs.available',
          value: { quantity: 200 * Mi },
          gracePeriodMs: 30_000,
          minReclaim: { quantity: Gi },
        },
      ],
    );
  });

  it('parses inode thresholds as plain counts', () => {
    parsesTo(
      {
        evictionHard: { 'imagefs.inodesFree': '150Mi', 'nodefs.inodesFree': '100Mi' },
        evictionSoft: { 'imagefs.inodesFree': '300Mi', 'nodefs.inodesFree': '200Mi' },
        evictionSoftGracePeriod: { 'imagefs.inodesFree': '30s', 'nodefs.inodesFree': '30s' },
        evictionMinimumReclaim: { 'imagefs.inodesFree': '2Gi', 'nodefs.inodesFree': '1Gi' },
      },
      [
        {
          signal: 'imagefs.inodesFree',
          value: { quantity: 150 * Mi },
          gracePeriodMs: 0,
          minReclaim: { quantity: 2 * Gi },
        },
        {
          signal: 'nodefs.inodesFree',
          value: { quantity: 100 * Mi },
          gracePeriodMs: 0,
          minReclaim: { quantity: Gi },
        },
        {
          signal: 'imagefs.inodesFree',
          value: { quantity: 300 * Mi },
          gracePeriodMs: 30_000,
          minReclaim: { quantity: 2 * Gi },
        },
        {
          signal: 'nodefs.inodesFree',
          value: { quantity: 200 * Mi },
          gracePeriodMs: 30_000,
          minReclaim: { quantity: Gi },
        },
      ],
    );
  });

  it('parses a PID threshold', () => {
    parsesTo({ evictionHard: { 'pid.available': '1000' } }, [
      { signal: 'pid.available', value: { quantity: 1000 }, gracePeriodMs: 0 },
    ]);
  });

  it('accepts decimal suffixes and plain byte counts', () => {
    parsesTo({ evictionHard: { 'memory.available': '100M', 'nodefs.available': '1073741824' } }, [
      { signal: 'memory.available', value: { quantity: 100_000_000 }, gracePeriodMs: 0 },
      { signal: 'nodefs.available', value: { quantity: Gi }, gracePeriodMs: 0 },
    ]);
  });

  it('skips a hard threshold of 0% (the signal is disabled)', () => {
    parsesTo({ evictionHard: { 'memory.available': '0%' } }, []);
  });

  it('skips a hard threshold of 100% (the signal is disabled)', () => {
    parsesTo({ evictionHard: { 'memory.available': '100%' } }, []);
  });

  it('skips a disabled soft threshold without asking for its grace period', () => {
    parsesTo({ evictionSoft: { 'memory.available': '0%', 'nodefs.available': '100%' } }, []);
  });

  it('adds an allocatableMemory.available copy of each hard memory.available threshold with enforceNodeAllocatable=pods', () => {
    parsesTo(
      {
        evictionHard: { 'memory.available': '150Mi' },
        evictionMinimumReclaim: { 'memory.available': '50Mi' },
        enforceNodeAllocatable: ['pods'],
      },
      [
        {
          signal: 'memory.available',
          value: { quantity: 150 * Mi },
          gracePeriodMs: 0,
          minReclaim: { quantity: 50 * Mi },
        },
        {
          signal: 'allocatableMemory.available',
          value: { quantity: 150 * Mi },
          gracePeriodMs: 0,
          minReclaim: { quantity: 50 * Mi },
        },
      ],
    );
  });

  it('adds no allocatable threshold without `pods` in enforceNodeAllocatable', () => {
    parsesTo({ evictionHard: { 'memory.available': '150Mi' }, enforceNodeAllocatable: ['system-reserved'] }, [
      { signal: 'memory.available', value: { quantity: 150 * Mi }, gracePeriodMs: 0 },
    ]);
  });

  it('does not copy a soft memory threshold or another signal to allocatable', () => {
    parsesTo(
      {
        evictionHard: { 'nodefs.available': '1Gi' },
        evictionSoft: { 'memory.available': '300Mi' },
        evictionSoftGracePeriod: { 'memory.available': '1m' },
        enforceNodeAllocatable: ['pods'],
      },
      [
        { signal: 'nodefs.available', value: { quantity: Gi }, gracePeriodMs: 0 },
        { signal: 'memory.available', value: { quantity: 300 * Mi }, gracePeriodMs: 60_000 },
      ],
    );
  });

  it('accepts allocatableMemory.available named directly', () => {
    parsesTo({ evictionHard: { 'allocatableMemory.available': '1Gi' } }, [
      { signal: 'allocatableMemory.available', value: { quantity: Gi }, gracePeriodMs: 0 },
    ]);
  });

  it('accepts a grace period for a signal that has no soft threshold', () => {
    parsesTo({ evictionSoftGracePeriod: { 'memory.available': '30s' } }, []);
  });

  it('refuses an unsupported signal in evictionHard', () => {
    refuses({ evictionHard: { 'mem.available': '150Mi' } }, /unsupported eviction signal mem\.available/);
  });

  it('refuses an unsupported signal in evictionSoft, the grace periods and the minimum reclaims', () => {
    refuses(
      { evictionSoft: { 'mem.available': '150Mi' }, evictionSoftGracePeriod: { 'mem.available': '30s' } },
      /evictionSoft.*unsupported eviction signal/,
    );
    refuses(
      { evictionSoftGracePeriod: { 'mem.available': '30s' } },
      /unsupported eviction signal mem\.available/,
    );
    refuses(
      { evictionMinimumReclaim: { 'mem.available': '1Gi' } },
      /unsupported eviction signal mem\.available/,
    );
  });

  it('reports the invalid statement even when the others are valid', () => {
    const { errors, thresholds } = parseThresholds(
      config({ evictionHard: { 'memory.available': '150Mi', 'mem.available': '150Mi' } }),
    );
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? '', /mem\.available/);
    assert.deepEqual(thresholds, [
      { signal: 'memory.available', value: { quantity: 150 * Mi }, gracePeriodMs: 0 },
    ]);
  });

  it('refuses a negative hard threshold', () => {
    refuses({ evictionHard: { 'memory.available': '-150Mi' } }, /memory\.available.*-150Mi/);
  });

  it('refuses a zero hard threshold quantity (it must be positive)', () => {
    refuses({ evictionHard: { 'memory.available': '0' } }, /memory\.available.*positive/);
  });

  it('refuses a negative percentage', () => {
    refuses({ evictionHard: { 'memory.available': '-15%' } }, /memory\.available.*-15%/);
  });

  it('refuses a percentage above 100%', () => {
    refuses({ evictionHard: { 'nodefs.available': '150%' } }, /nodefs\.available.*<= 100%/);
  });

  it('refuses a percentage that is not a number', () => {
    refuses({ evictionHard: { 'memory.available': 'foo%' } }, /memory\.available.*foo%/);
    refuses({ evictionHard: { 'memory.available': '%' } }, /memory\.available/);
  });

  it('refuses a quantity that does not parse', () => {
    refuses({ evictionHard: { 'memory.available': 'lots' } }, /memory\.available.*lots/);
  });

  it('refuses a negative soft threshold', () => {
    refuses(
      {
        evictionSoft: { 'memory.available': '-150Mi' },
        evictionSoftGracePeriod: { 'memory.available': '30s' },
      },
      /memory\.available/,
    );
  });

  it('refuses a soft threshold without a grace period', () => {
    const { errors, thresholds } = parseThresholds(config({ evictionSoft: { 'memory.available': '150Mi' } }));
    assert.match(
      errors.join('\n'),
      /memory\.available.*grace period must be specified for the soft eviction threshold/,
    );
    assert.deepEqual(thresholds, []);
  });

  it('refuses a negative grace period', () => {
    refuses(
      {
        evictionSoft: { 'memory.available': '150Mi' },
        evictionSoftGracePeriod: { 'memory.available': '-30s' },
      },
      /must be a positive value/,
    );
  });

  it('refuses a grace period that is not a Go duration', () => {
    refuses(
      {
        evictionSoft: { 'memory.available': '150Mi' },
        evictionSoftGracePeriod: { 'memory.available': '30' },
      },
      /evictionSoftGracePeriod\[memory\.available\]/,
    );
  });

  it('refuses a negative minimum reclaim', () => {
    refuses(
      {
        evictionHard: { 'memory.available': '150Mi' },
        evictionMinimumReclaim: { 'memory.available': '-300Mi' },
      },
      /evictionMinimumReclaim\[memory\.available\]/,
    );
  });

  it('refuses a minimum reclaim of 0% (a percentage must be positive)', () => {
    refuses(
      { evictionHard: { 'memory.available': '150Mi' }, evictionMinimumReclaim: { 'memory.available': '0%' } },
      /evictionMinimumReclaim\[memory\.available\].*positive/,
    );
  });

  it('treats a soft threshold with a 0s grace period as hard, as upstream does', () => {
    const { thresholds, errors } = parseThresholds(
      config({
        evictionSoft: { 'memory.available': '1Gi' },
        evictionSoftGracePeriod: { 'memory.available': '0s' },
      }),
    );
    assert.deepEqual(errors, []);
    assert.equal(thresholds.length, 1);
    assert.ok(thresholds[0] && isHardThreshold(thresholds[0]));
  });

  it('gives the same key to the same statement parsed twice', () => {
    const cfg = config({
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' },
      evictionSoft: { 'memory.available': '200Mi' },
      evictionSoftGracePeriod: { 'memory.available': '1m' },
    });
    const a = parseThresholds(cfg).thresholds.map(thresholdKey);
    const b = parseThresholds(cfg).thresholds.map(thresholdKey);
    assert.deepEqual(a, b);
    assert.equal(new Set(a).size, 3, 'hard and soft memory thresholds have distinct keys');
  });
});

describe('threshold values', () => {
  it('resolves a quantity regardless of capacity', () => {
    assert.equal(thresholdQuantity({ quantity: Gi }, 10 * Gi), Gi);
    assert.equal(thresholdQuantity({ quantity: Gi }, 0), Gi);
  });

  it('resolves a percentage against the capacity, truncated to a whole unit', () => {
    assert.equal(thresholdQuantity({ percentage: 0.1 }, 1000 * Mi), 100 * Mi);
    assert.equal(thresholdQuantity({ percentage: 0.3 }, 1001), 300);
    assert.equal(thresholdQuantity({ percentage: 0.05 }, 0), 0);
  });

  it('is hard exactly when its grace period is zero', () => {
    assert.ok(isHardThreshold({ signal: 'memory.available', value: { quantity: 1 }, gracePeriodMs: 0 }));
    assert.ok(!isHardThreshold({ signal: 'memory.available', value: { quantity: 1 }, gracePeriodMs: 1 }));
  });

  it('keys differ by signal, value and grace period', () => {
    const base: Threshold = { signal: 'memory.available', value: { quantity: Gi }, gracePeriodMs: 0 };
    const keys = [
      base,
      { ...base, signal: 'allocatableMemory.available' },
      { ...base, value: { quantity: 2 * Gi } },
      { ...base, value: { percentage: 0.1 } },
      { ...base, gracePeriodMs: 60_000 },
    ].map((t) => thresholdKey(t as Threshold));
    assert.equal(new Set(keys).size, keys.length);
  });
});
