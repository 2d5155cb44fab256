import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { hasCode } from '../util/errors.ts';
import { buildPod } from '../../test/kit/pod.ts';
import { createContainerManager, type ContainerManagerOptions } from './container-manager.ts';
import { parsePodCgroupDirName, podCgroupName, qosCgroupNames } from './names.ts';
import { resourceProperties } from './systemd-units.ts';
import {
  fakeCgroupFsPerTest,
  createFakeSystemd,
  fakeContainerManagerOptions,
  type FakeLayout,
} from './testing.ts';

const signal = new AbortController().signal;
const UID = '0b5e0c3a-1f2e-4c4d-9d55-7a0f2b1c9e11';
const SLICE_UID = UID.replaceAll('-', '_');

function pod(
  uid: string,
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> },
) {
  return buildPod(`p-${uid}`, { uid, containers: [{ name: 'a', ...(resources ? { resources } : {}) }] });
}
const GUARANTEED = { cpu: '500m', memory: '64Mi' };
const guaranteed = (uid: string): KubeletPod => pod(uid, { requests: GUARANTEED, limits: GUARANTEED });
const burstable = (uid: string): KubeletPod => pod(uid, { requests: { cpu: '250m', memory: '32Mi' } });

const fakeTree = fakeCgroupFsPerTest();

async function setUp(layout: FakeLayout, overrides: Partial<ContainerManagerOptions> = {}) {
  const fake = await fakeTree(layout);
  const systemd = createFakeSystemd(fake, layout);
  const cm = createContainerManager(
    fakeContainerManagerOptions(fake, { cgroupDriver: 'systemd', podPidsLimit: 1024, systemd, ...overrides }),
  );
  return { fs: fake, cm, systemd };
}

describe('systemd cgroup names', () => {
  it('names every level a slice, escaping dashes, as upstream ToSystemd', () => {
    const names = qosCgroupNames('/', 'systemd');
    assert.equal(names.root, '/');
    assert.equal(names.guaranteed, '/kubepods.slice');
    assert.equal(names.burstable, '/kubepods.slice/kubepods-burstable.slice');
    assert.equal(names.besteffort, '/kubepods.slice/kubepods-besteffort.slice');
    assert.equal(
      podCgroupName(names, burstable(UID)),
      `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${SLICE_UID}.slice`,
    );
    assert.equal(podCgroupName(names, guaranteed(UID)), `/kubepods.slice/kubepods-pod${SLICE_UID}.slice`);
    assert.equal(
      qosCgroupNames('/node-pods', 'systemd').guaranteed,
      '/node_pods.slice/node_pods-kubepods.slice',
    );
  });

  it('reads the pod UID back from a pod slice and ignores other directories', () => {
    assert.equal(parsePodCgroupDirName(`kubepods-burstable-pod${SLICE_UID}.slice`, 'systemd'), UID);
    assert.equal(parsePodCgroupDirName(`kubepods-pod${SLICE_UID}.slice`, 'systemd'), UID);
    assert.equal(parsePodCgroupDirName('kubepods-burstable.slice', 'systemd'), undefined);
    assert.equal(parsePodCgroupDirName('cri-containerd-abc.scope', 'systemd'), undefined);
    assert.equal(parsePodCgroupDirName(`pod${UID}`, 'systemd'), undefined);
  });
});

describe('systemd unit properties', () => {
  it('maps a resource config to runc’s v2 properties, quota rounded up to 10 ms per second', () => {
    const props = Object.fromEntries(
      resourceProperties(
        { cpuShares: 512, cpuQuota: 25_000, cpuPeriod: 100_000, memory: 2 ** 26, pidsLimit: -1 },
        2,
      ).map((p) => [p.name, p.value]),
    );
    assert.deepEqual(props, {
      MemoryMax: String(2 ** 26),
      CPUWeight: '20',
      CPUQuotaPerSecUSec: '250000',
      CPUQuotaPeriodUSec: '100000',
      TasksMax: '18446744073709551615',
    });
    const odd = resourceProperties({ cpuQuota: 1_234, cpuPeriod: 100_000 }, 2);
    assert.equal(odd.find((p) => p.name === 'CPUQuotaPerSecUSec')?.value, '20000');
    const v1 = resourceProperties({ cpuShares: 2, memory: 1024 }, 1).map((p) => p.name);
    assert.deepEqual(v1, ['MemoryLimit', 'CPUShares']);
    const unlimited = resourceProperties({ cpuQuota: -1, cpuPeriod: 100_000 }, 2);
    assert.equal(unlimited.find((p) => p.name === 'CPUQuotaPerSecUSec')?.value, '18446744073709551615');
  });
});

describe('container manager with the systemd driver', () => {
  it('starts kubepods.slice and the QoS slices through systemd, sized for the node (v2)', async () => {
    const { fs, cm, systemd } = await setUp('v2');
    await cm.start(signal);
    const started = systemd.calls.filter((c) => c.method === 'StartTransientUnit').map((c) => c.unit);
    assert.deepEqual(started, ['kubepods.slice', 'kubepods-burstable.slice', 'kubepods-besteffort.slice']);
    const kubepods = systemd.calls.find(
      (c) => c.method === 'StartTransientUnit' && c.unit === 'kubepods.slice',
    );
    assert.ok(kubepods?.method === 'StartTransientUnit');
    assert.deepEqual(kubepods.properties['Wants'], ['-.slice']);
    assert.equal(kubepods.properties['MemoryMax'], String(8 * 2 ** 30));
    assert.equal(kubepods.properties['DefaultDependencies'], false);
    // The exact values are in the files too, as runc writes them after starting the unit.
    assert.equal(await fs.read('kubepods.slice/memory.max'), String(8 * 2 ** 30));
    assert.equal(await fs.read('kubepods.slice/cpu.weight'), '79');
    assert.equal(await fs.read('kubepods.slice/kubepods-besteffort.slice/cpu.weight'), '1');
    assert.deepEqual(cm.qosCgroups?.burstable, '/kubepods.slice/kubepods-burstable.slice');
  });

  it('makes a pod slice with the pod’s limits as properties and files, and hands its path to the runtime', async () => {
    const { fs, cm, systemd } = await setUp('v2');
    await cm.start(signal);
    const p = burstable(UID);
    const slice = `kubepods-burstable-pod${SLICE_UID}.slice`;
    assert.equal(cm.podCgroupParent(p), `/kubepods.slice/kubepods-burstable.slice/${slice}`);
    assert.equal(await cm.podCgroupExists(p), false);
    await cm.ensurePodCgroup(p, signal);
    assert.equal(await cm.podCgroupExists(p), true);
    const call = systemd.calls.find((c) => c.method === 'StartTransientUnit' && c.unit === slice);
    assert.ok(call?.method === 'StartTransientUnit');
    assert.deepEqual(call.properties['Wants'], ['kubepods-burstable.slice']);
    assert.equal(call.properties['TasksMax'], '1024');
    assert.equal(call.properties['CPUWeight'], '10');
    const dir = `kubepods.slice/kubepods-burstable.slice/${slice}`;
    assert.equal(await fs.read(`${dir}/cpu.weight`), '10');
    assert.equal(await fs.read(`${dir}/pids.max`), '1024');
  });

  it('on cgroup v1 also makes the directories systemd does not manage (cpuset)', async () => {
    const { fs, cm } = await setUp('v1');
    await cm.start(signal);
    await cm.ensurePodCgroup(guaranteed(UID), signal);
    const name = `/kubepods.slice/kubepods-pod${SLICE_UID}.slice`;
    assert.ok((await fs.dirsOf(name)).includes(`cpuset${name}`));
    assert.equal(await fs.read(`memory${name}/memory.limit_in_bytes`), String(64 * 2 ** 20));
    assert.equal(await fs.read(`cpuset${name}/cpuset.cpus`), '0-1');
  });

  it('destroys a pod slice: kills what is left, stops the unit, removes leftovers', async () => {
    const { fs, cm, systemd } = await setUp('v2');
    await cm.start(signal);
    const p = burstable(UID);
    await cm.ensurePodCgroup(p, signal);
    const dir = `kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${SLICE_UID}.slice`;
    await fs.addTask(dir, 4242);
    const removed = await cm.cleanupOrphanedPodCgroups(() => false, signal);
    assert.deepEqual(removed, [UID]);
    assert.deepEqual(fs.kills, [{ pid: 4242, signal: 'SIGKILL' }]);
    assert.ok(
      systemd.calls.some(
        (c) => c.method === 'StopUnit' && c.unit === `kubepods-burstable-pod${SLICE_UID}.slice`,
      ),
    );
    assert.equal(await fs.exists(dir), false);
  });

  it('refuses to start when systemd is not reachable, saying so', async () => {
    const { cm, systemd } = await setUp('v2');
    systemd.unreachable = true;
    await assert.rejects(
      cm.start(signal),
      (err: unknown) =>
        hasCode(err, 'FailedPrecondition') &&
        /cgroupDriver is "systemd" but systemd is not reachable/.test(String(err)),
    );
  });

  it('refuses to start when the runtime uses the other driver, naming both', async () => {
    const { cm } = await setUp('v2', { runtimeCgroupDriver: () => Promise.resolve('cgroupfs') });
    await assert.rejects(cm.start(signal), (err: unknown) => {
      assert.ok(hasCode(err, 'FailedPrecondition'));
      assert.match(
        String(err),
        /kubelet cgroup driver "systemd" is different from the container runtime's cgroup driver "cgroupfs"/,
      );
      return true;
    });
  });

  it('starts when the runtime cannot say which driver it uses', async () => {
    const { cm } = await setUp('v2', {
      runtimeCgroupDriver: () => Promise.reject(new Error('connection refused')),
    });
    await cm.start(signal);
    assert.equal(cm.enabled, true);
  });
});
