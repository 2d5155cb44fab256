/**
 * CSI against the bed's kube-apiserver 1.20: the host-path fixture driver (test/kit/csi-hostpath)
 * puts its registration socket into a running tskubelet's `<root-dir>/plugins_registry`, as
 * node-driver-registrar does. The kubelet registers it: the node's CSINode object gets the driver
 * (node ID, topology key, allocatable count) and the Node the `csi.volume.kubernetes.io/nodeid`
 * annotation, all written with the node's own credentials (the Node authorizer allows a CSINode of
 * the node's own name). A CSI mounter with the node's credentials then stages and publishes a volume
 * through the driver with real bind mounts (the CSIDriver object read through the Node authorizer),
 * and tears it down. When the driver goes, the kubelet removes the CSINode entry and the annotation.
 *
 * Run under the shared bed lock, one file at a time:
 *   flock /tmp/tskubelet-bed.lock node --test --test-concurrency=1 test/integration/cluster-csi.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { createApiClient } from '../../src/api/client.ts';
import type { ApiClient } from '../../src/api/client-types.ts';
import { describeError } from '../../src/util/errors.ts';
import { mountAt } from '../../src/volume/mounts.ts';
import {
  ANNOTATION_NODE_ID,
  createCsi,
  deviceMountPath,
  pluginsRegistryDir,
  type Csi,
  type CSINode,
} from '../../src/volume/csi/index.ts';
import { setupEnv, testLogger, unmountUnder, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';
import { startHostPathDriver, type HostPathDriver } from '../kit/csi-hostpath/driver.ts';

const NODE = 'tsk-csi';
const DRIVER = 'hostpath.csi.tskubelet.test';
const ZONE_KEY = 'topology.hostpath.csi.tskubelet.test/node';
const PORT = 11261;

void describe('CSI driver registration and volumes against a real kube-apiserver', () => {
  let env: Env | undefined;
  let cluster: ClusterBed | undefined;
  let admin: ApiClient | undefined;
  let nodeApi: ApiClient | undefined;
  let kubelet: TskubeletProcess | undefined;
  let driver: HostPathDriver | undefined;
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
    const kubeconfig = await cluster.kubeletKubeconfig(NODE);
    kubelet = startNodeKubelet(env, { node: NODE, kubeconfig, extraArgs: ['--port', String(PORT)] });
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
    const failures: string[] = [];
    const steps = [
      () => mounterSide?.stop(),
      () => driver?.close(),
      () => kubelet?.stop(),
      () => (mounterRoot ? unmountUnder(mounterRoot) : undefined),
      () => admin?.request({ method: 'DELETE', path: `/apis/storage.k8s.io/v1/csidrivers/${DRIVER}` }),
      () => admin?.request({ method: 'DELETE', path: `/apis/storage.k8s.io/v1/csinodes/${NODE}` }),
      () => admin?.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }),
      () => nodeApi?.close(),
      () => admin?.close(),
      () => env?.close(),
      () => cluster?.stop(),
    ];
    for (const step of steps) {
      try {
        await step();
      } catch (err) {
        if (!/404|not found/i.test(describeError(err))) failures.push(describeError(err));
      }
    }
    if (failures.length > 0) throw new Error(`teardown: ${failures.join('; ')}`);
  });

  void it('registers the fixture driver: CSINode entry, node-ID annotation, topology label, a positive status', async () => {
    assert.ok(env);
    driver = await startHostPathDriver({
      name: DRIVER,
      csiSocket: join(env.rootDir, 'plugins', DRIVER, 'csi.sock'),
      registrationSocket: join(pluginsRegistryDir(env.rootDir), `${DRIVER}-reg.sock`),
      dataDir: join(env.dir, 'csi-data'),
      nodeId: `${NODE}-id`,
      maxVolumesPerNode: 11,
      topology: { [ZONE_KEY]: NODE },
      mode: 'bind',
    });
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
    // A mounter of its own (the running kubelet's volume manager does not call CSI yet), on a root
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
});
