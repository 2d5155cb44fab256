/**
 * The attacker suite's cluster nodes: tskubelet (probes.ts `cluster`, started as the integration
 * tests start a node: test/kit/process.ts) or the upstream kubelet 1.20.2 (started
 * as the benchmarks start it: test/kit/kubelets.ts), each a node of the bed's kube-apiserver with
 * the cluster CA as client CA, Webhook authentication and authorization, a fresh root dir, and the
 * probed pod with a Secret, a ConfigMap, a tmpfs emptyDir and a ServiceAccount token. The
 * identities (tokens, certificates with and without RBAC) are made here. No upstream counterpart.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { startCluster, type ClusterBed } from '../../harness/cluster/index.ts';
import { pkiPaths } from '../../harness/cluster/control-plane.ts';
import { ensureCert } from '../../harness/cluster/certs.ts';
import { kubectlFor, untilNodeReady, type Kubectl } from '../../kit/kubectl.ts';
import { startNodeKubelet, type TskubeletProcess } from '../../kit/process.ts';
import { IMAGE, setupEnv, type Env } from '../../kit/bed.ts';
import { eventually } from '../../kit/poll.ts';
import {
  BENCH_HEALTHZ_PORT,
  BENCH_UPSTREAM_PORT,
  startKubelet as startBenchKubelet,
  type RunningKubelet,
} from '../../kit/kubelets.ts';
import { nullLogger } from '../../../src/util/logger.ts';
import { freePort } from '../../kit/net.ts';
import { handOver } from './as-nobody.ts';
import {
  SECRET_MARKERS,
  VICTIM_SCRIPT,
  clientCert,
  criExec,
  openDir,
  servingCert,
  testCa,
} from './common.ts';
import type { Credential, LiveTarget } from './target.ts';

const NS = 'default';
const POD = 'sec-victim';

/** The suite's ServiceAccounts and what RBAC gives each (none, get on nodes/proxy, everything on nodes). */
const RBAC = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: sec-norbac, namespace: ${NS}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sec-get-only, namespace: ${NS}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sec-admin, namespace: ${NS}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: sec-get-only}
rules: [{apiGroups: [""], resources: [nodes/proxy], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: sec-admin}
rules: [{apiGroups: [""], resources: [nodes/proxy, nodes/stats, nodes/metrics, nodes/log, nodes/spec], verbs: ["*"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: sec-get-only}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sec-get-only}
subjects: [{kind: ServiceAccount, name: sec-get-only, namespace: ${NS}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: sec-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sec-admin}
subjects: [{kind: ServiceAccount, name: sec-admin, namespace: ${NS}}]
---
apiVersion: v1
kind: Secret
metadata: {name: sec-secret, namespace: ${NS}}
stringData: {password: ${SECRET_MARKERS.secret}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: sec-config, namespace: ${NS}}
data: {setting: plain}
`;

function victimYaml(node: string): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${POD}, namespace: ${NS}}
spec:
  nodeName: ${node}
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", ${JSON.stringify(VICTIM_SCRIPT)}]
    env:
    - {name: SECRET_ENV, valueFrom: {secretKeyRef: {name: sec-secret, key: password}}}
    - {name: PLAIN_ENV, value: ${SECRET_MARKERS.env}}
    volumeMounts:
    - {name: secret, mountPath: /secret}
    - {name: config, mountPath: /config}
    - {name: data, mountPath: /data}
    - {name: mem, mountPath: /mem}
  volumes:
  - {name: secret, secret: {secretName: sec-secret}}
  - {name: config, configMap: {name: sec-config}}
  - {name: data, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory}}
`;
}

/** The machine's first non-loopback IPv4 address (the upstream node's address). */
function hostAddress(): string {
  for (const addrs of Object.values(networkInterfaces())) {
    const a = addrs?.find((x) => x.family === 'IPv4' && !x.internal);
    if (a) return a.address;
  }
  throw new Error('no non-loopback IPv4 address for the upstream node');
}

async function cleanNode(k: Kubectl, node: string): Promise<void> {
  await k.run(['delete', 'pod', POD, '-n', NS, '--grace-period=0', '--force', '--ignore-not-found']);
  await k.run(['delete', 'node', node, '--ignore-not-found']);
}

async function identities(
  k: Kubectl,
  dir: string,
): Promise<{ nobody: LiveTarget['identities']; adminCert: { cert: string; key: string } }> {
  await k.ok(['apply', '-f', '-'], RBAC);
  const token = async (sa: string) => (await k.ok(['create', 'token', sa, '-n', NS])).trim();
  const pki = pkiPaths();
  const nobodyDir = await openDir(join(dir, 'identities'));
  const norbac = await ensureCert(
    pki.ca,
    join(dir, 'pki'),
    { name: 'sec-norbac', commonName: 'sec-norbac', usage: 'client' },
    nullLogger,
  );
  const foreignCa = await testCa(join(dir, 'pki'), 'foreign-ca');
  const foreign = await clientCert(
    foreignCa,
    join(dir, 'pki', 'foreign'),
    join(nobodyDir, 'foreign'),
    'sec-admin',
  );
  const authorized: Credential = {
    cert: await handOver(pki.apiserverKubeletClient, join(nobodyDir, 'authorized')),
  };
  return {
    adminCert: pki.apiserverKubeletClient,
    nobody: {
      anonymous: {},
      'bad-token': { token: 'not-a-token' },
      'foreign-cert': foreign.nobody,
      'norbac-token': { token: await token('sec-norbac') },
      'norbac-cert': { cert: await handOver(norbac, join(nobodyDir, 'norbac')) },
      'get-only-token': { token: await token('sec-get-only') },
      'authorized-token': { token: await token('sec-admin') },
      authorized,
    },
  };
}

/** The API's Events about anything on this node or from its static pods, one line each. */
async function apiEvents(k: Kubectl): Promise<string[]> {
  const list = JSON.parse(await k.ok(['get', 'events', '-A', '-o', 'json'])) as {
    items: {
      type: string;
      reason: string;
      message: string;
      involvedObject: { namespace?: string; name: string };
    }[];
  };
  return list.items.map(
    (e) => `${e.type} ${e.reason} ${e.involvedObject.namespace ?? ''}/${e.involvedObject.name}: ${e.message}`,
  );
}

export async function startClusterTarget(kind: 'tskubelet' | 'upstream'): Promise<LiveTarget> {
  const node = kind === 'tskubelet' ? 'sec-tsk' : 'sec-upstream';
  const env: Env = await setupEnv();
  let cluster: ClusterBed | undefined;
  let tsk: TskubeletProcess | undefined;
  let upstream: RunningKubelet | undefined;
  const stopKubelet = async () => {
    await tsk?.stop();
    await upstream?.stop();
  };
  let logFile = join(env.dir, 'kubelet.log');
  try {
    await openDir(env.dir);
    const scratch = await openDir(join(env.dir, 'scratch'));
    await mkdir(env.manifests, { recursive: true });
    cluster = await startCluster();
    const c = cluster;
    const k = kubectlFor(() => c.adminKubeconfig);
    await cleanNode(k, node);
    const ids = await identities(k, env.dir);
    const kubeconfig = await cluster.kubeletKubeconfig(node);
    let ports: LiveTarget['ports'];
    if (kind === 'tskubelet') {
      // --tls-cert-file on a fresh root dir: nothing else creates the root dir.
      const serving = await servingCert(pkiPaths().ca, join(env.dir, 'serving'), node);
      ports = { api: await freePort(), healthz: await freePort() };
      tsk = startNodeKubelet(env, {
        node,
        kubeconfig,
        extraArgs: [
          '--client-ca-file',
          cluster.caFile,
          '--port',
          String(ports.api),
          '--healthz-port',
          String(ports.healthz),
          '--tls-cert-file',
          serving.cert,
          '--tls-private-key-file',
          serving.key,
        ],
      });
      logFile = tsk.logFile;
    } else {
      const readOnly = await freePort();
      ports = { api: BENCH_UPSTREAM_PORT, healthz: BENCH_HEALTHZ_PORT, 'read-only': readOnly };
      upstream = await startBenchKubelet({
        kind: 'upstream',
        nodeName: node,
        endpoint: env.bed.endpoint,
        rootDir: env.rootDir,
        manifestDir: env.manifests,
        kubeconfig,
        logFile,
        clientCAFile: cluster.caFile,
        readOnlyPort: readOnly,
        // Upstream 1.20 reports no address for a loopback node IP ("nodeIP can't be loopback
        // address"), and the API server then cannot reach it (no kubectl proxy, no logs).
        extraArgs: [`--node-ip=${hostAddress()}`],
      });
      await upstream.ready(120_000);
    }
    const proc = tsk;
    await untilNodeReady(k, node, { timeoutMs: 120_000, alive: async () => proc?.assertRunning() });
    await k.ok(['apply', '-f', '-'], victimYaml(node));
    await eventually(
      `pod ${POD} Running`,
      async () => {
        const r = await k.run(['get', 'pod', POD, '-n', NS, '-o', 'jsonpath={.status.phase}']);
        return r.stdout === 'Running' ? true : undefined;
      },
      120_000,
    );
    const target: LiveTarget = {
      name: kind === 'tskubelet' ? 'cluster' : 'upstream',
      kubelet: kind,
      nodeName: node,
      rootDir: env.rootDir,
      podLogsDir: '/var/log/pods',
      pod: { namespace: NS, name: POD, container: 'main' },
      ports,
      ...(kind === 'tskubelet' ? { socketPath: join(env.rootDir, 'tskubelet.sock') } : {}),
      identities: ids.nobody,
      admin: { cert: ids.adminCert },
      logFile,
      cri: env.cri,
      manifests: env.manifests,
      scratch,
      adminKubeconfig: cluster.adminKubeconfig,
      events: () => apiEvents(k),
      execInPod: (cmd) => criExec(env.cri, target.pod, cmd),
      async stop() {
        await cleanNode(k, node);
        await stopKubelet();
        await k.run(['delete', 'node', node, '--ignore-not-found']);
        // The bed is shared: the suite's accounts, roles and objects go too.
        await k.run(['delete', '-f', '-', '--ignore-not-found'], { input: RBAC });
        await env.close();
        await c.stop();
      },
    };
    await eventually('the markers written', async () =>
      (await target.execInPod(['cat', '/mem/secret.txt']).catch(() => '')).includes(SECRET_MARKERS.tmpfs)
        ? true
        : undefined,
    );
    return target;
  } catch (err) {
    const log = await readFile(logFile, 'utf8').catch(() => '');
    await stopKubelet();
    await env.close();
    await cluster?.stop();
    throw new Error(
      `${kind} cluster node: setup failed: ${String(err)}\n${log.split('\n').slice(-30).join('\n')}`,
      {
        cause: err,
      },
    );
  }
}
