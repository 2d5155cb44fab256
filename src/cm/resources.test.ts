import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, Pod } from '../api/types.ts';
import {
  cpuMaxValue,
  cpuSharesToWeight,
  limitValue,
  milliCPUToQuota,
  milliCPUToShares,
  nodeAllocatableConfig,
  podTotals,
  qosTierConfigs,
  resourceConfigForPod,
} from './resources.ts';
import { UNBOUNDED_HUGETLB } from './hugetlb.ts';

const OPTS = { enforceCPULimits: true, cpuPeriodUs: 100_000 };
/** A pod that requests no huge pages: 0 for every page size. */
const NO_HUGE_PAGES = { sizes: {}, others: 0 };

function c(name: string, requests?: Record<string, string>, limits?: Record<string, string>): Container {
  return {
    name,
    image: 'i',
    ...(requests || limits
      ? { resources: { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) } }
      : {}),
  };
}

function pod(
  containers: Container[],
  initContainers: Container[] = [],
  extra: Partial<Pod['spec']> = {},
): Pod {
  return {
    metadata: { name: 'p', namespace: 'default', uid: 'u1' },
    spec: { containers, initContainers, ...extra },
  };
}

describe('cpu conversions', () => {
  it('converts millicores to shares: 1024 per CPU, at least 2, at most 262144', () => {
    assert.equal(milliCPUToShares(0), 2);
    assert.equal(milliCPUToShares(1), 2);
    assert.equal(milliCPUToShares(250), 256);
    assert.equal(milliCPUToShares(1000), 1024);
    assert.equal(milliCPUToShares(300_000), 262_144);
  });

  it('converts millicores to a CFS quota for the period, at least 1ms, 0 for no limit', () => {
    assert.equal(milliCPUToQuota(0, 100_000), 0);
    assert.equal(milliCPUToQuota(500, 100_000), 50_000);
    assert.equal(milliCPUToQuota(1, 100_000), 1000);
    assert.equal(milliCPUToQuota(2500, 50_000), 125_000);
  });

  it('maps shares onto cgroup v2 weights as runc does', () => {
    assert.equal(cpuSharesToWeight(2), 1);
    assert.equal(cpuSharesToWeight(1024), 39);
    assert.equal(cpuSharesToWeight(256), 10);
    assert.equal(cpuSharesToWeight(262_144), 10_000);
    assert.equal(cpuSharesToWeight(0), 0);
  });

  it('formats cpu.max and limits as the v2 files take them', () => {
    assert.equal(cpuMaxValue(50_000, 100_000), '50000 100000');
    assert.equal(cpuMaxValue(-1, 100_000), 'max 100000');
    assert.equal(cpuMaxValue(undefined, undefined), undefined);
    assert.equal(limitValue(4096), '4096');
    assert.equal(limitValue(-1), 'max');
  });
});

describe('podTotals', () => {
  it('takes the larger of the app containers sum and the largest init container', () => {
    const p = pod(
      [c('a', { cpu: '100m', memory: '10Mi' }), c('b', { cpu: '200m' })],
      [c('i1', { cpu: '500m', memory: '5Mi' }), c('i2', { memory: '20Mi' })],
    );
    assert.deepEqual(podTotals(p, 'requests'), { cpu: 500, memory: 20 * 2 ** 20, hugePages: {} });
  });

  it('adds sidecars to the app sum and to every init container that starts after them', () => {
    const sidecar: Container = { ...c('side', { cpu: '100m' }), restartPolicy: 'Always' };
    const p = pod([c('a', { cpu: '300m' })], [sidecar, c('i', { cpu: '350m' })]);
    // app 300 + sidecar 100 = 400; init i runs beside the sidecar: 350 + 100 = 450.
    assert.equal(podTotals(p, 'requests').cpu, 450);
  });

  it('adds overhead to requests, and to limits only for resources some container limits', () => {
    const p = pod([c('a', { cpu: '100m' }, { cpu: '200m' })], [], {
      overhead: { cpu: '10m', memory: '1Mi' },
    });
    assert.deepEqual(podTotals(p, 'requests'), { cpu: 110, memory: 2 ** 20, hugePages: {} });
    assert.deepEqual(podTotals(p, 'limits'), { cpu: 210, memory: undefined, hugePages: {} });
  });
});

describe('resourceConfigForPod', () => {
  it('gives a Guaranteed pod shares, quota and memory limit from the pod totals', () => {
    const p = pod([
      c('a', { cpu: '500m', memory: '64Mi' }, { cpu: '500m', memory: '64Mi' }),
      c('b', { cpu: '250m', memory: '32Mi' }, { cpu: '250m', memory: '32Mi' }),
    ]);
    assert.deepEqual(resourceConfigForPod(p, OPTS), {
      cpuShares: 768,
      cpuQuota: 75_000,
      cpuPeriod: 100_000,
      memory: 96 * 2 ** 20,
      hugetlb: NO_HUGE_PAGES,
    });
  });

  it('sizes a pod with spec.overhead (RuntimeClass podFixed) by its containers plus the overhead', () => {
    const limited = { cpu: '500m', memory: '64Mi' };
    const p = pod([c('a', limited, limited)], [], { overhead: { cpu: '250m', memory: '16Mi' } });
    assert.deepEqual(resourceConfigForPod(p, OPTS), {
      cpuShares: 768,
      cpuQuota: 75_000,
      cpuPeriod: 100_000,
      memory: 80 * 2 ** 20,
      hugetlb: NO_HUGE_PAGES,
    });
    // Without container limits the overhead adds to the shares only: no limit appears from it.
    const burstable = pod([c('a', { cpu: '100m' })], [], { overhead: { cpu: '250m', memory: '16Mi' } });
    assert.deepEqual(resourceConfigForPod(burstable, OPTS), { cpuShares: 358, hugetlb: NO_HUGE_PAGES });
  });

  it('gives a Burstable pod quota and memory limit only when every container declares them', () => {
    const all = pod([c('a', { cpu: '100m' }, { cpu: '200m', memory: '64Mi' }), c('b', {}, { cpu: '300m' })]);
    assert.deepEqual(resourceConfigForPod(all, OPTS), {
      cpuShares: 102,
      cpuQuota: 50_000,
      cpuPeriod: 100_000,
      hugetlb: NO_HUGE_PAGES,
    });
    const partial = pod([c('a', { cpu: '100m' }, { cpu: '200m' }), c('b')]);
    assert.deepEqual(resourceConfigForPod(partial, OPTS), { cpuShares: 102, hugetlb: NO_HUGE_PAGES });
  });

  it('counts init containers when deciding whether every container declares a limit', () => {
    const p = pod([c('a', { cpu: '100m', memory: '8Mi' }, { cpu: '100m', memory: '8Mi' })], [c('init')]);
    assert.deepEqual(resourceConfigForPod(p, OPTS), { cpuShares: 102, hugetlb: NO_HUGE_PAGES });
  });

  it('gives a BestEffort pod 2 shares and no huge pages', () => {
    assert.deepEqual(resourceConfigForPod(pod([c('a')]), OPTS), { cpuShares: 2, hugetlb: NO_HUGE_PAGES });
  });

  it("limits hugetlb to the pod's huge-pages requests per page size, 0 for the sizes it does not request", () => {
    const huge = { cpu: '100m', memory: '64Mi', 'hugepages-2Mi': '8Mi' };
    const p = pod(
      [c('a', huge, huge), c('b', { 'hugepages-2Mi': '4Mi', 'hugepages-2048Ki': '2Mi' })],
      [c('init', { 'hugepages-1Gi': '1Gi' })],
    );
    // App containers add up (2Mi and 2048Ki are one page size); the init container's 1Gi is the
    // largest of its size; upstream HugePageLimits of PodRequests.
    assert.deepEqual(resourceConfigForPod(p, OPTS).hugetlb, {
      sizes: { '2MB': 14 * 2 ** 20, '1GB': 2 ** 30 },
      others: 0,
    });
  });

  it('leaves the quota unlimited when cpuCFSQuota is off, and uses the configured period', () => {
    const p = pod([c('a', { cpu: '1', memory: '1Gi' }, { cpu: '1', memory: '1Gi' })]);
    assert.equal(resourceConfigForPod(p, { enforceCPULimits: false, cpuPeriodUs: 100_000 }).cpuQuota, -1);
    const custom = resourceConfigForPod(p, { enforceCPULimits: true, cpuPeriodUs: 50_000 });
    assert.equal(custom.cpuQuota, 50_000);
    assert.equal(custom.cpuPeriod, 50_000);
  });
});

describe('QoS tiers and node allocatable', () => {
  it('sizes the burstable tier by the cpu requests of Burstable pods only', () => {
    const burstable = pod([c('a', { cpu: '250m' })]);
    const burstable2 = pod([c('a', { cpu: '500m', memory: '1Mi' })]);
    const guaranteed = pod([c('a', { cpu: '1', memory: '1Mi' }, { cpu: '1', memory: '1Mi' })]);
    const bestEffort = pod([c('a')]);
    assert.deepEqual(qosTierConfigs([burstable, burstable2, guaranteed, bestEffort]), {
      burstable: { cpuShares: 768, hugetlb: UNBOUNDED_HUGETLB },
      besteffort: { cpuShares: 2, hugetlb: UNBOUNDED_HUGETLB },
    });
    assert.deepEqual(qosTierConfigs([]).burstable, { cpuShares: 2, hugetlb: UNBOUNDED_HUGETLB });
  });

  it('leaves both tiers hugetlb unbounded (1 << 62 bytes) for every page size', () => {
    assert.deepEqual(UNBOUNDED_HUGETLB, { sizes: {}, others: 2 ** 62 });
  });

  it('turns node resources into kubepods shares, memory and pids', () => {
    assert.deepEqual(nodeAllocatableConfig({ milliCPU: 2000, memory: 1 << 30, pids: 4096 }), {
      cpuShares: 2048,
      memory: 1 << 30,
      pidsLimit: 4096,
    });
    assert.deepEqual(nodeAllocatableConfig({ milliCPU: 2000, memory: 1 << 30 }), {
      cpuShares: 2048,
      memory: 1 << 30,
    });
  });

  it("limits kubepods' hugetlb to the node's huge pages per page size", () => {
    const r = {
      milliCPU: 2000,
      memory: 1 << 30,
      hugePages: { 'hugepages-2Mi': 64 << 20, 'hugepages-1Gi': 0 },
    };
    assert.deepEqual(nodeAllocatableConfig(r).hugetlb, { sizes: { '2MB': 64 << 20, '1GB': 0 }, others: 0 });
  });
});
