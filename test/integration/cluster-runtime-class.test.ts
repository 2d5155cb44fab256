/**
 * RuntimeClass on a cluster node (upstream e2e common/node/runtimeclass.go, on this bed): etcd +
 * kube-apiserver 1.20 from test/harness/cluster (its RuntimeClass admission plugin sets
 * spec.overhead), containerd with a second runc handler `runc-test` (test/harness/containerd.ts),
 * tskubelet as its own process with a node's credentials, driven with kubectl.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { BED_PATHS, BED_SECOND_RUNTIME_HANDLER } from '../harness/index.ts';
import { IMAGE, sandboxesOf, setupEnv, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';
import { kubectlFor } from '../kit/kubectl.ts';

const run = promisify(execFile);
const NODE = 'tsk-rc-itest';
const NS = 'default';
/** Class names carry the run, so that a class an interrupted run left behind is never reused. */
const RUN = Date.now().toString(36);
const CLASS = `tsk-rc-${RUN}`;
const BOGUS_CLASS = `tsk-rc-bogus-${RUN}`;
const GONE_CLASS = `tsk-rc-gone-${RUN}`;
const CGROUP = '/sys/fs/cgroup';

function runtimeClassYaml(name: string, handler: string, overhead = ''): string {
  return `apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: ${name}}
handler: ${handler}
${overhead}`;
}

function podYaml(name: string, runtimeClassName: string, resources = ''): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${NS}}
spec:
  nodeName: ${NODE}
  runtimeClassName: ${runtimeClassName}
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sleep", "3600"]
${resources}`;
}

interface PodJson {
  metadata: { uid: string };
  spec: { overhead?: Record<string, string> };
  status: {
    phase?: string;
    containerStatuses?: { state?: { waiting?: { reason?: string } } }[];
  };
}

describe('RuntimeClass on a cluster node (kubectl)', () => {
  let env: Env;
  let cluster: ClusterBed;
  let kubelet: TskubeletProcess | undefined;
  const k = kubectlFor(() => cluster.adminKubeconfig);
  const pods: string[] = [];

  async function podJson(name: string): Promise<PodJson | undefined> {
    const r = await k.run(['get', 'pod', name, '-n', NS, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as PodJson) : undefined;
  }

  async function createPod(name: string, yaml: string): Promise<void> {
    pods.push(name);
    await k.ok(['apply', '-f', '-'], yaml);
  }

  async function waitRunning(name: string): Promise<PodJson> {
    return eventually(
      `pod ${name} Running`,
      async () => {
        const p = await podJson(name);
        return p?.status.phase === 'Running' ? p : undefined;
      },
      90_000,
    );
  }

  /**
   * The pod's FailedCreatePodSandBox event messages (kubectl get events), by UID: the events of an
   * earlier run's pod of the same name outlive it by an hour.
   */
  async function sandboxFailures(name: string): Promise<string[]> {
    const uid = (await podJson(name))?.metadata.uid ?? 'none';
    const out = await k.ok([
      'get',
      'events',
      '-n',
      NS,
      '--field-selector',
      `involvedObject.uid=${uid},reason=FailedCreatePodSandBox`,
      '-o',
      'jsonpath={range .items[*]}{.message}{"\\n"}{end}',
    ]);
    return out.split('\n').filter((l) => l !== '');
  }

  before(async () => {
    env = await setupEnv();
    cluster = await startCluster();
    await k.run(['delete', 'node', NODE, '--ignore-not-found']);
    await k.ok(
      ['apply', '-f', '-'],
      runtimeClassYaml(
        CLASS,
        BED_SECOND_RUNTIME_HANDLER,
        'overhead:\n  podFixed: {cpu: 250m, memory: 32Mi}\n',
      ),
    );
    await k.ok(['apply', '-f', '-'], runtimeClassYaml(BOGUS_CLASS, 'no-such-handler'));
    // The API server refuses a pod whose RuntimeClass does not exist: the class is deleted after
    // the pod is bound, before the kubelet starts, as a class removed under a pending pod would be.
    await k.ok(['apply', '-f', '-'], runtimeClassYaml(GONE_CLASS, BED_SECOND_RUNTIME_HANDLER));
    await createPod('rc-gone', podYaml('rc-gone', GONE_CLASS));
    await k.ok(['delete', 'runtimeclass', GONE_CLASS]);
    kubelet = startNodeKubelet(env, { node: NODE, kubeconfig: await cluster.kubeletKubeconfig(NODE) });
  });

  after(async () => {
    if (cluster) {
      for (const p of pods) {
        await k.run(['delete', 'pod', p, '-n', NS, '--grace-period=0', '--force', '--wait=false']);
      }
    }
    await kubelet?.stop();
    if (cluster) {
      await k.run(['delete', 'runtimeclass', CLASS, BOGUS_CLASS, GONE_CLASS, '--ignore-not-found']);
      await k.run(['delete', 'node', NODE, '--ignore-not-found']);
    }
    await env?.close();
    await cluster?.stop();
  });

  it('runs the pod’s sandbox under its RuntimeClass handler, sized with the class overhead', async () => {
    const limits = '    resources:\n      limits: {cpu: 100m, memory: 64Mi}\n';
    await createPod('rc-runs', podYaml('rc-runs', CLASS, limits));
    const pod = await waitRunning('rc-runs');
    assert.deepEqual(pod.spec.overhead, { cpu: '250m', memory: '32Mi' }, 'set by the API server');

    const [sandbox] = await sandboxesOf(env, pod.metadata.uid);
    assert.ok(sandbox, 'a sandbox for the pod');
    assert.equal(sandbox.runtimeHandler, BED_SECOND_RUNTIME_HANDLER, 'ListPodSandbox');
    const status = await env.cri.runtime.podSandboxStatus(sandbox.id);
    assert.equal(status.runtimeHandler, BED_SECOND_RUNTIME_HANDLER, 'PodSandboxStatus');
    // containerd's own record of the sandbox container: the handler it picked, and its runtime.
    const { stdout } = await run('ctr', [
      '--address',
      BED_PATHS.socket,
      '--namespace',
      'k8s.io',
      'containers',
      'info',
      sandbox.id,
    ]);
    const info = JSON.parse(stdout) as {
      Runtime?: { Name?: string };
      Extensions?: Record<string, { value?: string }>;
    };
    assert.equal(info.Runtime?.Name, 'io.containerd.runc.v2');
    const metadata = JSON.parse(
      Buffer.from(info.Extensions?.['io.cri-containerd.sandbox.metadata']?.value ?? '', 'base64').toString(),
    ) as { Metadata?: { RuntimeHandler?: string } };
    assert.equal(
      metadata.Metadata?.RuntimeHandler,
      BED_SECOND_RUNTIME_HANDLER,
      'containerd sandbox metadata',
    );

    // The Guaranteed pod's cgroup: containers (100m, 64Mi) + overhead (250m, 32Mi).
    const dir = `kubepods/pod${pod.metadata.uid}`;
    const read = (f: string) => readFile(`${CGROUP}/${f}`, 'utf8').then((t) => t.trim());
    assert.equal(await read(`memory/${dir}/memory.limit_in_bytes`), String(96 * 2 ** 20));
    assert.equal(await read(`cpu/${dir}/cpu.shares`), String(Math.floor((350 * 1024) / 1000)));
    assert.equal(await read(`cpu/${dir}/cpu.cfs_quota_us`), '35000');
  });

  it('a handler containerd does not know: FailedCreatePodSandBox with containerd’s error, the pod stays ContainerCreating', async () => {
    await createPod('rc-bogus', podYaml('rc-bogus', BOGUS_CLASS));
    const messages = await eventually(
      'FailedCreatePodSandBox for rc-bogus',
      async () => {
        const m = await sandboxFailures('rc-bogus');
        return m.length > 0 ? m : undefined;
      },
      60_000,
    );
    assert.match(
      messages[0] ?? '',
      /^Failed to create pod sandbox: .*no runtime for "no-such-handler" is configured/,
    );
    const pod = await podJson('rc-bogus');
    assert.equal(pod?.status.phase, 'Pending');
    assert.equal(pod?.status.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
  });

  it('a RuntimeClass that does not exist: FailedCreatePodSandBox in kubectl describe, and the pod starts once the class is created', async () => {
    const message = `Failed to create pod sandbox: runtimeclasses.node.k8s.io "${GONE_CLASS}" not found`;
    await eventually(
      'FailedCreatePodSandBox for rc-gone',
      async () => ((await sandboxFailures('rc-gone')).includes(message) ? true : undefined),
      60_000,
    );
    const described = await k.ok(['describe', 'pod', 'rc-gone', '-n', NS]);
    assert.match(described, new RegExp(`Runtime Class Name:\\s+${GONE_CLASS}`));
    assert.match(described, /Warning\s+FailedCreatePodSandBox\s/);
    assert.ok(described.includes(message), described);
    assert.match(described, /Reason:\s+ContainerCreating/);
    if (process.env.TSKUBELET_TEST_VERBOSE) console.log(described);

    // Retried: the informer sees the class appear and the next sync creates the sandbox.
    await k.ok(['apply', '-f', '-'], runtimeClassYaml(GONE_CLASS, BED_SECOND_RUNTIME_HANDLER));
    const pod = await waitRunning('rc-gone');
    const [sandbox] = await sandboxesOf(env, pod.metadata.uid);
    assert.equal(sandbox?.runtimeHandler, BED_SECOND_RUNTIME_HANDLER);
  });
});
