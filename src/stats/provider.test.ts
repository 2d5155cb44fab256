import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import type { PodSandboxStats } from '../runtime/cri/types.ts';
import { KubeletError } from '../util/errors.ts';
import { createStatsProvider, type StatsProviderOptions } from './provider.ts';
import { pvcVolumeStats } from './pod-storage.ts';
import { cgroupV1Files, criPod, fakeCri, procFiles, writeTree, type FakeCri } from './testing.ts';
import { buildPod } from '../../test/kit/pod.ts';

const T0 = 1_700_000_100_000;
const GiB = 2 ** 30;

let dir = '';
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'stats-provider-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Bed {
  cri: FakeCri;
  clock: { t: number };
  root: string;
  provider: ReturnType<typeof createStatsProvider>;
}

let seq = 0;
async function bed(
  opts: {
    cgroups?: boolean;
    files?: Record<string, string>;
    pods?: KubeletPod[];
    options?: Partial<StatsProviderOptions>;
  } = {},
): Promise<Bed> {
  const root = path.join(dir, `bed-${++seq}`);
  await writeTree(
    path.join(root, 'proc'),
    procFiles({ cpuTicks: 1000, memTotalKb: 16 * 1024 * 1024, memFreeKb: 8 * 1024 * 1024 }),
  );
  if (opts.cgroups ?? true) {
    await writeTree(
      path.join(root, 'sys'),
      cgroupV1Files({
        '/': { cpuNs: 5e12, usage: 4 * GiB, inactiveFile: GiB },
        '/system.slice/kubelet.service': { cpuNs: 1e9, usage: 50e6 },
        '/kubepods': { cpuNs: 2e9, usage: 300e6, limit: 8 * GiB, tasks: 12 },
        '/kubepods/besteffort/podu1': { cpuNs: 7e8, usage: 100e6, inactiveFile: 10e6, tasks: 3 },
        '/kubepods/besteffort/podu1/sb-u1': { cpuNs: 1e6, usage: 1e6, procs: [4242] },
      }),
    );
  }
  await writeTree(root, {
    'proc/4242/net/dev':
      'h1\nh2\n  eth0: 111 1 0 0 0 0 0 0 222 2 0 0 0 0 0 0\n    lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n',
    'root/.keep': '',
    'logs/.keep': '',
    ...opts.files,
  });
  const cri = fakeCri();
  const clock = { t: T0 };
  const provider = createStatsProvider({
    runtime: cri.runtime,
    imageService: cri.images,
    rootDir: path.join(root, 'root'),
    podLogsDir: path.join(root, 'logs'),
    nodeName: 'node-1',
    pods: () => opts.pods ?? [],
    now: () => clock.t,
    monotonic: () => clock.t,
    procRoot: path.join(root, 'proc'),
    cgroupRoot: path.join(root, 'sys'),
    criTimeoutMs: 4_000,
    ...opts.options,
  });
  return { cri, clock, root, provider };
}

function addPod(cri: FakeCri, uid: string, timeMs: number, cpuNs: number, withSandboxStats = true): void {
  const p = criPod(uid, { timeMs, cpuNs, workingSet: 20e6 });
  cri.state.sandboxes.push(p.sandbox);
  cri.state.containers.push(p.container);
  cri.state.containerStats.push(p.stats);
  if (withSandboxStats && cri.state.sandboxStats) {
    const s: PodSandboxStats = {
      attributes: { id: p.sandbox.id, metadata: p.sandbox.metadata, labels: {}, annotations: {} },
      linux: {
        cpu: { timestamp: timeMs * 1e6, usageCoreNanoSeconds: { value: cpuNs + 1e6 } },
        memory: { timestamp: timeMs * 1e6, workingSetBytes: { value: 25e6 }, availableBytes: { value: 0 } },
        network: {
          timestamp: 0,
          defaultInterface: { name: 'eth0', rxBytes: { value: 10 }, txBytes: { value: 20 } },
          interfaces: [],
        },
        process: { timestamp: timeMs * 1e6, processCount: { value: 2 } },
        containers: [p.stats],
      },
    };
    cri.state.sandboxStats.push(s);
  }
}

const count = (cri: FakeCri, method: string) => cri.calls.filter((c) => c.method === method).length;

describe('stats provider summary', () => {
  it('reports the node from the root cgroup and procfs, with system containers from their cgroups', async () => {
    const b = await bed();
    const s = await b.provider.summary();
    assert.equal(s.node.nodeName, 'node-1');
    assert.equal(s.node.startTime, '2023-11-14T22:13:20Z', 'boot time from btime');
    assert.deepEqual(s.node.cpu, { time: '2023-11-14T22:15:00Z', usageCoreNanoSeconds: 5e12 });
    assert.equal(s.node.memory?.usageBytes, 4 * GiB);
    assert.equal(s.node.memory?.workingSetBytes, 3 * GiB);
    assert.equal(s.node.memory?.availableBytes, 16 * GiB - 3 * GiB, 'machine memory is the limit');
    assert.equal(s.node.network?.name, 'eth0');
    assert.equal(s.node.network?.rxBytes, 5000);
    assert.deepEqual(
      s.node.network?.interfaces?.map((i) => i.name),
      ['eth0'],
      'lo and veth devices are left out',
    );
    assert.ok((s.node.fs?.capacityBytes ?? 0) > 0);
    assert.deepEqual(s.node.rlimit, { time: '2023-11-14T22:15:00Z', maxpid: 4194304, curproc: 345 });
    assert.deepEqual(
      s.node.systemContainers?.map((c) => [c.name, c.cpu?.usageCoreNanoSeconds, c.memory?.usageBytes]),
      [
        ['kubelet', 1e9, 50e6],
        ['pods', 2e9, 300e6],
      ],
    );
    const pods = s.node.systemContainers?.find((c) => c.name === 'pods');
    assert.equal(pods?.memory?.availableBytes, 8 * GiB - 300e6, 'a limited cgroup reports what is left');
  });

  it('takes pod CPU, memory, network and tasks from ListPodSandboxStats, and rates after two samples', async () => {
    const b = await bed();
    addPod(b.cri, 'u1', T0 - 500, 1e9);
    let s = await b.provider.summary();
    assert.equal(s.pods.length, 1);
    const p = s.pods[0];
    assert.deepEqual(p?.podRef, { name: 'pod-u1', namespace: 'default', uid: 'u1' });
    assert.equal(p?.startTime, '1970-01-01T00:00:01Z', 'the sandbox creation time');
    assert.equal(p?.cpu?.usageCoreNanoSeconds, 1e9 + 1e6);
    assert.equal(p?.cpu?.usageNanoCores, undefined, 'no rate from one sample');
    assert.deepEqual(
      p?.memory,
      { time: '2023-11-14T22:14:59Z', workingSetBytes: 25e6 },
      'available 0 means unknown',
    );
    assert.deepEqual(p?.network?.interfaces, [{ name: 'eth0', rxBytes: 10, txBytes: 20 }]);
    assert.equal(p?.network?.rxBytes, 10);
    assert.deepEqual(p?.process_stats, { process_count: 2 });
    assert.deepEqual(
      p?.containers.map((c) => [c.name, c.cpu?.usageCoreNanoSeconds, c.memory?.workingSetBytes]),
      [['app', 1e9, 20e6]],
    );
    assert.equal(count(b.cri, 'listContainerStats'), 0);

    // One second later, half a core more for the container.
    b.clock.t += 1_500;
    b.cri.state.containerStats = [];
    b.cri.state.sandboxStats = [];
    addPod(b.cri, 'u1', T0 + 500, 1.5e9);
    b.cri.state.sandboxes.splice(1);
    b.cri.state.containers.splice(1);
    s = await b.provider.summary();
    assert.equal(s.pods[0]?.containers[0]?.cpu?.usageNanoCores, 0.5e9);
    assert.equal(s.pods[0]?.cpu?.usageNanoCores, 0.5e9);
    assert.ok((s.node.cpu?.usageNanoCores ?? -1) >= 0);
  });

  it('falls back to container stats and the pod cgroup when ListPodSandboxStats is Unimplemented, and stops asking', async () => {
    const b = await bed();
    b.cri.state.sandboxStats = undefined;
    addPod(b.cri, 'u1', T0, 1e9);
    const s = await b.provider.summary();
    const p = s.pods[0];
    assert.equal(p?.cpu?.usageCoreNanoSeconds, 7e8, 'from the pod cgroup');
    assert.equal(p?.memory?.workingSetBytes, 90e6);
    assert.equal(p?.network?.rxBytes, 111, "from the sandbox process's network namespace");
    assert.deepEqual(p?.process_stats, { process_count: 3 });
    assert.equal(p?.containers[0]?.memory?.workingSetBytes, 20e6);
    b.clock.t += 5_000;
    await b.provider.summary();
    assert.equal(count(b.cri, 'listPodSandboxStats'), 1);
    assert.equal(count(b.cri, 'listContainerStats'), 2);
  });

  it('adds up the containers for a pod without sandbox stats or cgroup, and reads CPU from /proc/stat', async () => {
    const b = await bed({ cgroups: false });
    b.cri.state.sandboxStats = undefined;
    const one = criPod('u9', { timeMs: T0, cpuNs: 3e8, workingSet: 1e6 });
    const two = criPod('u9', { container: 'side', timeMs: T0, cpuNs: 2e8, workingSet: 2e6 });
    b.cri.state.sandboxes.push(one.sandbox);
    b.cri.state.containers.push(one.container, two.container);
    b.cri.state.containerStats.push(one.stats, two.stats);
    const s = await b.provider.summary();
    assert.equal(s.pods[0]?.cpu?.usageCoreNanoSeconds, 5e8);
    assert.equal(s.pods[0]?.memory?.workingSetBytes, 3e6);
    assert.equal(s.node.cpu?.usageCoreNanoSeconds, 1000 * 1e7, 'ticks of 10 ms');
    assert.equal(s.node.memory?.workingSetBytes, (16 - 8) * GiB - 1000 * 1024);
    assert.equal(
      s.node.systemContainers,
      undefined,
      'none without cgroups (omitted, as upstream omits an empty list)',
    );
  });

  it('leaves out exited containers, and pods with nothing running', async () => {
    const b = await bed();
    addPod(b.cri, 'u1', T0, 1e9);
    addPod(b.cri, 'u2', T0, 1e9);
    const u2 = b.cri.state.containers[1];
    assert.ok(u2);
    u2.state = 'CONTAINER_EXITED';
    const s = await b.provider.summary();
    assert.deepEqual(
      s.pods.map((p) => p.podRef.uid),
      ['u1'],
    );
  });

  it('with onlyCpuAndMemory gives CPU and memory alone, without asking for the image filesystem', async () => {
    const b = await bed();
    addPod(b.cri, 'u1', T0, 1e9);
    const s = await b.provider.summary({ onlyCpuAndMemory: true });
    assert.deepEqual(Object.keys(s.node).sort(), [
      'cpu',
      'memory',
      'nodeName',
      'startTime',
      'systemContainers',
    ]);
    assert.deepEqual(Object.keys(s.pods[0] ?? {}).sort(), [
      'containers',
      'cpu',
      'memory',
      'podRef',
      'startTime',
    ]);
    assert.deepEqual(Object.keys(s.pods[0]?.containers[0] ?? {}).sort(), [
      'cpu',
      'memory',
      'name',
      'startTime',
    ]);
    assert.equal(count(b.cri, 'imageFsInfo'), 0);
  });

  it('shares one computation among concurrent callers and reuses it for a second', async () => {
    const b = await bed();
    addPod(b.cri, 'u1', T0, 1e9);
    const all = await Promise.all(Array.from({ length: 100 }, () => b.provider.summary()));
    assert.equal(count(b.cri, 'listPodSandbox'), 1);
    assert.equal(count(b.cri, 'listPodSandboxStats'), 1);
    assert.deepEqual(all[0], all[99]);
    b.clock.t += 999;
    await b.provider.summary();
    await b.provider.summary({ onlyCpuAndMemory: true });
    assert.equal(count(b.cri, 'listPodSandbox'), 1, 'the fresh full summary also answers CPU and memory');
    b.clock.t += 2;
    await b.provider.summary();
    assert.equal(count(b.cri, 'listPodSandbox'), 2);
    for (const c of b.cri.calls) assert.equal(c.opts?.timeoutMs, 4_000, `${c.method} has a deadline`);
  });

  it('recomputes after its 1 s cache life across a 1 h backward wall step (the life is monotonic)', async () => {
    const wall = { t: T0 };
    const b = await bed({ options: { now: () => wall.t } });
    addPod(b.cri, 'u1', T0, 1e9);
    await b.provider.summary();
    wall.t -= 3_600_000;
    b.clock.t += 1_001;
    wall.t += 1_001;
    await b.provider.summary();
    assert.equal(count(b.cri, 'listPodSandbox'), 2);
  });

  it('rejects when the runtime cannot list, and tries again at the next call', async () => {
    const b = await bed();
    b.cri.failures.set('listContainers', new KubeletError('Unavailable', 'CRI ListContainers', 'down'));
    await assert.rejects(b.provider.summary(), /down/);
    b.cri.failures.clear();
    const s = await b.provider.summary();
    assert.equal(s.node.nodeName, 'node-1');
  });

  it('forgets the CPU sample of a container that went away', async () => {
    const b = await bed();
    addPod(b.cri, 'u1', T0, 1e9);
    await b.provider.summary();
    const saved = { ...b.cri.state };
    b.cri.state.containers = [];
    b.clock.t += 2_000;
    await b.provider.summary();
    Object.assign(b.cri.state, saved);
    b.cri.state.containerStats = [];
    b.cri.state.sandboxStats = [];
    b.cri.state.sandboxes = [];
    b.cri.state.containers = [];
    addPod(b.cri, 'u1', T0 + 4_000, 3e9);
    b.clock.t += 2_000;
    const s = await b.provider.summary();
    assert.equal(
      s.pods[0]?.containers[0]?.cpu?.usageNanoCores,
      undefined,
      'no rate against a forgotten sample',
    );
  });

  it('measures volumes, container logs and the ephemeral-storage total', async () => {
    const uid = 'u1';
    const volumes = `root/pods/${uid}/volumes`;
    const b = await bed({
      files: {
        [`${volumes}/kubernetes.io~empty-dir/cache/data.bin`]: 'x'.repeat(64 * 1024),
        [`${volumes}/kubernetes.io~secret/token/token`]: 'secret',
        [`${volumes}/kubernetes.io~empty-dir/not-in-spec/f`]: 'x',
        [`logs/default_pod-u1_${uid}/app/0.log`]: 'y'.repeat(8 * 1024),
      },
      pods: [
        buildPod('pod-u1', {
          uid,
          containers: ['app'],
          volumes: [
            { name: 'cache', emptyDir: {} },
            { name: 'token', secret: { secretName: 's' } },
          ],
        }),
      ],
    });
    addPod(b.cri, uid, T0, 1e9);
    const s = await b.provider.summary();
    const p = s.pods[0];
    assert.deepEqual(
      p?.volume?.map((v) => v.name),
      ['cache', 'token'],
    );
    const cache = p?.volume?.find((v) => v.name === 'cache');
    assert.ok((cache?.usedBytes ?? 0) >= 64 * 1024, JSON.stringify(cache));
    assert.equal(cache?.inodesUsed, 2, 'the directory and its file');
    assert.ok((cache?.capacityBytes ?? 0) > 0);
    const logs = p?.containers[0]?.logs;
    assert.ok((logs?.usedBytes ?? 0) >= 8 * 1024);
    assert.equal(logs?.inodesUsed, 2);
    const eph = p?.['ephemeral-storage'];
    const rootfs = p?.containers[0]?.rootfs;
    assert.equal(rootfs?.usedBytes, 8192);
    assert.equal(
      eph?.usedBytes,
      (rootfs?.usedBytes ?? 0) + (logs?.usedBytes ?? 0) + (cache?.usedBytes ?? 0),
      'rootfs + logs + emptyDir; the secret volume does not count',
    );
    assert.equal(eph?.inodesUsed, 5 + 2 + 2);
  });
});

describe('persistentVolumeClaim volume stats', () => {
  it('reports a claim volume by its pod volume name with a pvcRef and statfs numbers; kubelet_volume_stats_* get them', async () => {
    const uid = 'u1';
    const mount = `root/pods/${uid}/volumes/kubernetes.io~local-volume/pv-1`;
    const b = await bed({
      files: { [`${mount}/f`]: 'x' },
      pods: [
        buildPod('pod-u1', {
          uid,
          containers: ['app'],
          volumes: [
            { name: 'data', persistentVolumeClaim: { claimName: 'claim-1' } },
            { name: 'other', persistentVolumeClaim: { claimName: 'on-hostpath' } },
          ],
        }),
      ],
      options: {
        measuredVolumes: (u) =>
          u === uid
            ? [
                {
                  volume: 'data',
                  claimName: 'claim-1',
                  mode: 'Filesystem',
                  metricsPath: path.join(dir, `bed-${seq}`, mount),
                },
                { volume: 'other', claimName: 'on-hostpath', mode: 'Filesystem' },
              ]
            : [],
      },
    });
    addPod(b.cri, uid, T0, 1e9);
    const s = await b.provider.summaryMs();
    const vols = s.pods[0]?.volume ?? [];
    assert.deepEqual(
      vols.map((v) => `${v.name} ${v.pvcRef?.namespace}/${v.pvcRef?.name}`),
      ['data default/claim-1'],
      'no stats for a PV type without metrics (hostPath), no entry named after the PV',
    );
    const data = vols[0];
    assert.ok((data?.capacityBytes ?? 0) > 0 && (data?.inodes ?? 0) > 0, JSON.stringify(data));
    assert.ok(
      (data?.usedBytes ?? 0) > 0 &&
        (data?.usedBytes ?? 0) + (data?.availableBytes ?? 0) <= (data?.capacityBytes ?? 0),
      'statfs numbers: used = blocks − free, available = blocks available to users',
    );
    assert.equal(data?.inodesUsed, (data?.inodes ?? 0) - (data?.inodesFree ?? 0));
    assert.equal(
      s.pods[0]?.['ephemeral-storage']?.usedBytes,
      (s.pods[0]?.containers[0]?.rootfs?.usedBytes ?? 0) + (s.pods[0]?.containers[0]?.logs?.usedBytes ?? 0),
      'a PV never counts as ephemeral storage',
    );
    assert.deepEqual(
      pvcVolumeStats(s).map((v) => [v.namespace, v.persistentvolumeclaim, v.capacityBytes]),
      [['default', 'claim-1', data?.capacityBytes]],
    );
  });
});

describe('CSI persistentVolumeClaim volume stats', () => {
  it("reports a CSI claim volume with the driver's numbers (NodeGetVolumeStats) and their time; kubelet_volume_stats_* get them", async () => {
    const uid = 'u1';
    const usage = {
      capacityBytes: 64 << 20,
      availableBytes: 60 << 20,
      usedBytes: 4 << 20,
      inodes: 1000,
      inodesFree: 990,
      inodesUsed: 10,
    };
    const b = await bed({
      files: { [`root/pods/${uid}/volumes/kubernetes.io~csi/pv-1/vol_data.json`]: '{}' },
      pods: [
        buildPod('pod-u1', {
          uid,
          containers: ['app'],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'csi-claim' } }],
        }),
      ],
      options: {
        measuredVolumes: (u) =>
          u === uid
            ? [
                {
                  volume: 'data',
                  claimName: 'csi-claim',
                  mode: 'Filesystem',
                  metrics: () => ({ usage, time: T0 - 5_000 }),
                },
              ]
            : [],
      },
    });
    addPod(b.cri, uid, T0, 1e9);
    const s = await b.provider.summaryMs();
    assert.deepEqual(s.pods[0]?.volume, [
      { name: 'data', pvcRef: { name: 'csi-claim', namespace: 'default' }, time: T0 - 5_000, ...usage },
    ]);
    assert.deepEqual(
      pvcVolumeStats(s).map((v) => [v.persistentvolumeclaim, v.capacityBytes, v.usedBytes, v.inodesFree]),
      [['csi-claim', 64 << 20, 4 << 20, 990]],
    );
  });
});

describe('inline CSI volume stats', () => {
  it("reports an inline CSI volume with the driver's numbers and no pvcRef, never walking it; none while the driver has none", async () => {
    const uid = 'u1';
    const usage = {
      capacityBytes: 8 << 20,
      availableBytes: 7 << 20,
      usedBytes: 1 << 20,
      inodes: 100,
      inodesFree: 90,
      inodesUsed: 10,
    };
    let measured: { usage: typeof usage; time: number } | undefined = undefined;
    const b = await bed({
      files: {
        [`root/pods/${uid}/volumes/kubernetes.io~csi/scratch/mount/big`]: 'x'.repeat(4096),
        [`root/pods/${uid}/volumes/kubernetes.io~csi/scratch/vol_data.json`]: '{}',
      },
      pods: [
        buildPod('pod-u1', {
          uid,
          containers: ['app'],
          volumes: [{ name: 'scratch', csi: { driver: 'hostpath.csi.test' } }],
        }),
      ],
      options: {
        measuredVolumes: (u) =>
          u === uid ? [{ volume: 'scratch', mode: 'Filesystem', metrics: () => measured }] : [],
      },
    });
    addPod(b.cri, uid, T0, 1e9);
    assert.deepEqual((await b.provider.summaryMs()).pods[0]?.volume ?? [], [], 'not measured yet: no entry');
    measured = { usage, time: T0 - 1_000 };
    b.clock.t += 60_000; // past the summary cache
    const s = await b.provider.summaryMs();
    assert.deepEqual(s.pods[0]?.volume, [{ name: 'scratch', time: T0 - 1_000, ...usage }]);
    assert.deepEqual(pvcVolumeStats(s), [], 'no kubelet_volume_stats_* without a claim');
  });
});

describe('stats provider metrics endpoints', () => {
  it('serves /metrics/resource with upstream names, labels and sample times', async () => {
    const b = await bed();
    addPod(b.cri, 'u1', T0 - 250, 1.5e9);
    const { contentType, body } = await b.provider.resourceMetricsText();
    assert.match(contentType, /^text\/plain; version=0\.0\.4/);
    const lines = body.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    assert.deepEqual(lines, [
      'container_cpu_usage_seconds_total{container="app",pod="pod-u1",namespace="default"} 1.5 1700000099750',
      'container_memory_working_set_bytes{container="app",pod="pod-u1",namespace="default"} 20000000 1700000099750',
      `node_cpu_usage_seconds_total 5000 ${T0}`,
      `node_memory_working_set_bytes ${3 * GiB} ${T0}`,
      'pod_cpu_usage_seconds_total{pod="pod-u1",namespace="default"} 1.501 1700000099750',
      'pod_memory_working_set_bytes{pod="pod-u1",namespace="default"} 25000000 1700000099750',
      'scrape_error 0',
    ]);
    assert.match(body, /# TYPE node_cpu_usage_seconds_total counter\n/);
    assert.match(body, /# HELP scrape_error \[ALPHA\] /);
  });

  it('answers scrape_error 1 instead of failing when the runtime is down', async () => {
    const b = await bed();
    b.cri.failures.set('listPodSandbox', new KubeletError('Unavailable', 'CRI ListPodSandbox', 'down'));
    const { body } = await b.provider.resourceMetricsText();
    assert.equal(
      body
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .join('\n'),
      'scrape_error 1',
    );
  });

  it('serves cadvisor-named container metrics with cadvisor labels', async () => {
    const b = await bed();
    addPod(b.cri, 'u1', T0, 2e9);
    const { body } = await b.provider.cadvisorMetricsText();
    const labels =
      'container="app",id="/kubepods/besteffort/podu1/ctr-u1-app",image="docker.io/library/busybox:1.29",' +
      'name="ctr-u1-app",namespace="default",pod="pod-u1"';
    assert.ok(body.includes(`container_cpu_usage_seconds_total{${labels},cpu="total"} 2 ${T0}\n`), body);
    assert.ok(body.includes(`container_memory_working_set_bytes{${labels}} 20000000 ${T0}\n`));
    assert.ok(body.includes(`container_fs_usage_bytes{${labels},device="/dev/sda1"} 8192 ${T0}\n`));
    assert.ok(body.includes(`container_start_time_seconds{${labels}} 2\n`));
    const pod =
      'container="",id="/kubepods/besteffort/podu1",image="",name="",namespace="default",pod="pod-u1"';
    assert.ok(body.includes(`container_network_receive_bytes_total{${pod},interface="eth0"} 10 ${T0}\n`));
    assert.ok(body.includes(`container_processes{${pod}} 2 ${T0}\n`));
    assert.ok(
      body.includes(
        'container_memory_usage_bytes{container="",id="/",image="",name="",namespace="",pod=""} ',
      ),
    );
  });
});
