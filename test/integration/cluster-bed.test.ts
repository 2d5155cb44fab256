import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { V1Node } from '@kubernetes/client-node';
import { run } from '../harness/exec.ts';
import { clusterStatus, startCluster } from '../harness/cluster/index.ts';
import type { ClusterBed } from '../harness/cluster/index.ts';
import { sleep } from '../../src/util/abort.ts';
import { createLogger, nullLogger } from '../../src/util/logger.ts';
import { buildManifest } from '../kit/pod.ts';

const testLogger = () =>
  process.env.TSKUBELET_TEST_VERBOSE ? createLogger({ verbosity: 4, format: 'text' }) : nullLogger;

/** The first start on a machine builds Kubernetes from source (~8 minutes on 2 cores). */
const START_TIMEOUT_MS = 50 * 60_000;
const NODE = 'itest-cluster-bed-a';
const OTHER_NODE = 'itest-cluster-bed-b';
const POD = 'itest-cluster-bed-pod';

function kubectl(bed: ClusterBed, args: string[]): Promise<{ stdout: string }> {
  return run('kubectl', ['--kubeconfig', bed.adminKubeconfig, ...args], { timeoutMs: 30_000 });
}

function coreApi(kubeconfig: string): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return kc.makeApiClient(CoreV1Api);
}

function nodeObject(name: string): V1Node {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name } };
}

/** The HTTP status (200 when it succeeded) and the Status message of a client-node call. */
async function outcomeOf(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await call;
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    const e = err as ApiException<unknown>;
    const status = (typeof e.body === 'string' ? JSON.parse(e.body) : e.body) as { message?: string };
    return { code: e.code, message: status.message ?? '' };
  }
  return { code: 200, message: '' };
}

async function apiserverPid(): Promise<number | undefined> {
  return (await clusterStatus()).find((c) => c.name === 'kube-apiserver')?.pid;
}

void describe('cluster bed (etcd + kube-apiserver 1.20 + controller-manager + scheduler)', () => {
  let bed: ClusterBed;

  const deleteTestObjects = async () => {
    await kubectl(bed, ['delete', 'pod', POD, '--ignore-not-found', '--grace-period=0', '--force']);
    await kubectl(bed, ['delete', 'node', NODE, OTHER_NODE, '--ignore-not-found', '--wait=false']);
  };

  before(
    async () => {
      bed = await startCluster({ logger: testLogger() });
      await deleteTestObjects();
    },
    { timeout: START_TIMEOUT_MS },
  );

  after(async () => {
    // Unset when before() failed: its error is the one to report.
    if (bed === undefined) return;
    await deleteTestObjects();
    await bed.stop();
  });

  void it('serves the admin kubeconfig to kubectl 1.32, which lists the default namespace', async () => {
    assert.match(bed.server, /^https:\/\/127\.0\.0\.1:\d+$/);
    const { stdout } = await kubectl(bed, ['get', 'ns', '-o', 'name']);
    const names = stdout.trim().split('\n');
    assert.ok(names.includes('namespace/default'), stdout);
    assert.ok(names.includes('namespace/kube-system'), stdout);
    const { stdout: version } = await kubectl(bed, ['version', '-o', 'json']);
    const server = (JSON.parse(version) as { serverVersion?: { gitVersion?: string } }).serverVersion;
    assert.match(server?.gitVersion ?? '', /^v1\.20\.2/);
  });

  void it('has the default service account in namespace default, with its token secret', async () => {
    const { stdout } = await kubectl(bed, [
      'get',
      'serviceaccount',
      'default',
      '-n',
      'default',
      '-o',
      'json',
    ]);
    const sa = JSON.parse(stdout) as { secrets?: { name?: string }[] };
    assert.ok((sa.secrets?.length ?? 0) > 0, stdout);
  });

  void it('gives a node kubeconfig that authenticates as system:node:<name> in group system:nodes', async () => {
    const path = await bed.kubeletKubeconfig(NODE);
    const again = await bed.kubeletKubeconfig(NODE);
    assert.equal(again, path);
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    const user = kc.getCurrentUser();
    const certPem = Buffer.from(user?.certData ?? '', 'base64').toString('utf8');
    const { X509Certificate } = await import('node:crypto');
    const cert = new X509Certificate(certPem);
    assert.deepEqual(cert.subject.split('\n').sort(), [`CN=system:node:${NODE}`, 'O=system:nodes']);
    assert.ok(cert.verify(new X509Certificate(await readFile(bed.caFile)).publicKey));
  });

  void it('lets a node create its own Node object and list nodes', async () => {
    const api = coreApi(await bed.kubeletKubeconfig(NODE));
    const created = await api.createNode({ body: nodeObject(NODE) });
    assert.equal(created.metadata?.name, NODE);
    const list = await api.listNode();
    assert.ok(list.items.some((n) => n.metadata?.name === NODE));
    const own = await api.readNode({ name: NODE });
    assert.equal(own.metadata?.uid, created.metadata?.uid);
  });

  void it("forbids a node to create another node's Node object (NodeRestriction: 403)", async () => {
    const api = coreApi(await bed.kubeletKubeconfig(NODE));
    const { code, message } = await outcomeOf(api.createNode({ body: nodeObject(OTHER_NODE) }));
    assert.equal(code, 403);
    // NodeRestriction's wording (RBAC would say `cannot create resource "nodes"`).
    assert.ok(message.includes(`node "${NODE}" is not allowed to modify node "${OTHER_NODE}"`), message);
    const { stdout } = await kubectl(bed, ['get', 'node', OTHER_NODE, '--ignore-not-found', '-o', 'name']);
    assert.equal(stdout.trim(), '');
  });

  void it('denies a node what the Node authorizer does not grant (listing secrets: 403)', async () => {
    const api = coreApi(await bed.kubeletKubeconfig(NODE));
    const { code } = await outcomeOf(api.listNamespacedSecret({ namespace: 'default' }));
    assert.equal(code, 403);
  });

  void it('admits a pod without nodeName (default token mounted) and the scheduler reports it unschedulable', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cluster-bed-'));
    try {
      const manifest = join(dir, 'pod.json');
      await writeFile(
        manifest,
        JSON.stringify(
          buildManifest(POD, {
            namespace: 'default',
            image: 'docker.io/library/busybox:1.29',
            containers: [{ name: 'c', command: ['sleep', '3600'] }],
            // No node carries this label, so the scheduler's answer does not depend on whether some
            // Node in the bed (this file's, or another test's) is schedulable at that moment.
            spec: { nodeSelector: { 'tskubelet.test/no-such-node': 'true' } },
          }),
        ),
      );
      await kubectl(bed, ['create', '-f', manifest]);
      const { stdout } = await kubectl(bed, ['get', 'pod', POD, '-o', 'json']);
      const pod = JSON.parse(stdout) as { spec: { volumes?: { secret?: { secretName?: string } }[] } };
      assert.ok(
        pod.spec.volumes?.some((v) => v.secret?.secretName?.startsWith('default-token-')),
        JSON.stringify(pod.spec.volumes),
      );
      // No node matches its selector: the scheduler says so in a condition.
      const deadline = Date.now() + 60_000;
      let conditions = '';
      while (Date.now() < deadline) {
        const res = await kubectl(bed, ['get', 'pod', POD, '-o', 'jsonpath={.status.conditions}']);
        conditions = res.stdout;
        if (conditions.includes('Unschedulable')) break;
        await sleep(250);
      }
      assert.match(conditions, /"reason":"Unschedulable"/);
    } finally {
      await kubectl(bed, ['delete', 'pod', POD, '--ignore-not-found', '--grace-period=0', '--force']);
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('stops and starts the apiserver: down in between, answering again after', async () => {
    await bed.stopApiserver();
    assert.equal(await apiserverPid(), undefined);
    await assert.rejects(kubectl(bed, ['get', 'ns', 'default', '--request-timeout=3s']));
    await bed.startApiserver();
    const { stdout } = await kubectl(bed, ['get', 'ns', 'default', '-o', 'name']);
    assert.equal(stdout.trim(), 'namespace/default');
  });

  void it('restarts only the apiserver, keeping the stored objects, and resolves once it is ready', async () => {
    const before = await clusterStatus();
    const pidOf = (list: typeof before, name: string) => list.find((c) => c.name === name)?.pid;
    await bed.restartApiserver({ downMs: 500 });
    const afterRestart = await clusterStatus();
    assert.notEqual(pidOf(afterRestart, 'kube-apiserver'), pidOf(before, 'kube-apiserver'));
    for (const name of ['etcd', 'kube-controller-manager', 'kube-scheduler']) {
      assert.equal(pidOf(afterRestart, name), pidOf(before, name), `${name} kept running`);
    }
    assert.ok(
      afterRestart.every((c) => c.healthy),
      JSON.stringify(afterRestart),
    );
    // Ready means usable at once: the Node made before the restart is still there (etcd kept it).
    const { stdout } = await kubectl(bed, ['get', 'node', NODE, '-o', 'name']);
    assert.equal(stdout.trim(), `node/${NODE}`);
  });

  void it('reuses the running cluster on a second start, and that handle does not stop it', async () => {
    const pids = (await clusterStatus()).map((c) => c.pid);
    const again = await startCluster({ logger: testLogger() });
    assert.equal(again.server, bed.server);
    await again.stop();
    const status = await clusterStatus();
    assert.deepEqual(
      status.map((c) => c.pid),
      pids,
    );
    assert.ok(
      status.every((c) => c.healthy),
      JSON.stringify(status),
    );
  });
});
