/**
 * CSI against the bed's kube-apiserver 1.20: the host-path fixture driver (test/kit/csi-hostpath)
 * puts its registration socket into a running tskubelet's `<root-dir>/plugins_registry`, as
 * node-driver-registrar does. The kubelet registers it: the node's CSINode object gets the driver
 * (node ID, topology key, allocatable count) and the Node the `csi.volume.kubernetes.io/nodeid`
 * annotation, all written with the node's own credentials (the Node authorizer allows a CSINode of
 * the node's own name). A CSI mounter with the node's credentials then stages and publishes a volume
 * through the driver with real bind mounts (the CSIDriver object read through the Node authorizer),
 * and tears it down. When the driver goes, the kubelet removes the CSINode entry and the annotation.
 * A Block claim on a CSI PV is staged and published with a block capability (the fixture: a loop
 * device on a backing file, bind-mounted on the publish path), written with dd by one pod and read
 * back by the next. A driver that hangs (NodePublishVolume never answers) or crashes (its process SIGKILLed while a pod
 * has a volume published) costs the pod a timeout and an event, never the pod worker: the kubelet
 * runs with `--csi-call-timeout 3s`, other pods start meanwhile, and the set-up or teardown is retried
 * until the driver is back. A CSI claim's usage (NodeGetVolumeStats) reaches /stats/summary and
 * kubelet_volume_stats_*.
 *
 * Run under the shared bed lock, one file at a time:
 *   flock /tmp/tskubelet-bed.lock node --test --test-concurrency=1 test/integration/cluster-csi.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdir, open, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { createApiClient } from '../../src/api/client.ts';
import type { ApiClient } from '../../src/api/client-types.ts';
import { mountAt } from '../../src/volume/mounts.ts';
import {
  ANNOTATION_NODE_ID,
  blockPublishPath,
  blockStagingPath,
  blockVolumeDir,
  createCsi,
  deviceMountPath,
  pluginsRegistryDir,
  podBlockDevicePath,
  podVolumeMountPath,
  type Csi,
  type CSINode,
} from '../../src/volume/csi/index.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';
import {
  startHostPathDriver,
  type HostPathDriver,
  type HostPathDriverOptions,
} from '../kit/csi-hostpath/driver.ts';
import { hostPathDriverProcess, type HostPathDriverProcess } from '../kit/csi-hostpath/process.ts';
import { kubectlFor, untilPodPhase } from '../kit/kubectl.ts';
import { applyBoundClaim } from '../kit/persistent-volume.ts';
import { alreadyGone, runTeardown } from '../kit/teardown.ts';
import { IMAGE, setupEnv, testLogger, unmountUnder, type Env } from '../kit/bed.ts';

const run = promisify(execFile);
const NODE = 'tsk-csi';
const DRIVER = 'hostpath.csi.tskubelet.test';
const ZONE_KEY = 'topology.hostpath.csi.tskubelet.test/node';
const PORT = 11261;
/** The kubelet's CSI call deadline here (upstream's csiTimeout is 2 min). */
const CSI_TIMEOUT = '3s';

void describe('CSI driver registration and volumes against a real kube-apiserver', () => {
  let env: Env | undefined;
  let cluster: ClusterBed | undefined;
  let admin: ApiClient | undefined;
  let nodeApi: ApiClient | undefined;
  let kubelet: TskubeletProcess | undefined;
  let driver: HostPathDriver | undefined;
  let driverProcess: HostPathDriverProcess | undefined;
  let mounterSide: Csi | undefined;
  let mounterRoot = '';

  const api = (): ApiClient => {
    if (!admin) throw new Error('not set up');
    return admin;
  };
  const csiNode = () =>
    api()
      .request<CSINode>({ method: 'GET', path: `/apis/storage.k8s.io/v1/csinodes/${NODE}` })
      .catch(() => undefined);
  const nodeAnnotation = async () => {
    const n = await api().request<{
      metadata: { annotations?: Record<string, string>; labels?: Record<string, string> };
    }>({
      method: 'GET',
      path: `/api/v1/nodes/${NODE}`,
    });
    return { annotation: n.metadata.annotations?.[ANNOTATION_NODE_ID], labels: n.metadata.labels ?? {} };
  };

  /** Starts the kubelet (again, after a kill); resolves its kubeconfig. */
  const startKubelet = async (): Promise<string> => {
    assert.ok(env && cluster);
    const kubeconfig = await cluster.kubeletKubeconfig(NODE);
    kubelet = startNodeKubelet(env, {
      node: NODE,
      kubeconfig,
      extraArgs: [
        '--port',
        String(PORT),
        // The API server's node proxy reaches /stats/summary and /metrics with its client certificate.
        '--client-ca-file',
        cluster.caFile,
        '--csi-call-timeout',
        CSI_TIMEOUT,
        '--volume-stats-agg-period',
        '2s',
      ],
    });
    return kubeconfig;
  };

  before(async () => {
    env = await setupEnv();
    cluster = await startCluster();
    admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
    await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
    await admin
      .request({ method: 'DELETE', path: `/apis/storage.k8s.io/v1/csinodes/${NODE}` })
      .catch(() => undefined);
    await admin
      .request({ method: 'DELETE', path: `/apis/storage.k8s.io/v1/csidrivers/${DRIVER}` })
      .catch(() => undefined);
    await admin.request({
      method: 'POST',
      path: '/apis/storage.k8s.io/v1/csidrivers',
      body: {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSIDriver',
        metadata: { name: DRIVER },
        spec: {
          attachRequired: false,
          podInfoOnMount: true,
          volumeLifecycleModes: ['Persistent', 'Ephemeral'],
        },
      },
    });
    const kubeconfig = await startKubelet();
    nodeApi = await createApiClient({ kubeconfig, qps: 0, burst: 0 });
    await eventually(
      'the node registered',
      () =>
        api()
          .request({ method: 'GET', path: `/api/v1/nodes/${NODE}` })
          .then(() => true)
          .catch(() => undefined),
      60_000,
    );
  });

  after(async () => {
    const steps = [
      () => mounterSide?.stop(),
      () => driver?.close(),
      () => driverProcess?.stop(),
      () => kubelet?.stop(),
      () => (mounterRoot ? unmountUnder(mounterRoot) : undefined),
      // A block test that failed half-way leaves its loop device attached (the fixture detaches at NodeUnstage).
      async () => {
        if (!env) return;
        const backing = join(env.dir, 'csi-data', 'vol-blk.img');
        const { stdout } = await run('losetup', ['-j', backing]);
        for (const l of stdout.split('\n').filter((x) => x.startsWith('/dev/')))
          await run('losetup', ['-d', l.split(':')[0] ?? '']);
      },
      () => admin?.request({ method: 'DELETE', path: `/apis/storage.k8s.io/v1/csidrivers/${DRIVER}` }),
      () => admin?.request({ method: 'DELETE', path: `/apis/storage.k8s.io/v1/csinodes/${NODE}` }),
      () => admin?.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }),
      () => nodeApi?.close(),
      () => admin?.close(),
      () => env?.close(),
      () => cluster?.stop(),
    ];
    await runTeardown(steps, { ignore: alreadyGone });
  });

  const driverOptions = (): HostPathDriverOptions => {
    assert.ok(env);
    return {
      name: DRIVER,
      csiSocket: join(env.rootDir, 'plugins', DRIVER, 'csi.sock'),
      registrationSocket: join(pluginsRegistryDir(env.rootDir), `${DRIVER}-reg.sock`),
      dataDir: join(env.dir, 'csi-data'),
      nodeId: `${NODE}-id`,
      maxVolumesPerNode: 11,
      topology: { [ZONE_KEY]: NODE },
      mode: 'bind',
    };
  };

  void it("makes the node's CSINode at start-up, empty and owned by the Node, before any driver registers", async () => {
    const cn = await eventually('the CSINode', csiNode, 30_000);
    assert.deepEqual(cn.spec.drivers ?? [], []);
    assert.equal(cn.metadata.ownerReferences?.[0]?.kind, 'Node');
    assert.equal(cn.metadata.ownerReferences?.[0]?.name, NODE);
  });

  void it('registers the fixture driver: CSINode entry, node-ID annotation, topology label, a positive status', async () => {
    assert.ok(env);
    driver = await startHostPathDriver(driverOptions());
    const entry = await eventually(
      'the CSINode entry for the driver',
      async () => (await csiNode())?.spec.drivers?.find((d) => d.name === DRIVER),
      30_000,
      () => driver?.calls.map((c) => c.method),
    );
    assert.deepEqual(entry, {
      name: DRIVER,
      nodeID: `${NODE}-id`,
      topologyKeys: [ZONE_KEY],
      allocatable: { count: 11 },
    });
    const cn = await csiNode();
    assert.equal(cn?.metadata.ownerReferences?.[0]?.kind, 'Node');
    const { annotation, labels } = await nodeAnnotation();
    assert.deepEqual(JSON.parse(annotation ?? '{}'), { [DRIVER]: `${NODE}-id` });
    assert.equal(labels[ZONE_KEY], NODE);
    assert.deepEqual(driver.registrationStatuses, [{ pluginRegistered: true, error: '' }]);
    assert.deepEqual(
      driver.calls.map((c) => c.method),
      ['GetInfo', 'NodeGetInfo', 'NotifyRegistrationStatus'],
    );
  });

  void it('stages, publishes, unpublishes and unstages a volume through the driver with real bind mounts', async () => {
    assert.ok(env && driver && nodeApi);
    // The mounter alone (the pod tests below go through the kubelet), on a root
    // of its own so the kubelet's orphan clean-up never meets it, with the node's credentials.
    mounterRoot = join(env.dir, 'mounter-root');
    await mkdir(mounterRoot, { recursive: true });
    mounterSide = createCsi({
      rootDir: mounterRoot,
      nodeName: NODE,
      api: nodeApi,
      logger: testLogger(),
      nodeEvent: () => undefined,
    });
    mounterSide.drivers.set({
      name: DRIVER,
      endpoint: driver.options.csiSocket,
      highestSupportedVersion: { major: 1, minor: 0, patch: 0, text: '1.0.0' },
    });
    driver.calls.length = 0;
    const pod = {
      uid: 'csi-itest-uid',
      name: 'csi-pod',
      namespace: 'default',
      serviceAccountName: 'default',
    };
    const target = await mounterSide.mounter.setUp(pod, {
      kind: 'persistent',
      pvName: 'pv-csi-itest',
      source: { driver: DRIVER, volumeHandle: 'vol-1', fsType: 'ext4' },
      accessModes: ['ReadWriteOnce'],
      readOnly: false,
    });
    assert.deepEqual(
      driver.calls.map((c) => c.method),
      ['NodeGetCapabilities', 'NodeStageVolume', 'NodePublishVolume'],
    );
    const staging = deviceMountPath(mounterRoot, 'pv-csi-itest');
    assert.ok(await mountAt(staging), 'the staging path is a mount');
    assert.ok(await mountAt(target), 'the target path is a mount');
    // podInfoOnMount from the CSIDriver object, read with the node's credentials.
    const ctx = driver.callsOf('NodePublishVolume')[0]?.request.volumeContext as Record<string, string>;
    assert.equal(ctx['csi.storage.k8s.io/pod.name'], 'csi-pod');
    await writeFile(join(target, 'hello'), 'from the pod');
    assert.equal(await readFile(join(env.dir, 'csi-data', 'vol-1', 'hello'), 'utf8'), 'from the pod');

    await mounterSide.mounter.tearDown(pod.uid, 'pv-csi-itest');
    assert.deepEqual(driver.calls.map((c) => c.method).slice(3), [
      'NodeUnpublishVolume',
      'NodeGetCapabilities',
      'NodeUnstageVolume',
    ]);
    assert.equal(await mountAt(target), undefined);
    assert.equal(existsSync(target), false);
    assert.equal(existsSync(staging), false);
    assert.equal(await readFile(join(env.dir, 'csi-data', 'vol-1', 'hello'), 'utf8'), 'from the pod');
  });

  const kubectl = kubectlFor(() => cluster?.adminKubeconfig ?? '');
  const podPhase = (name: string, want: string) =>
    untilPodPhase(kubectl, name, want, { alive: async () => kubelet?.assertRunning() });
  const podYaml = (name: string, script: string, volume: string, podSpecExtra = '') => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: default}
spec:
  nodeName: ${NODE}
${podSpecExtra}  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", ${JSON.stringify(script)}]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
${volume}
`;
  const methods = () => driver?.calls.map((c) => c.method) ?? [];

  void it('runs a pod on a PVC bound to a CSI PV: the kubelet stages and publishes, and unpublishes and unstages on delete', async () => {
    assert.ok(env && driver);
    await kubectl.run(['delete', 'pod', 'csi-pv-pod', '--ignore-not-found', '--grace-period=0', '--force']);
    await dropClaim('tsk-pv-csi', 'csi-claim');
    await csiClaim('tsk-pv-csi', 'csi-claim', 'vol-pod');
    driver.calls.length = 0;
    await kubectl.ok(
      ['apply', '-f', '-'],
      podYaml(
        'csi-pv-pod',
        'echo from-a-pod > /data/f',
        '    persistentVolumeClaim: {claimName: csi-claim}',
        '  securityContext: {fsGroup: 2345}\n',
      ),
    );
    await podPhase('csi-pv-pod', 'Succeeded');
    assert.deepEqual(
      methods().filter((m) => m === 'NodeStageVolume' || m === 'NodePublishVolume'),
      ['NodeStageVolume', 'NodePublishVolume'],
    );
    const publish = driver.callsOf('NodePublishVolume')[0]?.request as {
      volumeId: string;
      volumeContext: Record<string, string>;
    };
    assert.equal(publish.volumeId, 'vol-pod');
    assert.equal(publish.volumeContext['csi.storage.k8s.io/pod.name'], 'csi-pv-pod');
    assert.equal(await readFile(join(env.dir, 'csi-data', 'vol-pod', 'f'), 'utf8'), 'from-a-pod\n');
    // The CSIDriver's fsGroupPolicy defaults to ReadWriteOnceWithFSType: an ext4 RWO PV is group-owned.
    assert.equal((await stat(join(env.dir, 'csi-data', 'vol-pod'))).gid, 2345, 'fsGroup on the volume root');
    assert.equal((await stat(join(env.dir, 'csi-data', 'vol-pod', 'f'))).gid, 2345, 'fsGroup inherited');

    await kubectl.ok(['delete', 'pod', 'csi-pv-pod', '--wait=true', '--timeout=90s']);
    await eventually(
      'NodeUnpublishVolume and NodeUnstageVolume',
      () =>
        methods().includes('NodeUnpublishVolume') && methods().includes('NodeUnstageVolume')
          ? true
          : undefined,
      60_000,
      methods,
    );
    // The driver records a call as it arrives; the unmount is done by the time it answers.
    const staging = deviceMountPath(env.rootDir, 'tsk-pv-csi');
    await eventually(
      'the staging mount gone',
      async () => ((await mountAt(staging)) ? undefined : true),
      10_000,
    );
    await dropClaim('tsk-pv-csi', 'csi-claim');
  });

  void it('runs a pod with an inline ephemeral CSI volume: published for the pod, unpublished when it goes', async () => {
    assert.ok(driver);
    await kubectl.run([
      'delete',
      'pod',
      'csi-inline-pod',
      '--ignore-not-found',
      '--grace-period=0',
      '--force',
    ]);
    driver.calls.length = 0;
    await kubectl.ok(
      ['apply', '-f', '-'],
      podYaml(
        'csi-inline-pod',
        'echo scratch > /data/f && cat /data/f',
        `    csi: {driver: ${DRIVER}, volumeAttributes: {size: small}}`,
      ),
    );
    await podPhase('csi-inline-pod', 'Succeeded');
    const publish = driver.callsOf('NodePublishVolume')[0]?.request as
      { volumeContext: Record<string, string> } | undefined;
    assert.ok(publish, `no NodePublishVolume among ${methods().join(', ')}`);
    assert.equal(publish.volumeContext['csi.storage.k8s.io/ephemeral'], 'true');
    assert.equal(publish.volumeContext.size, 'small');
    assert.ok(!methods().includes('NodeStageVolume'), 'an ephemeral volume is never staged');
    await kubectl.ok(['delete', 'pod', 'csi-inline-pod', '--wait=true', '--timeout=90s']);
    await eventually(
      'NodeUnpublishVolume',
      () => (methods().includes('NodeUnpublishVolume') ? true : undefined),
      60_000,
      methods,
    );
  });

  void it('maps a Block claim bound to a CSI PV: a loop device staged and published at upstream paths, written by one pod with dd and read back by the next, unpublished and unstaged when each goes', async () => {
    assert.ok(env && driver);
    const rootDir = env.rootDir;
    const pvName = 'tsk-pv-csi-blk';
    const marker = 'tsk-csi-block-marker';
    const backing = join(env.dir, 'csi-data', 'vol-blk.img');
    const blockPod = (name: string, script: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: default}
spec:
  nodeName: ${NODE}
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", ${JSON.stringify(script)}]
    volumeDevices: [{name: data, devicePath: /dev/xvda}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: csi-blk-claim}
`;
    const loopsOf = async (file: string) =>
      (await run('losetup', ['-j', file])).stdout.split('\n').filter((l) => l.startsWith('/dev/'));
    await kubectl.run([
      'delete',
      'pod',
      'csi-blk-writer',
      'csi-blk-reader',
      '--ignore-not-found',
      '--grace-period=0',
      '--force',
    ]);
    await dropClaim(pvName, 'csi-blk-claim');
    await applyBoundClaim(kubectl, pvName, 'csi-blk-claim', {
      source: { csi: { driver: DRIVER, volumeHandle: 'vol-blk' } },
      volumeMode: 'Block',
      storage: '16Mi',
    });
    driver.calls.length = 0;
    await kubectl.ok(
      ['apply', '-f', '-'],
      blockPod('csi-blk-writer', `printf ${marker} | dd of=/dev/xvda && sync`),
    );
    const writerUid = await podField('csi-blk-writer', '{.metadata.uid}');
    await podPhase('csi-blk-writer', 'Succeeded');
    const block = { block: {}, accessMode: { mode: 'SINGLE_NODE_WRITER' }, accessType: 'block' };
    const stage = driver.callsOf('NodeStageVolume')[0]?.request;
    assert.ok(stage, `no NodeStageVolume among ${methods().join(', ')}`);
    assert.equal(stage.stagingTargetPath, blockStagingPath(rootDir, pvName));
    assert.deepEqual(stage.volumeCapability, block);
    const publish = driver.callsOf('NodePublishVolume')[0]?.request;
    assert.ok(publish);
    assert.equal(publish.targetPath, blockPublishPath(rootDir, pvName, writerUid));
    assert.equal(publish.stagingTargetPath, blockStagingPath(rootDir, pvName));
    assert.deepEqual(publish.volumeCapability, block);
    assert.equal(
      (publish.volumeContext as Record<string, string>)['csi.storage.k8s.io/pod.name'],
      'csi-blk-writer',
    );
    const head = Buffer.alloc(marker.length);
    const fh = await open(backing, 'r');
    await fh.read(head, 0, marker.length, 0);
    await fh.close();
    assert.equal(head.toString(), marker, 'the pod wrote through /dev/xvda into the volume');

    await kubectl.ok(['delete', 'pod', 'csi-blk-writer', '--wait=true', '--timeout=90s']);
    await eventually(
      'NodeUnpublishVolume and NodeUnstageVolume of the writer',
      () =>
        methods().includes('NodeUnpublishVolume') && methods().includes('NodeUnstageVolume')
          ? true
          : undefined,
      60_000,
      methods,
    );
    assert.equal(
      driver.callsOf('NodeUnpublishVolume')[0]?.request.targetPath,
      blockPublishPath(rootDir, pvName, writerUid),
    );
    assert.equal(
      driver.callsOf('NodeUnstageVolume')[0]?.request.stagingTargetPath,
      blockStagingPath(rootDir, pvName),
    );
    await eventually(
      'the loop device detached',
      async () => ((await loopsOf(backing)).length === 0 ? true : undefined),
      10_000,
    );
    // The driver records NodeUnstageVolume as it starts; the kubelet removes the dirs after the
    // call returns (removeOrphanDeviceFiles), so the test waits for that rather than racing it.
    const leftDirs = () =>
      [
        blockPublishPath(rootDir, pvName, writerUid),
        podBlockDevicePath(rootDir, writerUid, pvName),
        blockVolumeDir(rootDir, pvName),
      ].filter((p) => existsSync(p));
    await eventually(
      'the publish path, the pod link and the volume dir removed',
      () => (leftDirs().length === 0 ? true : undefined),
      10_000,
      leftDirs,
    );

    driver.calls.length = 0;
    await kubectl.ok(
      ['apply', '-f', '-'],
      blockPod(
        'csi-blk-reader',
        `test "$(dd if=/dev/xvda bs=${marker.length} count=1 2>/dev/null)" = ${marker}`,
      ),
    );
    await podPhase('csi-blk-reader', 'Succeeded');
    assert.deepEqual(
      methods().filter((m) => m === 'NodeStageVolume' || m === 'NodePublishVolume'),
      ['NodeStageVolume', 'NodePublishVolume'],
    );
    await kubectl.ok(['delete', 'pod', 'csi-blk-reader', '--wait=true', '--timeout=90s']);
    await eventually(
      'NodeUnpublishVolume and NodeUnstageVolume of the reader',
      () =>
        methods().includes('NodeUnpublishVolume') && methods().includes('NodeUnstageVolume')
          ? true
          : undefined,
      60_000,
      methods,
    );
    await eventually(
      'the loop device detached',
      async () => ((await loopsOf(backing)).length === 0 ? true : undefined),
      10_000,
    );
    await dropClaim(pvName, 'csi-blk-claim');
  });

  void it('deregisters the driver when its registration socket goes: the CSINode entry and the annotation are removed', async () => {
    assert.ok(driver);
    await driver.close();
    driver = undefined;
    await eventually('the CSINode entry removed', async () => {
      const cn = await csiNode();
      return cn && !(cn.spec.drivers ?? []).some((d) => d.name === DRIVER) ? true : undefined;
    });
    // The annotation goes after the CSINode entry (upstream UninstallCSIDriver's order).
    await eventually('the node-ID annotation removed', async () =>
      (await nodeAnnotation()).annotation === undefined ? true : undefined,
    );
  });

  const driverEntry = async () => (await csiNode())?.spec.drivers?.find((d) => d.name === DRIVER);
  /** A PV on the fixture driver and its claim, bound to each other. */
  const csiClaim = (pv: string, claim: string, handle: string) =>
    applyBoundClaim(kubectl, pv, claim, {
      source: { csi: { driver: DRIVER, volumeHandle: handle, fsType: 'ext4' } },
    });
  const dropClaim = async (pv: string, claim: string) => {
    await kubectl.run(['delete', 'pvc', claim, '--ignore-not-found', '--wait=false']);
    await kubectl.run(['delete', 'pv', pv, '--ignore-not-found', '--wait=false']);
  };
  /** The messages of the pod's events with `reason`, oldest first. */
  const eventMessages = async (pod: string, reason: string): Promise<string[]> => {
    const r = await kubectl.ok([
      'get',
      'events',
      '-n',
      'default',
      '--field-selector',
      `involvedObject.name=${pod},reason=${reason}`,
      '-o',
      'json',
    ]);
    const items = (JSON.parse(r) as { items: { message: string; firstTimestamp?: string }[] }).items;
    return items.map((e) => e.message);
  };
  const podField = async (name: string, jsonpath: string) =>
    (await kubectl.run(['get', 'pod', name, '-o', `jsonpath=${jsonpath}`])).stdout;

  void it('a hung NodePublishVolume: FailedMount names the timeout, the pod waits in ContainerCreating, other pods start, and it runs once the driver answers; its usage reaches /stats/summary and /metrics, as does an inline CSI volume’s', async () => {
    await kubectl.run([
      'delete',
      'pod',
      'csi-hang-pod',
      'plain-pod',
      'csi-inline-stats',
      '--ignore-not-found',
      '--grace-period=0',
      '--force',
    ]);
    await dropClaim('tsk-pv-hang', 'hang-claim');
    driver = await startHostPathDriver({ ...driverOptions(), volumeStats: true });
    await eventually('the driver registered again', driverEntry, 30_000);
    await csiClaim('tsk-pv-hang', 'hang-claim', 'vol-hang');
    driver.behaviour.hang.add('NodePublishVolume');
    await kubectl.ok(
      ['apply', '-f', '-'],
      podYaml(
        'csi-hang-pod',
        'echo up > /data/f; sleep 3600',
        '    persistentVolumeClaim: {claimName: hang-claim}',
      ),
    );
    const d = driver;
    await eventually('NodePublishVolume reached the driver', () =>
      d.callsOf('NodePublishVolume').length > 0 ? true : undefined,
    );
    const failedMount = await eventually(
      'a FailedMount event naming the timeout',
      async () =>
        (await eventMessages('csi-hang-pod', 'FailedMount')).find((m) =>
          m.includes(`context deadline exceeded: no answer within the ${CSI_TIMEOUT} timeout`),
        ),
      60_000,
      () => eventMessages('csi-hang-pod', 'FailedMount'),
    );
    assert.match(failedMount, /NodePublishVolume/);
    // Meanwhile another pod on the node starts: the hung driver holds no worker but the pod's own.
    await kubectl.ok(['apply', '-f', '-'], podYaml('plain-pod', 'sleep 3600', '    emptyDir: {}'));
    await podPhase('plain-pod', 'Running');
    assert.equal(await podField('csi-hang-pod', '{.status.phase}'), 'Pending');
    assert.equal(
      await podField('csi-hang-pod', '{.status.containerStatuses[0].state.waiting.reason}'),
      'ContainerCreating',
    );
    const attempts = d.callsOf('NodePublishVolume').length;
    d.behaviour.hang.clear();
    await podPhase('csi-hang-pod', 'Running');
    assert.ok(d.callsOf('NodePublishVolume').length > attempts, 'set-up retried after the timeout');

    // The claim's usage from NodeGetVolumeStats: /stats/summary with its pvcRef, kubelet_volume_stats_*.
    const summaryVolume = async (pod: string) => {
      const uid = await podField(pod, '{.metadata.uid}');
      return eventually(
        `${pod}'s CSI volume in /stats/summary`,
        async () => {
          const summary = JSON.parse(
            await kubectl.ok(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/stats/summary`]),
          ) as {
            pods: {
              podRef: { uid: string };
              volume?: {
                name: string;
                pvcRef?: { name: string; namespace: string };
                capacityBytes?: number;
                inodes?: number;
              }[];
            }[];
          };
          return summary.pods.find((p) => p.podRef.uid === uid)?.volume?.find((v) => v.name === 'data');
        },
        30_000,
      );
    };
    const vol = await summaryVolume('csi-hang-pod');
    assert.deepEqual(vol.pvcRef, { name: 'hang-claim', namespace: 'default' });
    assert.ok((vol.capacityBytes ?? 0) > 0 && (vol.inodes ?? 0) > 0, JSON.stringify(vol));
    assert.ok(d.callsOf('NodeGetVolumeStats').length > 0);
    const metrics = await kubectl.ok(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics`]);
    assert.match(
      metrics,
      /^kubelet_volume_stats_capacity_bytes\{namespace="default",persistentvolumeclaim="hang-claim"\} \d/m,
    );
    assert.match(
      metrics,
      /^kubelet_volume_stats_inodes_free\{namespace="default",persistentvolumeclaim="hang-claim"\} \d/m,
    );

    // An inline ephemeral CSI volume's usage comes from the driver too (not a walk), without a pvcRef.
    await kubectl.ok(
      ['apply', '-f', '-'],
      podYaml(
        'csi-inline-stats',
        'sleep 3600',
        `    csi: {driver: ${DRIVER}, volumeAttributes: {size: small}}`,
      ),
    );
    await podPhase('csi-inline-stats', 'Running');
    const inline = await summaryVolume('csi-inline-stats');
    assert.equal(inline.pvcRef, undefined);
    assert.ok((inline.capacityBytes ?? 0) > 0 && (inline.inodes ?? 0) > 0, JSON.stringify(inline));
    const inlineUid = await podField('csi-inline-stats', '{.metadata.uid}');
    assert.ok(
      d
        .callsOf('NodeGetVolumeStats')
        .some((c) =>
          JSON.stringify(c.request).includes(`/pods/${inlineUid}/volumes/kubernetes.io~csi/data/`),
        ),
      'NodeGetVolumeStats asked for the inline volume',
    );

    await kubectl.ok([
      'delete',
      'pod',
      'csi-hang-pod',
      'plain-pod',
      'csi-inline-stats',
      '--wait=true',
      '--timeout=90s',
    ]);
    await eventually(
      'NodeUnstageVolume',
      () => (methods().includes('NodeUnstageVolume') ? true : undefined),
      60_000,
      methods,
    );
    await dropClaim('tsk-pv-hang', 'hang-claim');
  });

  void it('a driver killed while a pod has its volume published: the teardown fails with FailedUnMount, is retried, and completes once the driver is back', async () => {
    assert.ok(env && driver);
    await driver.close();
    driver = undefined;
    await eventually('the in-process driver deregistered', async () =>
      (await driverEntry()) ? undefined : true,
    );
    const proc = hostPathDriverProcess(driverOptions(), {
      callsFile: join(env.dir, 'csi-driver-calls.jsonl'),
      logFile: join(env.dir, 'csi-driver.log'),
    });
    driverProcess = proc;
    await proc.start();
    await eventually('the driver process registered', driverEntry, 30_000);
    await kubectl.run([
      'delete',
      'pod',
      'csi-crash-pod',
      '--ignore-not-found',
      '--grace-period=0',
      '--force',
    ]);
    await dropClaim('tsk-pv-crash', 'crash-claim');
    await csiClaim('tsk-pv-crash', 'crash-claim', 'vol-crash');
    await kubectl.ok(
      ['apply', '-f', '-'],
      podYaml(
        'csi-crash-pod',
        'echo kept > /data/f; sleep 3600',
        '    persistentVolumeClaim: {claimName: crash-claim}',
      ),
    );
    await podPhase('csi-crash-pod', 'Running');
    const uid = await podField('csi-crash-pod', '{.metadata.uid}');
    const target = podVolumeMountPath(env.rootDir, uid, 'tsk-pv-crash');
    assert.ok(await mountAt(target), 'published');

    await proc.kill();
    await kubectl.ok(['delete', 'pod', 'csi-crash-pod', '--wait=false']);
    const failed = await eventually(
      'a FailedUnMount event',
      async () => (await eventMessages('csi-crash-pod', 'FailedUnMount'))[0],
      60_000,
    );
    assert.match(failed, /^UnmountVolume\.TearDown failed: .*NodeUnpublishVolume.*context deadline exceeded/);
    await eventually(
      'the teardown retried (a second FailedUnMount)',
      async () => ((await eventMessages('csi-crash-pod', 'FailedUnMount')).length >= 2 ? true : undefined),
      60_000,
    );
    assert.ok(await mountAt(target), 'the volume stays published while the driver is away');
    assert.notEqual(await podField('csi-crash-pod', '{.metadata.uid}'), '', 'the pod waits in Terminating');

    const before = (await proc.calls()).length;
    await proc.start();
    await eventually(
      'the pod deleted once its teardown completed',
      async () => {
        const r = await kubectl.run(['get', 'pod', 'csi-crash-pod', '--ignore-not-found', '-o', 'name']);
        return r.stdout.trim() === '' ? true : undefined;
      },
      90_000,
      async () => (await proc.calls()).slice(before).map((c) => c.method),
    );
    const after = (await proc.calls()).slice(before).map((c) => c.method);
    assert.ok(after.includes('NodeUnpublishVolume') && after.includes('NodeUnstageVolume'), after.join(', '));
    assert.equal(await mountAt(target), undefined);
    assert.equal(await mountAt(deviceMountPath(env.rootDir, 'tsk-pv-crash')), undefined);
    assert.equal(await readFile(join(env.dir, 'csi-data', 'vol-crash', 'f'), 'utf8'), 'kept\n');
    await dropClaim('tsk-pv-crash', 'crash-claim');
  });

  void it('a pod deleted while the kubelet is down: after the restart its CSI volume is unpublished and unstaged through the driver, and a Node event tells it', async () => {
    assert.ok(env && driverProcess && kubelet);
    const proc = driverProcess;
    await csiClaim('tsk-pv-orphan', 'orphan-claim', 'vol-orphan');
    await kubectl.ok(
      ['apply', '-f', '-'],
      podYaml('csi-orphan-pod', 'sleep 3600', '    persistentVolumeClaim: {claimName: orphan-claim}'),
    );
    await podPhase('csi-orphan-pod', 'Running');
    const uid = await podField('csi-orphan-pod', '{.metadata.uid}');
    const target = podVolumeMountPath(env.rootDir, uid, 'tsk-pv-orphan');
    const staging = deviceMountPath(env.rootDir, 'tsk-pv-orphan');
    assert.ok((await mountAt(target)) && (await mountAt(staging)), 'staged and published');

    kubelet.child.kill('SIGKILL');
    await kubelet.stop();
    await kubectl.ok(['delete', 'pod', 'csi-orphan-pod', '--grace-period=0', '--force']);
    const before = (await proc.calls()).length;
    await startKubelet();
    await eventually(
      'the orphan volume unpublished and unstaged',
      async () => ((await mountAt(target)) || (await mountAt(staging)) ? undefined : true),
      60_000,
      async () => (await proc.calls()).slice(before).map((c) => c.method),
    );
    const after = (await proc.calls()).slice(before).map((c) => c.method);
    assert.ok(after.includes('NodeUnpublishVolume') && after.includes('NodeUnstageVolume'), after.join(', '));
    const message = await eventually(
      'the OrphanedPodCleanedUp Node event',
      async () => {
        const r = await kubectl.ok([
          'get',
          'events',
          '--all-namespaces',
          '--field-selector',
          `involvedObject.kind=Node,involvedObject.name=${NODE},reason=OrphanedPodCleanedUp`,
          '-o',
          'jsonpath={.items[*].message}',
        ]);
        return r.includes(uid) ? r : undefined;
      },
      30_000,
    );
    assert.ok(message.includes(target), message);
    await dropClaim('tsk-pv-orphan', 'orphan-claim');
  });
});
