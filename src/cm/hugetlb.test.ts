// hugetlb limits on the pod, QoS and kubepods cgroups (hugetlb.ts). Upstream counterpart:
// pkg/kubelet/cm/helpers_linux_test.go (TestHugePageLimits).
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { createContainerManager, type ContainerManager } from './container-manager.ts';
import { hugetlbLimits, machineHugePageSizes } from './hugetlb.ts';
import type { CgroupDriver } from './names.ts';
import {
  fakeCgroupFsPerTest,
  createFakeSystemd,
  fakeContainerManagerOptions,
  type FakeCgroupFs,
  type FakeLayout,
} from './testing.ts';

const signal = new AbortController().signal;
const UNBOUNDED = '4611686018427387904'; // 1 << 62
const MiB = 2 ** 20;

function pod(uid: string, requests?: Record<string, string>, limits = requests): KubeletPod {
  const resources = requests ? { resources: { requests, ...(limits ? { limits } : {}) } } : {};
  return {
    metadata: { name: `p-${uid}`, namespace: 'default', uid },
    spec: { containers: [{ name: 'a', image: 'i', ...resources }] },
  };
}
const hugeGuaranteed = (uid: string) => pod(uid, { cpu: '500m', memory: '64Mi', 'hugepages-2Mi': '8Mi' });
const hugeBurstable = (uid: string) =>
  pod(uid, { cpu: '100m', 'hugepages-2Mi': '4Mi' }, { 'hugepages-2Mi': '4Mi' });
const bestEffort = (uid: string) => pod(uid);

const fakeTree = fakeCgroupFsPerTest();

async function setUp(
  layout: FakeLayout,
  driver: CgroupDriver,
  hugetlb = true,
): Promise<{ fs: FakeCgroupFs; cm: ContainerManager }> {
  const fake = await fakeTree(layout, { hugetlb });
  const cm = createContainerManager(
    fakeContainerManagerOptions(fake, {
      cgroupDriver: driver,
      ...(driver === 'systemd' ? { systemd: createFakeSystemd(fake, layout) } : {}),
      nodeHugePages: () => Promise.resolve({ 'hugepages-1Gi': 0, 'hugepages-2Mi': 64 * MiB }),
    }),
  );
  return { fs: fake, cm };
}

/** Every `hugetlb.*` file under the fake root whose value differs from the kernel default. */
async function hugetlbFiles(fs: FakeCgroupFs): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(path.join(fs.root, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) await walk(rel);
      else if (e.name.startsWith('hugetlb.')) out.push(rel);
    }
  };
  await walk('');
  return out.sort();
}

const CASES: { layout: FakeLayout; driver: CgroupDriver; suffix: string; hierarchy: string }[] = [
  { layout: 'v1-comounted', driver: 'cgroupfs', suffix: 'limit_in_bytes', hierarchy: 'hugetlb' },
  { layout: 'v2', driver: 'cgroupfs', suffix: 'max', hierarchy: '' },
  { layout: 'v1-comounted', driver: 'systemd', suffix: 'limit_in_bytes', hierarchy: 'hugetlb' },
  { layout: 'v2', driver: 'systemd', suffix: 'max', hierarchy: '' },
];

for (const { layout, driver, suffix, hierarchy } of CASES) {
  describe(`hugetlb limits (${driver} driver, ${layout})`, () => {
    const file = (cgroup: string, size: string) => path.join(hierarchy, cgroup, `hugetlb.${size}.${suffix}`);

    it('gives kubepods the node huge pages and leaves both QoS tiers unbounded', async () => {
      const { fs, cm } = await setUp(layout, driver);
      await cm.start(signal);
      const names = cm.qosCgroups;
      assert.ok(names);
      assert.equal(await fs.read(file(names.guaranteed, '2MB')), String(64 * MiB));
      assert.equal(await fs.read(file(names.guaranteed, '1GB')), '0');
      for (const tier of [names.burstable, names.besteffort]) {
        assert.equal(await fs.read(file(tier, '2MB')), UNBOUNDED, tier);
        assert.equal(await fs.read(file(tier, '1GB')), UNBOUNDED, tier);
      }
      await cm.updateQOSCgroups([hugeBurstable('b0')], signal);
      assert.equal(await fs.read(file(names.burstable, '2MB')), UNBOUNDED);
    });

    it('limits a pod to the huge pages it requests, 0 for every other page size', async () => {
      const { fs, cm } = await setUp(layout, driver);
      await cm.start(signal);
      for (const [p, twoMB] of [
        [hugeGuaranteed('g1'), 8 * MiB],
        [hugeBurstable('b1'), 4 * MiB],
      ] as const) {
        await cm.ensurePodCgroup(p, signal);
        const cgroup = cm.podCgroupParent(p);
        assert.equal(await fs.read(file(cgroup, '2MB')), String(twoMB), cgroup);
        assert.equal(await fs.read(file(cgroup, '1GB')), '0', cgroup);
      }
    });

    it('gives a pod that requests no huge pages 0 for every page size, reservations untouched', async () => {
      const { fs, cm } = await setUp(layout, driver);
      await cm.start(signal);
      const p = bestEffort('e1');
      await cm.ensurePodCgroup(p, signal);
      const cgroup = cm.podCgroupParent(p);
      assert.equal(await fs.read(file(cgroup, '2MB')), '0');
      assert.equal(await fs.read(file(cgroup, '1GB')), '0');
      const rsvd = await fs.read(path.join(hierarchy, cgroup, `hugetlb.2MB.rsvd.${suffix}`));
      assert.equal(rsvd, layout === 'v2' ? 'max' : '9223372036854771712');
    });
  });
}

describe('hugetlb limits without the hugetlb controller', () => {
  const CASES_WITHOUT: { layout: FakeLayout; driver: CgroupDriver; why: string }[] = [
    { layout: 'v1', driver: 'cgroupfs', why: 'v1 with hugetlb only on the hybrid cgroup2 mount' },
    { layout: 'v1-comounted', driver: 'cgroupfs', why: 'v1 without a hugetlb mount' },
    { layout: 'v2', driver: 'cgroupfs', why: 'v2 without the controller' },
    { layout: 'v2', driver: 'systemd', why: 'v2 without the controller, systemd driver' },
  ];
  for (const { layout, driver, why } of CASES_WITHOUT) {
    it(`writes no hugetlb file and starts pods normally (${why})`, async () => {
      const { fs, cm } = await setUp(layout, driver, false);
      const before = await hugetlbFiles(fs);
      await cm.start(signal);
      await cm.updateQOSCgroups([], signal);
      for (const p of [hugeGuaranteed('g1'), bestEffort('e1')]) await cm.ensurePodCgroup(p, signal);
      assert.ok(await cm.podCgroupExists(hugeGuaranteed('g1')));
      assert.deepEqual(await hugetlbFiles(fs), before);
    });
  }
});

describe('hugetlb limits of a resource list', () => {
  it('adds the amounts of one page size named two ways (upstream HugePageLimits)', () => {
    assert.deepEqual(hugetlbLimits({ 'hugepages-2Mi': 2 * MiB, 'hugepages-2048Ki': 4 * MiB, cpu: 1 }), {
      sizes: { '2MB': 6 * MiB },
      others: 0,
    });
  });
});

describe('the machine huge page sizes', () => {
  it('lists /sys/kernel/mm/hugepages as page size names, none when it is missing', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tskubelet-hugepages-'));
    try {
      for (const d of ['hugepages-2048kB', 'hugepages-1048576kB', 'other']) await mkdir(path.join(dir, d));
      assert.deepEqual(machineHugePageSizes(undefined, dir), ['1GB', '2MB']);
      assert.deepEqual(machineHugePageSizes(undefined, path.join(dir, 'missing')), []);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
