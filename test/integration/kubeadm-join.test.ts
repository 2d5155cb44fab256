/**
 * The kubeadm harness proven with the upstream kubelet 1.20.2: `kubeadm join` against the cluster bed
 * (prepared by kubeadm's own init phases) registers a Node through TLS bootstrap, with no hand-made
 * certificate, and the kubelet's client certificate is rotated through a second, auto-approved CSR
 * (the bed's controller-manager signs for 10 minutes here). The same harness joins tskubelet once its
 * command line and TLS bootstrap are in (issue 27). Upstream: cmd/kubeadm/app/cmd/phases/join.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readlink, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CLUSTER_PATHS, kubernetesBinary, startCluster } from '../harness/cluster/index.ts';
import type { ClusterBed } from '../harness/cluster/index.ts';
import { BED_PATHS } from '../harness/containerd.ts';
import { PAUSE_IMAGE } from '../harness/images.ts';
import { startContainerd } from '../harness/index.ts';
import type { ContainerdBed } from '../harness/index.ts';
import { BOOTSTRAP_TOKEN, KUBEADM_PATHS, kubeadmJoin, nodePaths } from '../harness/kubeadm/index.ts';
import type { JoinedNode } from '../harness/kubeadm/index.ts';
import { kubectlFor } from '../kit/kubectl.ts';
import { eventually } from '../kit/poll.ts';
import { testLogger } from '../kit/bed.ts';

const NODE = 'itest-kubeadm-upstream';
/** First start on a machine builds Kubernetes (~8 min) and kubeadm (a few more). */
const START_TIMEOUT_MS = 60 * 60_000;
const SIGNING_DURATION = '10m';

interface Csr {
  metadata: { name: string; creationTimestamp: string };
  spec: { signerName: string; username: string };
  status: { conditions?: { type: string }[]; certificate?: string };
}

void describe('kubeadm join with the upstream kubelet 1.20.2', () => {
  let bed: ContainerdBed | undefined;
  let cluster: ClusterBed | undefined;
  let node: JoinedNode | undefined;
  const kubectl = kubectlFor(() => CLUSTER_PATHS.adminKubeconfig);
  const csrsOf = async (): Promise<Csr[]> =>
    (JSON.parse(await kubectl.ok(['get', 'csr', '-o', 'json'])) as { items: Csr[] }).items;
  const approved = (c: Csr) => (c.status.conditions ?? []).some((x) => x.type === 'Approved');

  before(
    async () => {
      const logger = testLogger();
      bed = await startContainerd({ logger });
      cluster = await startCluster({ logger, clusterSigningDuration: SIGNING_DURATION });
      // Old CSRs of this node (an earlier run) would blur which ones this join made.
      const old = (await csrsOf()).filter((c) => c.spec.username.endsWith(`:${NODE}`));
      if (old.length > 0) await kubectl.ok(['delete', 'csr', ...old.map((c) => c.metadata.name)]);
      node = await kubeadmJoin({
        cluster,
        nodeName: NODE,
        kubeletBin: kubernetesBinary('kubelet'),
        // What the upstream kubelet needs on the bed beyond the bed's flags (as test/kit/kubelets.ts).
        kubeletExtraArgs: {
          'pod-infra-container-image': PAUSE_IMAGE,
          containerd: BED_PATHS.socket,
          // Not upstream's default under /usr/libexec: the node's files stay under its root.
          'volume-plugin-dir': join(
            nodePaths(join(KUBEADM_PATHS.nodesDir, NODE)).kubeletDir,
            'volume-plugins',
          ),
        },
        logger,
      });
    },
    { timeout: START_TIMEOUT_MS },
  );

  after(async () => {
    await node?.reset();
    await bed?.stop();
    // Leave the controller-manager signing for upstream's year again, as the other suites expect.
    if (cluster !== undefined) await startCluster({ logger: testLogger() });
    await cluster?.stop();
  });

  void it('joins: kubeadm restarts the kubelet through systemctl and reports the node joined', (t) => {
    assert.ok(node);
    t.diagnostic(`prepare ${node.timings.prepareMs} ms, kubeadm join ${node.timings.joinMs} ms`);
    assert.match(node.joinOutput, /This node has joined the cluster/);
    assert.deepEqual(
      node.systemctl.map((s) => `${s.verb}:${s.rc}`),
      ['stop:0', 'restart:0'],
    );
  });

  void it('registers the Node through TLS bootstrap with an auto-approved CSR, no hand-made certificate', async () => {
    assert.ok(node);
    const { paths } = node;
    // kubeadm removes the bootstrap credential once the kubelet has its own (phases/join/kubelet.go).
    await assert.rejects(stat(paths.bootstrapKubeconfig), { code: 'ENOENT' });
    const kubeconfig = await readFile(paths.kubeletKubeconfig, 'utf8');
    assert.match(kubeconfig, /kubelet-client-current\.pem/);
    const current = await readlink(join(paths.certDir, 'kubelet-client-current.pem'));
    assert.match(current, /kubelet-client-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$/);

    const csrs = await csrsOf();
    const bootstrap = csrs.find(
      (c) => c.spec.username === `system:bootstrap:${BOOTSTRAP_TOKEN.split('.')[0]}`,
    );
    assert.ok(
      bootstrap,
      `no CSR by the bootstrap token among ${csrs.map((c) => c.spec.username).join(', ')}`,
    );
    assert.equal(bootstrap.spec.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
    assert.ok(approved(bootstrap), 'the bootstrap CSR was not auto-approved');

    const nodeJson = JSON.parse(await kubectl.ok(['get', 'node', NODE, '-o', 'json'])) as {
      metadata: { annotations?: Record<string, string> };
    };
    assert.equal(nodeJson.metadata.annotations?.['kubeadm.alpha.kubernetes.io/cri-socket'], BED_PATHS.socket);
    await eventually(
      `node ${NODE} Ready`,
      async () => {
        const out = await kubectl.ok([
          'get',
          'node',
          NODE,
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ]);
        return out === 'True';
      },
      120_000,
    );
  });

  void it(
    `rotates the client certificate through a CSR of the node itself (${SIGNING_DURATION} certificates)`,
    { timeout: 8 * 60_000 },
    async () => {
      assert.ok(node);
      const link = join(node.paths.certDir, 'kubelet-client-current.pem');
      const first = await readlink(link);
      // Issued certificates live 10m from a NotBefore 5m in the past: renewal at 70-90% comes 2-4 min in.
      const renewed = await eventually(
        'a renewed client certificate',
        async () => {
          const now = await readlink(link);
          return now !== first ? now : undefined;
        },
        6 * 60_000,
      );
      assert.notEqual(renewed, first);
      const rotation = (await csrsOf()).find((c) => c.spec.username === `system:node:${NODE}`);
      assert.ok(rotation, 'no CSR by the node identity');
      assert.ok(approved(rotation), 'the rotation CSR was not auto-approved');
      assert.ok(await node.kubelet.pid(), 'the kubelet exited during the rotation');
    },
  );
});
