import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import type { PodStats } from '../stats/index.ts';
import type { PodStatsLookup } from './observations.ts';
import {
  evictionMessage,
  formatBytes,
  podDiskUsage,
  rankDiskPressure,
  rankerFor,
  rankMemoryPressure,
  rankPIDPressure,
  type FsStatsType,
} from './ranking.ts';
import {
  container,
  containerMemoryStats,
  diskStats,
  emptyDir,
  Gi,
  HIGH_PRIORITY,
  Ki,
  LOW_PRIORITY,
  memoryStats,
  Mi,
  names,
  pod,
  processStats,
} from './testing.ts';

const ALL: FsStatsType[] = ['root', 'logs', 'localVolumeSource'];

function lookup(stats: PodStats<number>[]): PodStatsLookup {
  const byUid = new Map(stats.map((s) => [s.podRef.uid, s]));
  return (uid) => byUid.get(uid);
}

/** Each permutation tried: the ranking must not depend on the input order. */
function ranksAs(rank: (pods: KubeletPod[]) => KubeletPod[], expected: KubeletPod[]): void {
  const inputs = [expected, [...expected].reverse(), [...expected.slice(1), ...expected.slice(0, 1)]];
  for (const input of inputs) assert.deepEqual(names(rank(input)), names(expected));
}

const memReq = (memory: string) => ({ requests: { memory } });
const diskReq = (storage: string) => ({ requests: { 'ephemeral-storage': storage } });
const withVolume = { volumes: [emptyDir()] };

describe('rankMemoryPressure (upstream exceedMemoryRequests, priority, memory)', () => {
  it('puts a pod exceeding its request before one below it, whatever their priorities', () => {
    const below = pod('below-requests', { priority: LOW_PRIORITY, ...memReq('200Mi') });
    const exceeds = pod('exceeds-requests', { priority: HIGH_PRIORITY, ...memReq('100Mi') });
    const stats = lookup([memoryStats(below, 199 * Mi), memoryStats(exceeds, 101 * Mi)]);
    ranksAs(rankMemoryPressure(stats), [exceeds, below]);
  });

  it('orders by usage above request among pods of equal priority (upstream TestOrderedByMemory)', () => {
    const p1 = pod('best-effort-high');
    const p2 = pod('best-effort-low');
    const p3 = pod('burstable-high', { requests: { memory: '100Mi' }, limits: { memory: '1Gi' } });
    const p4 = pod('burstable-low', { requests: { memory: '100Mi' }, limits: { memory: '1Gi' } });
    const p5 = pod('guaranteed-high', { requests: { memory: '1Gi' }, limits: { memory: '1Gi' } });
    const p6 = pod('guaranteed-low', { requests: { memory: '1Gi' }, limits: { memory: '1Gi' } });
    const stats = lookup([
      memoryStats(p1, 500 * Mi), // 500 over
      memoryStats(p2, 300 * Mi), // 300 over
      memoryStats(p3, 800 * Mi), // 700 over
      memoryStats(p4, 300 * Mi), // 200 over
      memoryStats(p5, 800 * Mi), // -200
      memoryStats(p6, 200 * Mi), // -800
    ]);
    ranksAs(rankMemoryPressure(stats), [p3, p1, p2, p4, p5, p6]);
  });

  it('orders by exceeding, then priority, then usage above request (upstream TestOrderedByPriorityMemory)', () => {
    const p1 = pod('above-requests-low-priority-high-usage', { priority: LOW_PRIORITY });
    const p2 = pod('above-requests-low-priority-low-usage', { priority: LOW_PRIORITY });
    const p3 = pod('above-requests-high-priority-high-usage', {
      priority: HIGH_PRIORITY,
      ...memReq('100Mi'),
    });
    const p4 = pod('above-requests-high-priority-low-usage', { priority: HIGH_PRIORITY, ...memReq('100Mi') });
    const p5 = pod('below-requests-low-priority-high-usage', { priority: LOW_PRIORITY, ...memReq('1Gi') });
    const p6 = pod('below-requests-low-priority-low-usage', { priority: LOW_PRIORITY, ...memReq('1Gi') });
    const p7 = pod('below-requests-high-priority-high-usage', { priority: HIGH_PRIORITY, ...memReq('1Gi') });
    const p8 = pod('below-requests-high-priority-low-usage', { priority: HIGH_PRIORITY, ...memReq('1Gi') });
    const stats = lookup([
      memoryStats(p1, 500 * Mi),
      memoryStats(p2, 50 * Mi),
      memoryStats(p3, 600 * Mi),
      memoryStats(p4, 150 * Mi),
      memoryStats(p5, 800 * Mi),
      memoryStats(p6, 200 * Mi),
      memoryStats(p7, 800 * Mi),
      memoryStats(p8, 200 * Mi),
    ]);
    ranksAs(rankMemoryPressure(stats), [p1, p2, p3, p4, p5, p6, p7, p8]);
  });

  it('orders by priority, lowest first, when usage does not decide (upstream TestOrderedByPriority)', () => {
    const low = pod('low-priority', { priority: -134 });
    const medium = pod('medium-priority', { priority: 1, requests: { cpu: '100m', memory: '100Mi' } });
    const high = pod('high-priority', { priority: 12534, requests: { cpu: '200m', memory: '200Mi' } });
    const stats = lookup([memoryStats(low, 0), memoryStats(medium, 0), memoryStats(high, 0)]);
    ranksAs(rankMemoryPressure(stats), [low, medium, high]);
  });

  it('counts a pod without a priority as priority 0', () => {
    const none = pod('no-priority');
    const negative = pod('negative', { priority: -1 });
    const positive = pod('positive', { priority: 1 });
    const stats = lookup([memoryStats(none, Mi), memoryStats(negative, Mi), memoryStats(positive, Mi)]);
    ranksAs(rankMemoryPressure(stats), [negative, none, positive]);
  });

  it('compares against the whole pod request: init containers and overhead included', () => {
    // 300Mi used. `init` requests 400Mi through its init container: below. `plain` requests 200Mi: above.
    const init = pod('init', {
      ...memReq('200Mi'),
      initContainers: [container('setup', { requests: { memory: '400Mi' } })],
    });
    const plain = pod('plain', memReq('200Mi'));
    const stats = lookup([memoryStats(init, 300 * Mi), memoryStats(plain, 300 * Mi)]);
    ranksAs(rankMemoryPressure(stats), [plain, init]);
  });

  it('puts pods without stats first, as upstream', () => {
    const unknown = pod('no-stats', { priority: HIGH_PRIORITY });
    const heavy = pod('heavy', { priority: LOW_PRIORITY });
    const stats = lookup([memoryStats(heavy, Gi)]);
    ranksAs(rankMemoryPressure(stats), [unknown, heavy]);
  });

  it('treats a pod whose stats lack memory as using none', () => {
    const nothing = pod('no-memory-stats');
    const some = pod('some');
    const stats = lookup([{ ...memoryStats(nothing, 0), memory: undefined }, memoryStats(some, Mi)]);
    ranksAs(rankMemoryPressure(stats), [some, nothing]);
  });
});

describe('rankDiskPressure (upstream exceedDiskRequests, priority, disk)', () => {
  it('puts a pod exceeding its ephemeral-storage request first (upstream TestOrderedByExceedsRequestDisk)', () => {
    const below = pod('below-requests', { priority: LOW_PRIORITY, ...diskReq('200Mi') });
    const exceeds = pod('exceeds-requests', { priority: HIGH_PRIORITY, ...diskReq('100Mi') });
    const stats = lookup([
      diskStats(below, { root: 100 * Mi, logs: 99 * Mi }),
      diskStats(exceeds, { root: 90 * Mi, logs: 11 * Mi }),
    ]);
    ranksAs(rankDiskPressure(stats, ALL, 'ephemeral-storage'), [exceeds, below]);
  });

  it('orders by usage above request among pods of equal priority (upstream TestOrderedbyDisk)', () => {
    const mk = (name: string, req?: string, lim?: string) =>
      pod(name, {
        ...withVolume,
        ...(req ? { requests: { 'ephemeral-storage': req } } : {}),
        ...(lim ? { limits: { 'ephemeral-storage': lim } } : {}),
      });
    const p1 = mk('best-effort-high');
    const p2 = mk('best-effort-low');
    const p3 = mk('burstable-high', '100Mi', '400Mi');
    const p4 = mk('burstable-low', '100Mi', '400Mi');
    const p5 = mk('guaranteed-high', '400Mi', '400Mi');
    const p6 = mk('guaranteed-low', '400Mi', '400Mi');
    const stats = lookup([
      diskStats(p1, { root: 50 * Mi, logs: 100 * Mi, perVolume: 150 * Mi }), // 300Mi
      diskStats(p2, { root: 25 * Mi, logs: 25 * Mi, perVolume: 50 * Mi }), // 100Mi
      diskStats(p3, { root: 150 * Mi, logs: 150 * Mi, perVolume: 50 * Mi }), // 350 - 100 = 250Mi
      diskStats(p4, { root: 25 * Mi, logs: 35 * Mi, perVolume: 50 * Mi }), // 110 - 100 = 10Mi
      diskStats(p5, { root: 225 * Mi, logs: 100 * Mi, perVolume: 50 * Mi }), // 375 - 400 = -25Mi
      diskStats(p6, { root: 25 * Mi, logs: 45 * Mi, perVolume: 50 * Mi }), // 120 - 400 = -280Mi
    ]);
    ranksAs(rankDiskPressure(stats, ALL, 'ephemeral-storage'), [p1, p3, p2, p4, p5, p6]);
  });

  it('orders by exceeding, then priority, then usage above request (upstream TestOrderedByPriorityDisk)', () => {
    const mk = (name: string, priority: number, req?: string) =>
      pod(name, { priority, ...withVolume, ...(req ? diskReq(req) : {}) });
    const p1 = mk('above-requests-low-priority-high-usage', LOW_PRIORITY);
    const p2 = mk('above-requests-low-priority-low-usage', LOW_PRIORITY);
    const p3 = mk('above-requests-high-priority-high-usage', HIGH_PRIORITY, '100Mi');
    const p4 = mk('above-requests-high-priority-low-usage', HIGH_PRIORITY, '100Mi');
    const p5 = mk('below-requests-low-priority-high-usage', LOW_PRIORITY, '1Gi');
    const p6 = mk('below-requests-low-priority-low-usage', LOW_PRIORITY, '1Gi');
    const p7 = mk('below-requests-high-priority-high-usage', HIGH_PRIORITY, '1Gi');
    const p8 = mk('below-requests-high-priority-low-usage', HIGH_PRIORITY, '1Gi');
    const stats = lookup([
      diskStats(p1, { root: 200 * Mi, logs: 100 * Mi, perVolume: 200 * Mi }),
      diskStats(p2, { root: 10 * Mi, logs: 10 * Mi, perVolume: 30 * Mi }),
      diskStats(p3, { root: 200 * Mi, logs: 150 * Mi, perVolume: 250 * Mi }),
      diskStats(p4, { root: 90 * Mi, logs: 50 * Mi, perVolume: 10 * Mi }),
      diskStats(p5, { root: 500 * Mi, logs: 200 * Mi, perVolume: 100 * Mi }),
      diskStats(p6, { root: 50 * Mi, logs: 100 * Mi, perVolume: 50 * Mi }),
      diskStats(p7, { root: 250 * Mi, logs: 500 * Mi, perVolume: 50 * Mi }),
      diskStats(p8, { root: 100 * Mi, logs: 60 * Mi, perVolume: 40 * Mi }),
    ]);
    ranksAs(rankDiskPressure(stats, ALL, 'ephemeral-storage'), [p1, p2, p3, p4, p5, p6, p7, p8]);
  });

  it('orders inodes by the most used (upstream TestOrderedbyInodes)', () => {
    const low = pod('low', withVolume);
    const medium = pod('medium', withVolume);
    const high = pod('high', withVolume);
    const stats = lookup([
      diskStats(low, { root: 50_000, logs: 100_000, perVolume: 50_000 }, 'inodes'), // 200000
      diskStats(medium, { root: 100_000, logs: 150_000, perVolume: 50_000 }, 'inodes'), // 300000
      diskStats(high, { root: 200_000, logs: 150_000, perVolume: 50_000 }, 'inodes'), // 400000
    ]);
    ranksAs(rankDiskPressure(stats, ALL, 'inodes'), [high, medium, low]);
  });

  it('orders inodes by priority, then the most used (upstream TestOrderedByPriorityInodes)', () => {
    const p1 = pod('low-priority-high-usage', { priority: LOW_PRIORITY, ...withVolume });
    const p2 = pod('low-priority-low-usage', { priority: LOW_PRIORITY, ...withVolume });
    const p3 = pod('high-priority-high-usage', { priority: HIGH_PRIORITY, ...withVolume });
    const p4 = pod('high-priority-low-usage', { priority: HIGH_PRIORITY, ...withVolume });
    const stats = lookup([
      diskStats(p1, { root: 50_000, logs: 100_000, perVolume: 250_000 }, 'inodes'), // 400000
      diskStats(p2, { root: 60_000, logs: 30_000, perVolume: 10_000 }, 'inodes'), // 100000
      diskStats(p3, { root: 150_000, logs: 150_000, perVolume: 50_000 }, 'inodes'), // 350000
      diskStats(p4, { root: 10_000, logs: 40_000, perVolume: 100_000 }, 'inodes'), // 150000
    ]);
    ranksAs(rankDiskPressure(stats, ALL, 'inodes'), [p1, p2, p3, p4]);
  });

  it('counts only the filesystems it is told to measure', () => {
    const bigRoot = pod('big-rootfs', withVolume);
    const bigLogs = pod('big-logs', withVolume);
    const bigVolume = pod('big-volume', withVolume);
    const stats = lookup([
      diskStats(bigRoot, { root: 300 * Mi, logs: Mi, perVolume: Mi }),
      diskStats(bigLogs, { root: 2 * Mi, logs: 200 * Mi, perVolume: Mi }),
      diskStats(bigVolume, { root: Mi, logs: Mi, perVolume: 100 * Mi }),
    ]);
    ranksAs(rankDiskPressure(stats, ALL, 'ephemeral-storage'), [bigRoot, bigLogs, bigVolume]);
    ranksAs(rankDiskPressure(stats, ['logs', 'localVolumeSource'], 'ephemeral-storage'), [
      bigLogs,
      bigVolume,
      bigRoot,
    ]);
    ranksAs(rankDiskPressure(stats, ['root'], 'ephemeral-storage'), [bigRoot, bigLogs, bigVolume]);
  });

  it('puts pods without stats first', () => {
    const unknown = pod('no-stats', { priority: HIGH_PRIORITY });
    const heavy = pod('heavy', { priority: LOW_PRIORITY });
    const stats = lookup([diskStats(heavy, { root: Gi })]);
    ranksAs(rankDiskPressure(stats, ALL, 'ephemeral-storage'), [unknown, heavy]);
  });
});

describe('rankPIDPressure (upstream priority, process)', () => {
  it('orders by priority, then the most processes (upstream TestOrderedByPriorityProcess)', () => {
    const p1 = pod('low-priority-high-usage', { priority: LOW_PRIORITY });
    const p2 = pod('low-priority-low-usage', { priority: LOW_PRIORITY });
    const p3 = pod('high-priority-high-usage', { priority: HIGH_PRIORITY });
    const p4 = pod('high-priority-low-usage', { priority: HIGH_PRIORITY });
    const stats = lookup([
      processStats(p1, 20),
      processStats(p2, 6),
      processStats(p3, 20),
      processStats(p4, 5),
    ]);
    ranksAs(rankPIDPressure(stats), [p1, p2, p3, p4]);
  });

  it('ranks priority above process count', () => {
    const many = pod('many-processes', { priority: HIGH_PRIORITY });
    const few = pod('few-processes', { priority: LOW_PRIORITY });
    const stats = lookup([processStats(many, 1000), processStats(few, 1)]);
    ranksAs(rankPIDPressure(stats), [few, many]);
  });

  it('puts a pod without stats first among pods of its priority', () => {
    const unknown = pod('no-stats');
    const busy = pod('busy');
    const stats = lookup([processStats(busy, 100)]);
    ranksAs(rankPIDPressure(stats), [unknown, busy]);
  });
});

describe('rankerFor (upstream buildSignalToRankFunc)', () => {
  const bigRoot = pod('big-rootfs', withVolume);
  const bigLogs = pod('big-logs', withVolume);
  const stats = lookup([
    diskStats(bigRoot, { root: 300 * Mi, logs: Mi, perVolume: Mi }),
    diskStats(bigLogs, { root: Mi, logs: 200 * Mi, perVolume: Mi }),
  ]);
  const inodeStats = lookup([
    diskStats(bigRoot, { root: 300_000, logs: 1000, perVolume: 1000 }, 'inodes'),
    diskStats(bigLogs, { root: 1000, logs: 200_000, perVolume: 1000 }, 'inodes'),
  ]);

  it('without a dedicated image filesystem ranks every disk signal on rootfs, logs and volumes', () => {
    for (const signal of ['nodefs.available', 'imagefs.available'] as const) {
      ranksAs(rankerFor(signal, stats, false), [bigRoot, bigLogs]);
    }
    for (const signal of ['nodefs.inodesFree', 'imagefs.inodesFree'] as const) {
      ranksAs(rankerFor(signal, inodeStats, false), [bigRoot, bigLogs]);
    }
  });

  it('with a dedicated image filesystem ranks nodefs signals on logs and volumes only', () => {
    ranksAs(rankerFor('nodefs.available', stats, true), [bigLogs, bigRoot]);
    ranksAs(rankerFor('nodefs.inodesFree', inodeStats, true), [bigLogs, bigRoot]);
  });

  it('with a dedicated image filesystem ranks imagefs signals on rootfs only', () => {
    const rootVsVolume = pod('big-volume', withVolume);
    const s = lookup([
      diskStats(bigRoot, { root: 100 * Mi }),
      diskStats(rootVsVolume, { root: 50 * Mi, logs: Gi, perVolume: Gi }),
    ]);
    ranksAs(rankerFor('imagefs.available', s, true), [bigRoot, rootVsVolume]);
    ranksAs(rankerFor('imagefs.inodesFree', inodeStats, true), [bigRoot, bigLogs]);
  });

  it('ranks memory and allocatable memory by the memory ranking', () => {
    const hungry = pod('hungry');
    const modest = pod('modest');
    const s = lookup([memoryStats(hungry, Gi), memoryStats(modest, Mi)]);
    for (const signal of ['memory.available', 'allocatableMemory.available'] as const) {
      for (const dedicated of [false, true]) ranksAs(rankerFor(signal, s, dedicated), [hungry, modest]);
    }
  });

  it('ranks PIDs by the process ranking', () => {
    const busy = pod('busy');
    const idle = pod('idle');
    ranksAs(rankerFor('pid.available', lookup([processStats(busy, 50), processStats(idle, 1)]), false), [
      busy,
      idle,
    ]);
  });
});

describe('podDiskUsage (upstream podDiskUsage)', () => {
  const volumes = [
    { name: 'disk', emptyDir: {} },
    { name: 'ram', emptyDir: { medium: 'Memory' } },
    { name: 'host', hostPath: { path: '/data' } },
    { name: 'config', configMap: { name: 'c' } },
    { name: 'repo', gitRepo: { repository: 'r' } },
    { name: 'secret', secret: { secretName: 's' } },
    { name: 'claim', persistentVolumeClaim: { claimName: 'c' } },
  ];
  const p = pod('p', {
    volumes,
    containers: [container('a'), container('b')],
  });
  const stats: PodStats<number> = {
    podRef: { name: 'p', namespace: 'ns', uid: 'p' },
    startTime: 0,
    containers: [
      {
        name: 'a',
        startTime: 0,
        rootfs: { time: 0, usedBytes: 1, inodesUsed: 10 },
        logs: { time: 0, usedBytes: 2 },
      },
      {
        name: 'b',
        startTime: 0,
        rootfs: { time: 0, usedBytes: 4 },
        logs: { time: 0, usedBytes: 8, inodesUsed: 20 },
      },
    ],
    volume: volumes.map((v, i) => ({
      name: v.name,
      time: 0,
      usedBytes: 100 * 2 ** i,
      inodesUsed: 1000 * 2 ** i,
    })),
  };

  it('sums the containers’ rootfs and logs', () => {
    assert.equal(podDiskUsage(stats, p, ['root'], 'ephemeral-storage'), 5);
    assert.equal(podDiskUsage(stats, p, ['logs'], 'ephemeral-storage'), 10);
    assert.equal(podDiskUsage(stats, p, ['root', 'logs'], 'ephemeral-storage'), 15);
  });

  it('counts disk emptyDirs, hostPaths, configMaps and gitRepos, not memory emptyDirs, secrets or claims', () => {
    // disk 100, host 400, config 800, repo 1600
    assert.equal(podDiskUsage(stats, p, ['localVolumeSource'], 'ephemeral-storage'), 2900);
  });

  it('counts inodes, a missing figure as zero', () => {
    assert.equal(podDiskUsage(stats, p, ['root', 'logs'], 'inodes'), 30);
    assert.equal(podDiskUsage(stats, p, ALL, 'inodes'), 30 + 29_000);
  });

  it('counts a volume of the spec without stats as zero', () => {
    const noVolumeStats = { ...stats, volume: undefined };
    assert.equal(podDiskUsage(noVolumeStats, p, ALL, 'ephemeral-storage'), 15);
  });
});

describe('evictionMessage (upstream evictionMessage)', () => {
  it('names the starved resource and each container using more memory than it requests', () => {
    const p = pod('p', { containers: [container('x'), container('y', { requests: { memory: '100Mi' } })] });
    const stats = lookup([containerMemoryStats(p, { x: Gi, y: 150 * Mi })]);
    const { message, offending } = evictionMessage('memory', p, stats);
    assert.equal(
      message,
      'The node was low on resource: memory. ' +
        'Container x was using 1Gi, which exceeds its request of 0. ' +
        'Container y was using 150Mi, which exceeds its request of 100Mi. ',
    );
    assert.deepEqual(offending, [
      { container: 'x', usage: '1Gi' },
      { container: 'y', usage: '150Mi' },
    ]);
  });

  it('leaves out containers within their request', () => {
    const p = pod('p', { containers: [container('x', { requests: { memory: '1Gi' } })] });
    const { message, offending } = evictionMessage('memory', p, lookup([containerMemoryStats(p, { x: Gi })]));
    assert.equal(message, 'The node was low on resource: memory. ');
    assert.deepEqual(offending, []);
  });

  it('counts rootfs plus logs for ephemeral storage', () => {
    const p = pod('p', { containers: [container('x', { requests: { 'ephemeral-storage': '100Mi' } })] });
    const stats = lookup([diskStats(p, { root: 100 * Mi, logs: 28 * Mi })]);
    assert.equal(
      evictionMessage('ephemeral-storage', p, stats).message,
      'The node was low on resource: ephemeral-storage. ' +
        'Container x was using 128Mi, which exceeds its request of 100Mi. ',
    );
  });

  it('says nothing of a container whose rootfs or logs figure is missing', () => {
    const p = pod('p', { containers: [container('x')] });
    const s = diskStats(p, { root: Gi, logs: Gi });
    const c = s.containers[0];
    if (c) delete c.logs;
    assert.equal(
      evictionMessage('ephemeral-storage', p, lookup([s])).message,
      'The node was low on resource: ephemeral-storage. ',
    );
  });

  it('names only the resource for inodes and PIDs', () => {
    const p = pod('p', { containers: [container('x')] });
    const stats = lookup([diskStats(p, { root: Gi, logs: Gi }, 'inodes')]);
    assert.equal(evictionMessage('inodes', p, stats).message, 'The node was low on resource: inodes. ');
    assert.equal(evictionMessage('pids', p, stats).message, 'The node was low on resource: pids. ');
  });

  it('names only the resource for a pod without stats', () => {
    const p = pod('p');
    assert.deepEqual(evictionMessage('memory', p, lookup([])), {
      message: 'The node was low on resource: memory. ',
      offending: [],
    });
  });

  it('ignores stats of containers the spec does not have', () => {
    const p = pod('p', { containers: [container('x', { requests: { memory: '2Gi' } })] });
    const stats = lookup([containerMemoryStats(p, { x: Gi, gone: Gi })]);
    assert.equal(evictionMessage('memory', p, stats).message, 'The node was low on resource: memory. ');
  });
});

describe('formatBytes (resource.Quantity BinarySI String)', () => {
  const cases: [number, string][] = [
    [0, '0'],
    [512, '512'],
    [1500, '1500'],
    [Ki, '1Ki'],
    [1536 * Ki, '1536Ki'],
    [1.5 * Gi, '1536Mi'],
    [Gi, '1Gi'],
    [900 * Mi, '900Mi'],
    [2 ** 40, '1Ti'],
    [2 ** 50, '1Pi'],
    [2 ** 60, '1Ei'],
  ];
  for (const [n, text] of cases) {
    it(`formats ${n} bytes as ${text}`, () => assert.equal(formatBytes(n), text));
  }
});
