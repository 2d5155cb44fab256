/**
 * Node-pressure eviction on real containerd, as a node of the bed's kube-apiserver 1.20, driven
 * and checked with kubectl. Each case starts tskubelet with a threshold just below what the machine
 * has now, so that one pod's allocation crosses it:
 *  - memory: a BestEffort pod fills a memory-backed emptyDir past `memory.available`; it is evicted
 *    (Failed/Evicted, `kubectl get pods` says Evicted, an Evicted event), a Guaranteed pod stays,
 *    the node reports MemoryPressure (and the controller-manager taints it) and refuses a
 *    BestEffort pod meanwhile, then the pressure ends; an emptyDir past its sizeLimit is evicted.
 *  - PIDs: a pod forks past `pid.available` (under --pod-max-pids) and is evicted under PIDPressure.
 *  - disk: the root dir is a small tmpfs; a pod fills an emptyDir past `nodefs.available`:
 *    DiskPressure on, every new pod refused, the pod evicted, its volume freed, DiskPressure off.
 *
 * Run under the shared bed lock:
 *   flock /tmp/tskubelet-bed.lock node_modules/.bin/node --test test/integration/cluster-eviction.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { kubectlFor, untilPodPhase } from '../kit/kubectl.ts';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { IMAGE, setupEnv, unmountUnder, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';

const NS = 'default';
const PORT = 11254;
const MiB = 2 ** 20;
const run = promisify(execFile);

interface NodeView {
  conditions: Record<string, string>;
  taints: string[];
}

/** Node memory.available as the kubelet computes it: MemTotal − the root cgroup's working set. */
async function nodeMemoryAvailable(): Promise<number> {
  const total = Number(/MemTotal:\s+(\d+)/.exec(await readFile('/proc/meminfo', 'utf8'))?.[1]) * 1024;
  const usage = Number(await readFile('/sys/fs/cgroup/memory/memory.usage_in_bytes', 'utf8'));
  const stat = await readFile('/sys/fs/cgroup/memory/memory.stat', 'utf8');
  const inactive = Number(/^total_inactive_file (\d+)$/m.exec(stat)?.[1] ?? 0);
  return total - Math.max(0, usage - inactive);
}

/** pid.available as the kubelet computes it: kernel.pid_max − tasks (loadavg's total). */
async function pidsAvailable(): Promise<number> {
  const max = Number(await readFile('/proc/sys/kernel/pid_max', 'utf8'));
  const tasks = Number((await readFile('/proc/loadavg', 'utf8')).split(/\s+/)[3]?.split('/')[1]);
  return max - tasks;
}

void describe('node-pressure eviction on a cluster node (kubectl)', () => {
  let env: Env;
  let cluster: ClusterBed;
  let kubelet: TskubeletProcess | undefined;
  const nodes: string[] = [];

  const k = kubectlFor(() => cluster.adminKubeconfig);
  const kubectl = (args: string[], input?: string) => k.run(args, input === undefined ? {} : { input });
  const ok = (args: string[], input?: string) => k.ok(args, input);

  async function nodeView(node: string): Promise<NodeView | undefined> {
    const r = await kubectl(['get', 'node', node, '-o', 'json']);
    if (r.code !== 0) return undefined;
    const n = JSON.parse(r.stdout) as {
      status?: { conditions?: { type: string; status: string }[] };
      spec?: { taints?: { key: string }[] };
    };
    return {
      conditions: Object.fromEntries((n.status?.conditions ?? []).map((c) => [c.type, c.status])),
      taints: (n.spec?.taints ?? []).map((t) => t.key),
    };
  }

  async function podField(name: string, path: string): Promise<string> {
    return (await kubectl(['get', 'pod', name, '-n', NS, '-o', `jsonpath=${path}`])).stdout;
  }

  function podYaml(node: string, name: string, script: string, extra = ''): string {
    return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${NS}}
spec:
  nodeName: ${node}
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", ${JSON.stringify(script)}]
${extra}`;
  }

  const guaranteed = `    resources:
      requests: {cpu: 50m, memory: 64Mi}
      limits: {cpu: 50m, memory: 64Mi}
`;

  async function startNode(node: string, flags: string[], rootDir = env.rootDir): Promise<void> {
    nodes.push(node);
    await kubectl(['delete', 'node', node, '--ignore-not-found']);
    await mkdir(rootDir, { recursive: true });
    kubelet = startNodeKubelet(
      { ...env, rootDir },
      {
        node,
        kubeconfig: await cluster.kubeletKubeconfig(node),
        extraArgs: [
          '--port',
          String(PORT),
          '--eviction-pressure-transition-period=30s',
          '--volume-stats-agg-period=2s',
          // Never let a reclaim remove the bed's images.
          '--minimum-image-ttl-duration=24h',
          '--enforce-node-allocatable=',
          ...flags,
        ],
      },
    );
    await eventually(
      `node ${node} Ready`,
      async () => ((await nodeView(node))?.conditions['Ready'] === 'True' ? true : undefined),
      60_000,
    );
  }

  async function stopNode(): Promise<void> {
    await kubectl(['delete', 'pods', '--all', '-n', NS, '--grace-period=0', '--force', '--wait=false']);
    await kubelet?.stop();
    kubelet = undefined;
  }

  const waitRunning = (name: string) => untilPodPhase(k, name, 'Running', { namespace: NS });

  /** Waits for the pod to be evicted, noting every node condition and taint seen meanwhile. */
  async function waitEvicted(
    node: string,
    name: string,
    seen: { conditions: Set<string>; taints: Set<string> },
  ) {
    return eventually(
      `pod ${name} evicted`,
      async () => {
        const v = await nodeView(node);
        for (const [t, s] of Object.entries(v?.conditions ?? {})) if (s === 'True') seen.conditions.add(t);
        for (const t of v?.taints ?? []) seen.taints.add(t);
        const reason = await podField(name, '{.status.reason}');
        return reason === 'Evicted' ? reason : undefined;
      },
      150_000,
    );
  }

  before(async () => {
    env = await setupEnv();
    cluster = await startCluster();
    await kubectl(['delete', 'pods', '--all', '-n', NS, '--grace-period=0', '--force']);
  });

  after(async () => {
    await stopNode();
    // Kept for a look after a failure (the test directory goes with env.close).
    await copyFile(join(env.dir, 'tskubelet.log'), '/tmp/tskubelet-cluster-eviction.log').catch(
      () => undefined,
    );
    for (const n of nodes) await kubectl(['delete', 'node', n, '--ignore-not-found']);
    // The disk case's tmpfs root: what is mounted under it first, then the tmpfs itself.
    const diskRoot = join(env.dir, 'disk-root');
    await unmountUnder(diskRoot);
    await run('umount', [diskRoot]).catch(() => undefined);
    await env.close();
    await cluster.stop();
  });

  void it('evicts a BestEffort pod past memory.available, keeps the Guaranteed one, refuses BestEffort pods under MemoryPressure', async () => {
    const node = 'tsk-evict-mem';
    // Other work on the machine moves node memory by over 1 GiB: a 2 GiB margin, a 4 GiB hog.
    const threshold = Math.floor((await nodeMemoryAvailable()) / MiB) - 2048;
    await startNode(node, [`--eviction-hard=memory.available<${threshold}Mi`]);
    try {
      await ok(['apply', '-f', '-'], podYaml(node, 'mem-steady', 'sleep 3600', guaranteed));
      await waitRunning('mem-steady');
      await ok(
        ['apply', '-f', '-'],
        podYaml(
          node,
          'mem-hog',
          'dd if=/dev/zero of=/mem/fill bs=1M count=4096 && sleep 3600',
          `    volumeMounts: [{name: mem, mountPath: /mem}]
  volumes: [{name: mem, emptyDir: {medium: Memory}}]
  `,
        ),
      );
      const seen = { conditions: new Set<string>(), taints: new Set<string>() };
      await waitEvicted(node, 'mem-hog', seen);
      assert.equal(await podField('mem-hog', '{.status.phase}'), 'Failed');
      assert.match(
        await podField('mem-hog', '{.status.message}'),
        /^The node was low on resource: memory\. Container main was using \d+(Ki|Mi|Gi)?, which exceeds its request of 0\. $/,
      );
      // kubectl's STATUS column shows the reason; READY drops once the kill is reported.
      let lastSeen = '';
      await eventually(
        'kubectl get pods shows mem-hog 0/1 Evicted',
        async () => {
          const table = await ok(['get', 'pod', 'mem-hog', '-n', NS, '--no-headers']);
          lastSeen = `${table}${await podField('mem-hog', '{.status.containerStatuses}')}`;
          return /^mem-hog\s+0\/1\s+Evicted\s/.test(table) ? true : undefined;
        },
        30_000,
        () => lastSeen,
      );
      const events = await ok([
        'get',
        'events',
        '-n',
        NS,
        '--field-selector',
        'involvedObject.name=mem-hog,reason=Evicted',
        '-o',
        'jsonpath={.items[*].message}',
      ]);
      assert.match(events, /The node was low on resource: memory\./);

      // Under MemoryPressure (held for the transition period) a BestEffort pod is refused at admission.
      await eventually('MemoryPressure on the node', async () => {
        const v = await nodeView(node);
        for (const t of v?.taints ?? []) seen.taints.add(t);
        return v?.conditions['MemoryPressure'] === 'True' ? true : undefined;
      });
      await ok(['apply', '-f', '-'], podYaml(node, 'mem-late', 'sleep 3600'));
      await eventually('mem-late refused', async () =>
        (await podField('mem-late', '{.status.reason}')) === 'Evicted' ? true : undefined,
      );
      assert.equal(
        await podField('mem-late', '{.status.message}'),
        'The node had condition: [MemoryPressure]. ',
      );
      assert.equal(await podField('mem-late', '{.status.phase}'), 'Failed');

      await eventually(
        'MemoryPressure off once the hog is gone',
        async () => {
          const v = await nodeView(node);
          for (const t of v?.taints ?? []) seen.taints.add(t);
          return v?.conditions['MemoryPressure'] === 'False' ? true : undefined;
        },
        90_000,
      );
      assert.ok(
        seen.taints.has('node.kubernetes.io/memory-pressure'),
        `taints seen: ${[...seen.taints].join(',')}`,
      );
      assert.equal(await podField('mem-steady', '{.status.phase}'), 'Running');
      assert.equal(await podField('mem-steady', '{.status.containerStatuses[0].restartCount}'), '0');

      // Local ephemeral storage: an emptyDir past its sizeLimit is evicted whatever the node has.
      await ok(
        ['apply', '-f', '-'],
        podYaml(
          node,
          'mem-scratch',
          'dd if=/dev/zero of=/scratch/f bs=1M count=20 && sleep 3600',
          `    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes: [{name: scratch, emptyDir: {sizeLimit: 10Mi}}]
  `,
        ),
      );
      await waitEvicted(node, 'mem-scratch', { conditions: new Set(), taints: new Set() });
      assert.equal(
        await podField('mem-scratch', '{.status.message}'),
        'Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". ',
      );
    } finally {
      await stopNode();
    }
  });

  void it('evicts the pod that forks past pid.available under PIDPressure', async () => {
    const node = 'tsk-evict-pid';
    const threshold = (await pidsAvailable()) - 400;
    await startNode(node, [`--eviction-hard=pid.available<${threshold}`, '--pod-max-pids=1000']);
    try {
      await ok(['apply', '-f', '-'], podYaml(node, 'pid-steady', 'sleep 3600', guaranteed));
      await waitRunning('pid-steady');
      await ok(
        ['apply', '-f', '-'],
        podYaml(node, 'pid-forker', 'i=0; while [ $i -lt 800 ]; do sleep 3600 & i=$((i+1)); done; wait'),
      );
      const seen = { conditions: new Set<string>(), taints: new Set<string>() };
      await waitEvicted(node, 'pid-forker', seen);
      assert.match(
        await podField('pid-forker', '{.status.message}'),
        /^The node was low on resource: pids\. /,
      );
      await eventually('PIDPressure on the node', async () =>
        seen.conditions.has('PIDPressure') || (await nodeView(node))?.conditions['PIDPressure'] === 'True'
          ? true
          : undefined,
      );
      assert.equal(await podField('pid-steady', '{.status.phase}'), 'Running');
    } finally {
      await stopNode();
    }
  });

  void it('turns DiskPressure on when a pod fills the root dir, refuses pods, evicts it, frees its volume, turns it off', async () => {
    const node = 'tsk-evict-disk';
    const diskRoot = join(env.dir, 'disk-root');
    await mkdir(diskRoot, { recursive: true });
    await run('mount', ['-t', 'tmpfs', '-o', 'size=300m', 'tmpfs', diskRoot]);
    await startNode(node, ['--eviction-hard=nodefs.available<120Mi'], diskRoot);
    try {
      await ok(['apply', '-f', '-'], podYaml(node, 'disk-steady', 'sleep 3600', guaranteed));
      await waitRunning('disk-steady');
      await ok(
        ['apply', '-f', '-'],
        podYaml(
          node,
          'disk-filler',
          'dd if=/dev/zero of=/data/fill bs=1M count=230 && sleep 3600',
          `    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
  `,
        ),
      );
      const seen = { conditions: new Set<string>(), taints: new Set<string>() };
      await eventually(
        'DiskPressure on the node',
        async () => {
          const v = await nodeView(node);
          for (const t of v?.taints ?? []) seen.taints.add(t);
          return v?.conditions['DiskPressure'] === 'True' ? true : undefined;
        },
        90_000,
      );
      await ok(['apply', '-f', '-'], podYaml(node, 'disk-late', 'sleep 3600', guaranteed));
      await eventually('disk-late refused', async () =>
        (await podField('disk-late', '{.status.reason}')) === 'Evicted' ? true : undefined,
      );
      assert.match(
        await podField('disk-late', '{.status.message}'),
        /^The node had condition: \[DiskPressure\]\. $/,
      );
      await waitEvicted(node, 'disk-filler', seen);
      assert.match(
        await podField('disk-filler', '{.status.message}'),
        /^The node was low on resource: ephemeral-storage\. /,
      );
      const df = await run('df', ['-B1', '--output=avail', diskRoot]);
      const avail = Number(df.stdout.trim().split('\n')[1]);
      assert.ok(avail > 200 * MiB, `root dir has ${avail} bytes free after the eviction`);
      await eventually(
        'DiskPressure off',
        async () => {
          const v = await nodeView(node);
          for (const t of v?.taints ?? []) seen.taints.add(t);
          return v?.conditions['DiskPressure'] === 'False' ? true : undefined;
        },
        90_000,
      );
      assert.ok(
        seen.taints.has('node.kubernetes.io/disk-pressure'),
        `taints seen: ${[...seen.taints].join(',')}`,
      );
      assert.equal(await podField('disk-steady', '{.status.phase}'), 'Running');
    } finally {
      await stopNode();
    }
  });
});
