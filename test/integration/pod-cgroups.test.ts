import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  IMAGE,
  containersOf,
  podManifest,
  removeManifest,
  setupEnv,
  writeManifest,
  type Env,
} from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, startKubelet, useKubelet, waitForPhase, type RunningKubelet } from './support.ts';

const CGROUP = '/sys/fs/cgroup';

async function read(file: string): Promise<string | undefined> {
  return readFile(file, 'utf8').then(
    (t) => t.trim(),
    () => undefined,
  );
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/** Every mounted hierarchy under /sys/fs/cgroup (v1 mounts, and the hybrid `unified` one). */
async function hierarchies(): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(CGROUP, { withFileTypes: true })) {
    if (e.isDirectory() && (await exists(join(CGROUP, e.name, 'cgroup.procs')))) out.push(e.name);
  }
  return out;
}

/** The hierarchies in which a cgroup (e.g. `kubepods/pod<uid>`) has a directory. */
async function presentIn(cgroup: string): Promise<string[]> {
  const out: string[] = [];
  for (const h of await hierarchies()) if (await exists(join(CGROUP, h, cgroup))) out.push(h);
  return out;
}

const sleeper = (name: string, resources?: Record<string, Record<string, string>>) => ({
  name,
  image: IMAGE,
  command: ['sleep', '3600'],
  ...(resources ? { resources } : {}),
});

describe('pod cgroups per QoS class on real containerd (cgroup v1)', () => {
  const t = useKubelet();

  async function runningPod(name: string): Promise<{ uid: string; containerIds: string[] }> {
    const view = await waitForPhase(t.k.kubelet, name, 'Running', 60_000);
    const uid = view.pod.metadata.uid ?? '';
    const containers = await eventually(`containers of ${name}`, async () => {
      const list = (await containersOf(t.env, uid)).filter((c) => c.state === 'CONTAINER_RUNNING');
      return list.length === view.pod.spec.containers.length ? list : undefined;
    });
    return { uid, containerIds: containers.map((c) => c.id) };
  }

  it('runs a Guaranteed pod in kubepods/pod<uid> with the summed memory limit and cpu quota', async () => {
    const a = { cpu: '200m', memory: '32Mi' };
    const b = { cpu: '300m', memory: '64Mi' };
    await writeManifest(
      t.env,
      'guaranteed.yaml',
      podManifest('guaranteed', {
        containers: [sleeper('a', { requests: a, limits: a }), sleeper('b', { requests: b, limits: b })],
      }),
    );
    const { uid, containerIds } = await runningPod('guaranteed');
    assert.equal(findPod(t.k.kubelet, 'guaranteed')?.status?.qosClass, 'Guaranteed');
    const pod = `kubepods/pod${uid}`;
    for (const id of containerIds) {
      assert.ok(await exists(join(CGROUP, 'memory', pod, id)), `container ${id} runs under memory/${pod}`);
      assert.notEqual(await read(join(CGROUP, 'memory', pod, id, 'cgroup.procs')), '', 'with its processes');
    }
    assert.equal(await read(join(CGROUP, 'memory', pod, 'memory.limit_in_bytes')), String(96 * 2 ** 20));
    assert.equal(await read(join(CGROUP, 'cpu', pod, 'cpu.cfs_quota_us')), '50000');
    assert.equal(await read(join(CGROUP, 'cpu', pod, 'cpu.cfs_period_us')), '100000');
    assert.equal(await read(join(CGROUP, 'cpu', pod, 'cpu.shares')), '512');
    assert.notEqual(
      await read(join(CGROUP, 'cpuset', pod, 'cpuset.cpus')),
      '',
      'cpuset copied from the parent',
    );
  });

  it('runs a Burstable pod in kubepods/burstable/pod<uid> and sizes the burstable tier', async () => {
    await writeManifest(
      t.env,
      'burstable.yaml',
      podManifest('burstable', {
        containers: [sleeper('main', { requests: { cpu: '250m', memory: '16Mi' } })],
      }),
    );
    const { uid, containerIds } = await runningPod('burstable');
    const pod = `kubepods/burstable/pod${uid}`;
    for (const id of containerIds)
      assert.ok(await exists(join(CGROUP, 'cpu', pod, id)), `${id} under cpu/${pod}`);
    assert.equal(await read(join(CGROUP, 'cpu', pod, 'cpu.shares')), '256');
    assert.equal(
      await read(join(CGROUP, 'cpu', pod, 'cpu.cfs_quota_us')),
      '-1',
      'no quota without cpu limits',
    );
    await eventually('burstable tier shares', async () =>
      (await read(join(CGROUP, 'cpu', 'kubepods', 'burstable', 'cpu.shares'))) === '256' ? true : undefined,
    );
  });

  it('runs a BestEffort pod in kubepods/besteffort/pod<uid> with 2 cpu shares', async () => {
    await writeManifest(
      t.env,
      'besteffort.yaml',
      podManifest('besteffort', { containers: [sleeper('main')] }),
    );
    const { uid, containerIds } = await runningPod('besteffort');
    const pod = `kubepods/besteffort/pod${uid}`;
    for (const id of containerIds)
      assert.ok(await exists(join(CGROUP, 'memory', pod, id)), `${id} under memory/${pod}`);
    assert.equal(await read(join(CGROUP, 'cpu', pod, 'cpu.shares')), '2');
    assert.equal(await read(join(CGROUP, 'cpu', 'kubepods', 'besteffort', 'cpu.shares')), '2');
  });

  it('removes the pod cgroup from every hierarchy once the pod is deleted', async () => {
    const uids = ['guaranteed', 'burstable', 'besteffort'].map(
      (name) => [name, findPod(t.k.kubelet, name)?.pod.metadata.uid ?? ''] as const,
    );
    const before = await presentIn(`kubepods/besteffort/pod${uids[2]?.[1] ?? ''}`);
    // The pod cgroup is in every hierarchy runc uses: name=systemd and the hybrid cgroup2 mount too.
    assert.deepEqual(before, await hierarchies());
    for (const [name] of uids) await removeManifest(t.env, `${name}.yaml`);
    const cgroups = [
      `kubepods/pod${uids[0]?.[1] ?? ''}`,
      `kubepods/burstable/pod${uids[1]?.[1] ?? ''}`,
      `kubepods/besteffort/pod${uids[2]?.[1] ?? ''}`,
    ];
    await eventually(
      'pod cgroups removed everywhere',
      async () => {
        for (const c of cgroups) if ((await presentIn(c)).length > 0) return undefined;
        return true;
      },
      60_000,
      () => cgroups,
    );
    await eventually('burstable tier back to 2 shares', async () =>
      (await read(join(CGROUP, 'cpu', 'kubepods', 'burstable', 'cpu.shares'))) === '2' ? true : undefined,
    );
    assert.ok(await exists(join(CGROUP, 'memory', 'kubepods', 'besteffort')), 'the QoS tiers stay');
  });
});

describe('a kubelet that turns cgroups per QoS on', () => {
  let env: Env;
  let k: RunningKubelet | undefined;
  before(async () => {
    env = await setupEnv();
  });
  after(async () => {
    await k?.stop();
    await env?.close();
  });

  it('restarts a pod running outside its pod cgroup inside it (upstream syncPod)', async () => {
    k = await startKubelet(env, { cgroupsPerQOS: false });
    await writeManifest(env, 'outside.yaml', podManifest('outside', { containers: [sleeper('main')] }));
    const first = await waitForPhase(k.kubelet, 'outside', 'Running');
    const uid = first.pod.metadata.uid ?? '';
    const [before] = await containersOf(env, uid);
    assert.ok(before, 'the container runs');
    assert.equal(await exists(join(CGROUP, 'memory', 'kubepods', 'besteffort', `pod${uid}`)), false);

    await k.stop();
    k = await startKubelet(env);
    const podCgroup = join(CGROUP, 'memory', 'kubepods', 'besteffort', `pod${uid}`);
    const moved = await eventually(
      'a new container inside the pod cgroup',
      async () => {
        const running = (await containersOf(env, uid)).filter((c) => c.state === 'CONTAINER_RUNNING');
        const inside = running.find((c) => c.id !== before.id);
        return inside && (await exists(join(podCgroup, inside.id))) ? inside : undefined;
      },
      60_000,
    );
    assert.notEqual(moved.id, before.id);
    await waitForPhase(k.kubelet, 'outside', 'Running');
  });
});
