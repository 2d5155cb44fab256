/**
 * PersistentVolumeClaims on the bed's kube-apiserver 1.20 (its PV controller binds them), as a user
 * makes them with kubectl: a local PV (a directory, node affinity to this node, fsGroup) written by
 * one pod and read by the next on the same claim; the mount kept, neither lost nor doubled, across a
 * kubelet SIGKILL and restart; a hostPath PV; a Block local PV on a loop device handed to the
 * container at `volumeDevices[].devicePath`; a Filesystem local PV on a blank loop device (formatted
 * ext4, mounted once, released after the last pod); a PV of a type tskubelet does not mount (nfs) → a
 * FailedMount event naming it, the pod Pending, the kubelet running. Upstream counterparts: the
 * e2e `PersistentVolumes-local` and `[Driver: local]` / `[Driver: hostPath]` suites.
 *
 * Needs root (losetup). Run under the shared bed lock, one file at a time:
 *   flock /tmp/tskubelet-bed.lock node --test --test-concurrency=1 test/integration/cluster-persistent-volumes.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { lstat, mkdir, open, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { mountsUnder } from '../../src/volume/mounts.ts';
import { localDeviceMountDir, podDeviceDir, podPvDir } from '../../src/volume/pv-plugins.ts';
import { IMAGE, containersOf, setupEnv, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';
import { kubectlFor, untilPodPhase } from '../kit/kubectl.ts';
import { applyBoundClaim, localPvSource } from '../kit/persistent-volume.ts';

const run = promisify(execFile);
const NS = 'tsk-pv';
const NODE = 'tsk-pv-node';
const LOCAL = 'kubernetes.io/local-volume';
/** PVs are cluster-scoped: every name carries the suite's prefix. */
const PVS = ['tsk-pv-local', 'tsk-pv-hostpath', 'tsk-pv-block', 'tsk-pv-fsdev', 'tsk-pv-nfs'];
const CLAIMS = ['local', 'hostpath', 'block', 'fsdev', 'nfs'];
const BLOCK_DATA = 'tsk-block-data';
/** The kubelet API (the API server's node proxy reaches /metrics and /stats/summary through it). */
const PORT = 11259;

describe('persistentVolumeClaim volumes on hostPath and local PVs', () => {
  let env: Env | undefined;
  let cluster: ClusterBed | undefined;
  let kubelet: TskubeletProcess | undefined;
  let loopDevice = '';
  /** A second, blank loop device: a Filesystem-mode local PV the kubelet formats. */
  let fsLoopDevice = '';
  let localDir = '';
  let hostDir = '';

  const k = kubectlFor(() => {
    if (!cluster) throw new Error('not set up');
    return cluster.adminKubeconfig;
  }, ['-n', NS]);
  const kubectl = (args: string[]) => k.run(args);
  const ok = (args: string[], input?: string) => k.ok(args, input);
  const e = (): Env => {
    if (!env) throw new Error('not set up');
    return env;
  };

  async function startKubelet(): Promise<void> {
    const bed = cluster;
    if (!bed) throw new Error('not set up');
    kubelet = startNodeKubelet(e(), {
      node: NODE,
      kubeconfig: await bed.kubeletKubeconfig(NODE),
      extraArgs: ['--client-ca-file', bed.caFile, '--port', String(PORT)],
    });
    await eventually(
      'node Ready',
      async () => {
        await kubelet?.assertRunning();
        const r = await kubectl([
          'get',
          'node',
          NODE,
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ]);
        return r.stdout === 'True' ? true : undefined;
      },
      90_000,
    );
  }

  /** A PV pre-bound to claim `claim` of NS, and that claim; waits until the PV controller binds them. */
  const createClaim = (
    claim: string,
    pv: string,
    source: Record<string, unknown>,
    volumeMode: 'Filesystem' | 'Block' = 'Filesystem',
  ) => applyBoundClaim(k, pv, claim, { namespace: NS, source, volumeMode });
  const localAffinity = (path: string) => localPvSource(path, NODE);

  /** A pod on this node using `claim` (mounted at /data, or as the device /dev/xvda) running `script`. */
  async function createPod(
    name: string,
    claim: string,
    script: string,
    opts: { block?: boolean; restartPolicy?: string; fsGroup?: number } = {},
  ): Promise<string> {
    const use = opts.block
      ? 'volumeDevices: [{name: data, devicePath: /dev/xvda}]'
      : 'volumeMounts: [{name: data, mountPath: /data}]';
    await ok(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${NS}}
spec:
  nodeName: ${NODE}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  restartPolicy: ${opts.restartPolicy ?? 'Never'}
  ${opts.fsGroup !== undefined ? `securityContext: {fsGroup: ${opts.fsGroup}}` : ''}
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", ${JSON.stringify(script)}]
    ${use}
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: ${claim}}
`,
    );
    return (await ok(['get', 'pod', name, '-o', 'jsonpath={.metadata.uid}'])).trim();
  }

  const phaseOf = (name: string, want: string, timeoutMs = 90_000) =>
    untilPodPhase(k, name, want, { timeoutMs, alive: async () => kubelet?.assertRunning() });

  async function deletePod(name: string): Promise<void> {
    await ok(['delete', 'pod', name, '--wait=true', '--timeout=90s']);
  }

  const podMounts = async (uid: string) => mountsUnder(join(e().rootDir, 'pods', uid));

  before(async () => {
    env = await setupEnv();
    cluster = await startCluster();
    await ok(['apply', '-f', '-'], `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${NS}}\n`);
    await kubectl(['delete', 'pods', '--all', '--grace-period=0', '--force']);
    await kubectl(['delete', 'pvc', ...CLAIMS, '--ignore-not-found', '--wait=false']);
    await kubectl(['delete', 'pv', ...PVS, '--ignore-not-found', '--wait=false']);
    await kubectl(['delete', 'node', NODE, '--ignore-not-found']);
    await eventually('the default service account', async () =>
      (await kubectl(['get', 'serviceaccount', 'default'])).code === 0 ? true : undefined,
    );
    await eventually('no PV left from an earlier run', async () => {
      const r = await kubectl(['get', 'pv', ...PVS, '--ignore-not-found', '-o', 'name']);
      return r.stdout.trim() === '' ? true : undefined;
    });
    localDir = join(env.dir, 'local-disk');
    hostDir = join(env.dir, 'hostpath-disk');
    await mkdir(localDir);
    const loop = async (name: string): Promise<string> => {
      const image = join(e().dir, name);
      const f = await open(image, 'w');
      await f.truncate(16 << 20);
      await f.close();
      const dev = (await run('losetup', ['--find', '--show', image])).stdout.trim();
      assert.match(dev, /^\/dev\/loop\d+$/);
      return dev;
    };
    loopDevice = await loop('block.img');
    fsLoopDevice = await loop('fs.img');
    await startKubelet();
  });

  after(async () => {
    if (cluster) {
      await kubectl(['delete', 'pods', '--all', '--grace-period=0', '--force']);
      await kubectl(['delete', 'pvc', ...CLAIMS, '--ignore-not-found', '--wait=false']);
      await kubectl(['delete', 'pv', ...PVS, '--ignore-not-found', '--wait=false']);
    }
    await kubelet?.stop();
    if (cluster) await kubectl(['delete', 'node', NODE, '--ignore-not-found']);
    await env?.close(); // unmounts what is left below the test dir, then removes it
    for (const dev of [loopDevice, fsLoopDevice]) if (dev) await run('losetup', ['-d', dev]);
    await cluster?.stop();
  });

  it('a pod writes to a local PV (fsGroup applied), is deleted and unmounted; the next pod on the claim reads it', async () => {
    await createClaim('local', 'tsk-pv-local', localAffinity(localDir));
    const writer = await createPod('writer', 'local', 'echo from-writer > /data/f', { fsGroup: 1234 });
    await phaseOf('writer', 'Succeeded');
    assert.equal(await readFile(join(localDir, 'f'), 'utf8'), 'from-writer\n');
    assert.equal((await stat(localDir)).gid, 1234, 'the PV root belongs to the fsGroup');
    assert.equal((await stat(join(localDir, 'f'))).gid, 1234, 'what the pod wrote too (setgid)');

    await deletePod('writer');
    await eventually('the writer’s bind mount gone', async () =>
      (await podMounts(writer)).length === 0 ? true : undefined,
    );
    await createPod('reader', 'local', 'test "$(cat /data/f)" = from-writer');
    await phaseOf('reader', 'Succeeded');
    await deletePod('reader');
  });

  it('keeps a local volume mounted across a kubelet SIGKILL and restart: neither lost nor doubled', async () => {
    const uid = await createPod('keeper', 'local', 'while true; do date > /data/alive; sleep 1; done', {
      restartPolicy: 'Always',
    });
    await phaseOf('keeper', 'Running');
    const dir = podPvDir(e().rootDir, uid, LOCAL, 'tsk-pv-local');
    const atDir = async () => (await mountsUnder(dir)).filter((m) => m.mountPoint === dir).length;
    assert.equal(await atDir(), 1);

    // The claim's numbers: /stats/summary with its pvcRef, and kubelet_volume_stats_* on /metrics.
    const summary = JSON.parse(await k.ok(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/stats/summary`])) as {
      pods: {
        podRef: { uid: string };
        volume?: { name: string; pvcRef?: { name: string; namespace: string }; capacityBytes?: number }[];
      }[];
    };
    const vol = summary.pods.find((p) => p.podRef.uid === uid)?.volume?.find((v) => v.name === 'data');
    assert.deepEqual(vol?.pvcRef, { name: 'local', namespace: NS });
    assert.ok((vol?.capacityBytes ?? 0) > 0);
    const metrics = await k.ok(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics`]);
    assert.match(
      metrics,
      new RegExp(
        `^kubelet_volume_stats_capacity_bytes\\{namespace="${NS}",persistentvolumeclaim="local"\\} ${vol?.capacityBytes}$`,
        'm',
      ),
    );
    assert.match(
      metrics,
      new RegExp(
        `^kubelet_volume_stats_inodes_used\\{namespace="${NS}",persistentvolumeclaim="local"\\} \\d+$`,
        'm',
      ),
    );

    kubelet?.child.kill('SIGKILL');
    await kubelet?.stop();
    await startKubelet();
    // Give the restarted kubelet a few syncs of the pod before judging.
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      assert.equal(await atDir(), 1, 'one mount, never two');
      await new Promise((r) => setTimeout(r, 500));
    }
    const status = await ok([
      'get',
      'pod',
      'keeper',
      '-o',
      'jsonpath={.status.phase} {.status.containerStatuses[0].restartCount}',
    ]);
    assert.equal(status.trim(), 'Running 0');
    const before = (await stat(join(localDir, 'alive'))).mtimeMs;
    await eventually('the container still writing through the mount', async () =>
      (await stat(join(localDir, 'alive'))).mtimeMs > before ? true : undefined,
    );

    await deletePod('keeper');
    await eventually('the keeper’s bind mount gone', async () =>
      (await podMounts(uid)).length === 0 ? true : undefined,
    );
    assert.equal(await readFile(join(localDir, 'f'), 'utf8'), 'from-writer\n', 'the PV data stays');
  });

  it('a pod deleted while the kubelet is down: after a restart its containers stop and its mount and dir are gone', async (t) => {
    const uid = await createPod('orphan', 'local', 'while true; do date > /data/orphan; sleep 1; done', {
      restartPolicy: 'Always',
    });
    await phaseOf('orphan', 'Running');
    assert.equal((await podMounts(uid)).length, 1);

    kubelet?.child.kill('SIGKILL');
    await kubelet?.stop();
    // With its kubelet down the API server forgets the pod at once; containerd still runs it.
    await ok(['delete', 'pod', 'orphan', '--grace-period=0', '--force']);
    assert.ok((await containersOf(e(), uid)).length > 0, 'the container outlived its kubelet');
    const restarted = Date.now();
    await startKubelet();
    await eventually(
      'the orphan’s containers, mount and directory gone',
      async () => {
        if ((await containersOf(e(), uid)).some((c) => c.state === 'CONTAINER_RUNNING')) return undefined;
        if ((await podMounts(uid)).length > 0) return undefined;
        return (await stat(join(e().rootDir, 'pods', uid)).then(
          () => false,
          () => true,
        ))
          ? true
          : undefined;
      },
      60_000,
    );
    t.diagnostic(`cleaned up ${Date.now() - restarted} ms after the restart`);
    assert.ok((await readFile(join(localDir, 'orphan'), 'utf8')).length > 0, 'the PV data stays');
  });

  it('mounts a hostPath PV (DirectoryOrCreate)', async () => {
    await createClaim('hostpath', 'tsk-pv-hostpath', {
      hostPath: { path: hostDir, type: 'DirectoryOrCreate' },
    });
    await createPod('hp', 'hostpath', 'echo via-hostpath > /data/g');
    await phaseOf('hp', 'Succeeded');
    assert.equal(await readFile(join(hostDir, 'g'), 'utf8'), 'via-hostpath\n');
    await deletePod('hp');
  });

  it('hands a Block local PV on a loop device to the container at devicePath; the next pod reads what it wrote', async () => {
    await createClaim('block', 'tsk-pv-block', localAffinity(loopDevice), 'Block');
    const writer = await createPod('blk-writer', 'block', `printf ${BLOCK_DATA} | dd of=/dev/xvda && sync`, {
      block: true,
    });
    await phaseOf('blk-writer', 'Succeeded');
    const fh = await open(loopDevice, 'r');
    const buf = Buffer.alloc(BLOCK_DATA.length);
    await fh.read(buf, 0, buf.length, 0);
    await fh.close();
    assert.equal(buf.toString(), BLOCK_DATA, 'the host sees what the container wrote to the device');

    await deletePod('blk-writer');
    const link = join(podDeviceDir(e().rootDir, writer, LOCAL), 'tsk-pv-block');
    await eventually('the writer’s device link removed', async () =>
      (await lstat(link).catch(() => undefined)) === undefined ? true : undefined,
    );
    await createPod(
      'blk-reader',
      'block',
      `test "$(dd if=/dev/xvda bs=${BLOCK_DATA.length} count=1 2>/dev/null)" = ${BLOCK_DATA}`,
      { block: true },
    );
    await phaseOf('blk-reader', 'Succeeded');
    await deletePod('blk-reader');
  });

  it('formats a blank loop device for a Filesystem local PV, mounts it once, and releases it after the last pod', async () => {
    await createClaim('fsdev', 'tsk-pv-fsdev', localAffinity(fsLoopDevice));
    const global = localDeviceMountDir(e().rootDir, 'tsk-pv-fsdev');
    await createPod('fs-writer', 'fsdev', 'echo on-ext4 > /data/h');
    await phaseOf('fs-writer', 'Succeeded');
    const { stdout } = await run('blkid', ['-p', '-s', 'TYPE', '-o', 'value', fsLoopDevice]);
    assert.equal(stdout.trim(), 'ext4', 'formatted with the local plugin’s default');
    await deletePod('fs-writer');
    await eventually('the device mount released', async () =>
      (await lstat(global).catch(() => undefined)) === undefined ? true : undefined,
    );
    await createPod('fs-reader', 'fsdev', 'test "$(cat /data/h)" = on-ext4');
    await phaseOf('fs-reader', 'Succeeded');
    await deletePod('fs-reader');
  });

  it('records FailedMount naming an unsupported PV type, keeps the pod Pending and keeps running', async () => {
    await createClaim('nfs', 'tsk-pv-nfs', { nfs: { server: '127.0.0.1', path: '/nowhere' } });
    const uid = await createPod('on-nfs', 'nfs', 'true');
    const message = await eventually(
      'a FailedMount event for the pod',
      async () => {
        await kubelet?.assertRunning();
        const out = await ok([
          'get',
          'events',
          '--field-selector',
          `involvedObject.uid=${uid},reason=FailedMount`,
          '-o',
          'jsonpath={.items[*].message}',
        ]);
        return out.includes('nfs') ? out : undefined;
      },
      60_000,
    );
    assert.match(message, /PersistentVolume type nfs is not supported/);
    assert.equal((await ok(['get', 'pod', 'on-nfs', '-o', 'jsonpath={.status.phase}'])).trim(), 'Pending');
    await kubelet?.assertRunning();
    await ok(['delete', 'pod', 'on-nfs', '--grace-period=0', '--force']);
  });
});
