import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeletPod, Volume } from '../api/types.ts';
import type { PodStats } from '../stats/index.ts';
import { localStorageBreach } from './local-storage.ts';
import { container, Gi, Mi, pod } from './testing.ts';
import { buildPod } from '../../test/kit/pod.ts';

interface Usage {
  /** Per container name: rootfs and logs bytes. */
  containers?: Record<string, { root?: number; logs?: number }>;
  /** Per volume name: bytes used. */
  volumes?: Record<string, number>;
}

function stats(p: KubeletPod, usage: Usage): PodStats<number> {
  return {
    podRef: { name: p.metadata.name, namespace: p.metadata.namespace, uid: p.metadata.uid },
    startTime: 0,
    containers: Object.entries(usage.containers ?? {}).map(([name, u]) => ({
      name,
      startTime: 0,
      ...(u.root === undefined ? {} : { rootfs: { time: 0, usedBytes: u.root } }),
      ...(u.logs === undefined ? {} : { logs: { time: 0, usedBytes: u.logs } }),
    })),
    volume: Object.entries(usage.volumes ?? {}).map(([name, usedBytes]) => ({ name, time: 0, usedBytes })),
  };
}

const limit = (storage: string) => ({ limits: { 'ephemeral-storage': storage } });

describe('localStorageBreach: emptyDir sizeLimit (upstream emptyDirLimitEviction)', () => {
  const cache: Volume = { name: 'cache', emptyDir: { sizeLimit: '100Mi' } };

  it('breaches when an emptyDir uses more than its sizeLimit', () => {
    const p = pod('p', { volumes: [cache] });
    assert.deepEqual(localStorageBreach(p, stats(p, { volumes: { cache: 101 * Mi } }), false), {
      signal: 'emptydirfs.limit',
      message: 'Usage of EmptyDir volume "cache" exceeds the limit "100Mi". ',
    });
  });

  it('does not breach at exactly the sizeLimit', () => {
    const p = pod('p', { volumes: [cache] });
    assert.equal(localStorageBreach(p, stats(p, { volumes: { cache: 100 * Mi } }), false), undefined);
  });

  it('ignores an emptyDir without a sizeLimit', () => {
    const p = pod('p', { volumes: [{ name: 'cache', emptyDir: {} }] });
    assert.equal(localStorageBreach(p, stats(p, { volumes: { cache: 100 * 1024 * Mi } }), false), undefined);
  });

  it('ignores a zero sizeLimit', () => {
    const p = pod('p', { volumes: [{ name: 'cache', emptyDir: { sizeLimit: '0' } }] });
    assert.equal(localStorageBreach(p, stats(p, { volumes: { cache: Mi } }), false), undefined);
  });

  it('ignores an emptyDir the summary has no stats for', () => {
    const p = pod('p', { volumes: [cache] });
    assert.equal(localStorageBreach(p, stats(p, {}), false), undefined);
  });

  it('applies to a memory-backed emptyDir too', () => {
    const p = pod('p', { volumes: [{ name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } }] });
    assert.equal(
      localStorageBreach(p, stats(p, { volumes: { shm: 65 * Mi } }), false)?.signal,
      'emptydirfs.limit',
    );
  });

  it('names the first breaching emptyDir in spec order', () => {
    const p = pod('p', {
      volumes: [
        { name: 'a', emptyDir: { sizeLimit: '10Mi' } },
        { name: 'b', emptyDir: { sizeLimit: '10Mi' } },
      ],
    });
    const breach = localStorageBreach(p, stats(p, { volumes: { b: 20 * Mi, a: 20 * Mi } }), false);
    assert.match(breach?.message ?? '', /volume "a"/);
  });

  it('is reported before a pod or container limit breach', () => {
    const p = pod('p', { volumes: [cache], ...limit('10Mi') });
    const breach = localStorageBreach(
      p,
      stats(p, { containers: { p: { root: 50 * Mi, logs: 50 * Mi } }, volumes: { cache: 200 * Mi } }),
      false,
    );
    assert.equal(breach?.signal, 'emptydirfs.limit');
  });
});

describe('localStorageBreach: pod ephemeral-storage limit (upstream podEphemeralStorageLimitEviction)', () => {
  it('breaches when rootfs, logs and local volumes together exceed the containers’ total limit', () => {
    // 100 + 50 + 60 = 210Mi > 200Mi (the container's own 150Mi is within its limit).
    const p = pod('p', { volumes: [{ name: 'scratch', emptyDir: {} }], ...limit('200Mi') });
    assert.deepEqual(
      localStorageBreach(
        p,
        stats(p, { containers: { p: { root: 100 * Mi, logs: 50 * Mi } }, volumes: { scratch: 60 * Mi } }),
        false,
      ),
      {
        signal: 'ephemeralpodfs.limit',
        message: 'Pod ephemeral local storage usage exceeds the total limit of containers 200Mi. ',
      },
    );
  });

  it('does not breach at exactly the limit', () => {
    const p = pod('p', { volumes: [{ name: 'scratch', emptyDir: {} }], ...limit('200Mi') });
    const s = stats(p, {
      containers: { p: { root: 100 * Mi, logs: 50 * Mi } },
      volumes: { scratch: 50 * Mi },
    });
    assert.equal(localStorageBreach(p, s, false), undefined);
  });

  it('sums every container’s usage against the sum of their limits', () => {
    const p = pod('p', {
      containers: [container('a', limit('100Mi')), container('b', limit('100Mi'))],
    });
    // a: 90Mi, b: 90Mi — each within its own limit, 180Mi within 200Mi.
    const within = stats(p, {
      containers: { a: { root: 60 * Mi, logs: 30 * Mi }, b: { root: 60 * Mi, logs: 30 * Mi } },
    });
    assert.equal(localStorageBreach(p, within, false), undefined);
    // a: 90Mi, b: 90Mi plus a 30Mi configMap: 210Mi over 200Mi.
    const p2 = pod('p2', {
      containers: [container('a', limit('100Mi')), container('b', limit('100Mi'))],
      volumes: [{ name: 'cfg', configMap: { name: 'c' } }],
    });
    const over = stats(p2, {
      containers: { a: { root: 60 * Mi, logs: 30 * Mi }, b: { root: 60 * Mi, logs: 30 * Mi } },
      volumes: { cfg: 30 * Mi },
    });
    assert.equal(localStorageBreach(p2, over, false)?.signal, 'ephemeralpodfs.limit');
  });

  it('counts configMap and downwardAPI volumes but not hostPath or memory emptyDirs (upstream IsLocalEphemeralVolume)', () => {
    const volumes: Volume[] = [
      { name: 'host', hostPath: { path: '/data' } },
      { name: 'ram', emptyDir: { medium: 'Memory' } },
      { name: 'claim', persistentVolumeClaim: { claimName: 'c' } },
      { name: 'cfg', configMap: { name: 'c' } },
      { name: 'info', downwardAPI: {} },
    ];
    const p = pod('p', { volumes, ...limit('100Mi') });
    const notCounted = stats(p, { volumes: { host: Gi, ram: Gi, claim: Gi } });
    assert.equal(localStorageBreach(p, notCounted, false), undefined);
    assert.equal(
      localStorageBreach(p, stats(p, { volumes: { cfg: 101 * Mi } }), false)?.signal,
      'ephemeralpodfs.limit',
    );
    assert.equal(
      localStorageBreach(p, stats(p, { volumes: { info: 101 * Mi } }), false)?.signal,
      'ephemeralpodfs.limit',
    );
  });

  it('leaves the writable layer out with a dedicated image filesystem', () => {
    const p = pod('p', { ...limit('100Mi') });
    const s = stats(p, { containers: { p: { root: 500 * Mi, logs: 10 * Mi } } });
    assert.equal(localStorageBreach(p, s, true), undefined);
    assert.equal(localStorageBreach(p, s, false)?.signal, 'ephemeralpodfs.limit');
  });

  it('still counts logs with a dedicated image filesystem', () => {
    const p = pod('p', { ...limit('100Mi') });
    const s = stats(p, { containers: { p: { root: 0, logs: 101 * Mi } } });
    assert.equal(localStorageBreach(p, s, true)?.signal, 'ephemeralpodfs.limit');
  });

  it('applies no pod limit when no container sets one', () => {
    const p = pod('p', { requests: { 'ephemeral-storage': '1Mi' } });
    assert.equal(
      localStorageBreach(p, stats(p, { containers: { p: { root: Gi, logs: Gi } } }), false),
      undefined,
    );
  });

  it('takes an init container’s larger limit as the pod total (then only the container limit is breached)', () => {
    const p = pod('p', { ...limit('100Mi'), initContainers: [container('setup', limit('1Gi'))] });
    // 150Mi is over the app container's own limit (the container check would fire), but within the pod's 1Gi.
    const s = stats(p, { containers: { p: { root: 100 * Mi, logs: 50 * Mi } } });
    assert.equal(localStorageBreach(p, s, false)?.signal, 'ephemeralcontainerfs.limit');
  });
});

describe('localStorageBreach: container ephemeral-storage limit (upstream containerEphemeralStorageLimitEviction)', () => {
  it('breaches when one container’s rootfs and logs exceed its own limit', () => {
    const p = pod('p', { containers: [container('a', limit('100Mi')), container('b', limit('1Gi'))] });
    const s = stats(p, { containers: { a: { root: 100 * Mi, logs: 50 * Mi }, b: { root: Mi, logs: Mi } } });
    assert.deepEqual(localStorageBreach(p, s, false), {
      signal: 'ephemeralcontainerfs.limit',
      message: 'Container a exceeded its local ephemeral storage limit "100Mi". ',
    });
  });

  it('does not breach at exactly the limit', () => {
    const p = pod('p', { containers: [container('a', limit('100Mi')), container('b', limit('1Gi'))] });
    const s = stats(p, { containers: { a: { root: 50 * Mi, logs: 50 * Mi } } });
    assert.equal(localStorageBreach(p, s, false), undefined);
  });

  it('counts only logs with a dedicated image filesystem', () => {
    const p = pod('p', { containers: [container('a', limit('100Mi')), container('b', limit('1Gi'))] });
    assert.equal(
      localStorageBreach(p, stats(p, { containers: { a: { root: 500 * Mi, logs: 50 * Mi } } }), true),
      undefined,
    );
    assert.equal(
      localStorageBreach(p, stats(p, { containers: { a: { root: 0, logs: 101 * Mi } } }), true)?.signal,
      'ephemeralcontainerfs.limit',
    );
  });

  it('ignores containers without a limit and a zero limit', () => {
    const p = pod('p', {
      containers: [container('free'), container('zero', limit('0')), container('limited', limit('1Gi'))],
    });
    const s = stats(p, {
      containers: { free: { root: 10 * Gi }, zero: { root: 10 * Gi }, limited: { root: Mi } },
    });
    // The pod total (1Gi) is exceeded, which is reported; the containers themselves are not.
    assert.equal(localStorageBreach(p, s, false)?.signal, 'ephemeralpodfs.limit');
    const single = pod('single', {
      containers: [container('zero', limit('0')), container('limited', limit('1Gi'))],
    });
    const s2 = stats(single, { containers: { zero: { root: 500 * Mi }, limited: { root: Mi } } });
    assert.equal(localStorageBreach(single, s2, false), undefined);
  });

  it('counts a container the spec does not have toward the pod total, as upstream containerUsage', () => {
    const p = pod('p', { containers: [container('a', limit('1Gi')), container('b', limit('1Gi'))] });
    const s = stats(p, { containers: { gone: { root: Gi, logs: Gi }, a: { root: Mi } } });
    assert.equal(localStorageBreach(p, s, false)?.signal, 'ephemeralpodfs.limit');
  });

  it('checks no container limit for a container the spec does not have', () => {
    const p = pod('p', { containers: [container('a', limit('1Gi')), container('b', limit('10Gi'))] });
    const s = stats(p, { containers: { gone: { root: 2 * Gi }, a: { root: Mi } } });
    assert.equal(localStorageBreach(p, s, false), undefined);
  });
});

describe('localStorageBreach: nothing to report', () => {
  it('reports nothing for a pod without limits or volumes', () => {
    const p = pod('p');
    assert.equal(
      localStorageBreach(p, stats(p, { containers: { p: { root: Gi, logs: Gi } } }), false),
      undefined,
    );
  });

  it('throws on a malformed sizeLimit (the manager logs and skips the pod)', () => {
    const p = pod('p', { volumes: [{ name: 'cache', emptyDir: { sizeLimit: 'big' } }] });
    assert.throws(() => localStorageBreach(p, stats(p, { volumes: { cache: 1 } }), false), /big/);
  });
});

void describe('local storage messages write quantities canonically, as upstream', () => {
  void it('sums two containers’ limits into one canonical quantity and canonicalizes an emptyDir limit', () => {
    const twoLimits: KubeletPod = buildPod('p', {
      typeMeta: true,
      namespace: 'ns',
      uid: 'u1',
      image: 'i',
      containers: ['a', 'b'].map((name) => ({ name, resources: { limits: { 'ephemeral-storage': '1Gi' } } })),
      volumes: [{ name: 'v', emptyDir: { sizeLimit: '2048Ki' } }],
    });
    const stats: PodStats<number> = {
      podRef: { name: 'p', namespace: 'ns', uid: 'u1' },
      startTime: 0,
      containers: [{ name: 'a', startTime: 0, logs: { time: 0, usedBytes: 3 * 2 ** 30 } }],
    };
    assert.equal(
      localStorageBreach(twoLimits, stats, false)?.message,
      'Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. ',
    );
    const withVolume: PodStats<number> = {
      ...stats,
      containers: [],
      volume: [{ name: 'v', time: 0, usedBytes: 3 * 2 ** 20 }],
    };
    assert.equal(
      localStorageBreach(twoLimits, withVolume, false)?.message,
      'Usage of EmptyDir volume "v" exceeds the limit "2Mi". ',
    );
  });
});
