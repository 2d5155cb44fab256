/**
 * Live updates of volumes against the bed's kube-apiserver 1.20, as a user makes them with kubectl:
 * a pod mounts a ConfigMap (whole, and one key again through `subPath`) and a downwardAPI labels
 * file; `kubectl patch` changes the ConfigMap and `kubectl label` the pod. The mounted files follow
 * within syncFrequency (10 s here, jittered up to 1.5×) plus a margin, the subPath file keeps what
 * it had when the container started (as upstream), and a deleted ConfigMap leaves the last content
 * in place with a FailedMount event. Twice: with the Watch strategy (the default: a changed object
 * re-projects its pods' volumes at once) and with the Cache strategy (the TTL the bed's TTL
 * controller puts on the Node, 0 s; updates arrive with the periodic resync, as upstream's remount).
 *
 * Run under the shared bed lock, one file at a time:
 *   flock /tmp/tskubelet-bed.lock node --test --test-concurrency=1 test/integration/cluster-live-volumes.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { projectedVolumePath } from '../../src/volume/index.ts';
import { IMAGE, setupEnv, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';
import { kubectlFor, untilNodeReady } from '../kit/kubectl.ts';

const NS = 'tsk-live-volumes';
/** The kubelet API (kubectl exec reaches the container through it). */
const PORT = 11257;
const SYNC_FREQUENCY_S = 10;
/** Upstream-style bound: the periodic resync (jitter up to 1.5×) plus room for the API and exec. */
const UPDATE_BOUND_MS = SYNC_FREQUENCY_S * 1500 + 10_000;

function liveVolumes(strategy: 'Watch' | 'Cache'): void {
  const NODE = `tsk-live-${strategy.toLowerCase()}`;
  let env: Env | undefined;
  let cluster: ClusterBed | undefined;
  let kubelet: TskubeletProcess | undefined;
  let podUID = '';

  const k = kubectlFor(() => {
    if (!cluster) throw new Error('not set up');
    return cluster.adminKubeconfig;
  }, ['-n', NS]);
  const kubectl = (args: string[], input?: string) => k.run(args, input === undefined ? {} : { input });
  const ok = (args: string[], input?: string) => k.ok(args, input);

  /** What the container sees at each path, read inside it. */
  async function inPod(...paths: string[]): Promise<string[]> {
    const out = await ok([
      'exec',
      'live',
      '--',
      'sh',
      '-c',
      paths.map((p) => `cat ${p}; echo '|||'`).join(';'),
    ]);
    return out.split('|||\n').slice(0, paths.length);
  }

  before(async () => {
    env = await setupEnv();
    cluster = await startCluster();
    const bed = cluster;
    await ok(['apply', '-f', '-'], `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${NS}}\n`);
    await kubectl(['delete', 'pod', 'live', '--grace-period=0', '--force', '--ignore-not-found']);
    await kubectl(['delete', 'configmap', 'app-config', '--ignore-not-found']);
    await kubectl(['delete', 'node', NODE, '--ignore-not-found']);
    await eventually('the default service account', async () =>
      (await kubectl(['get', 'serviceaccount', 'default'])).code === 0 ? true : undefined,
    );
    const config = join(env.dir, 'kubelet-config.yaml');
    await writeFile(
      config,
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n' +
        `configMapAndSecretChangeDetectionStrategy: ${strategy}\n`,
    );
    kubelet = startNodeKubelet(env, {
      node: NODE,
      kubeconfig: await bed.kubeletKubeconfig(NODE),
      extraArgs: [
        '--config',
        config,
        '--client-ca-file',
        bed.caFile,
        '--port',
        String(PORT),
        '--sync-frequency',
        `${SYNC_FREQUENCY_S}s`,
      ],
    });
    await untilNodeReady(k, NODE, { timeoutMs: 90_000, alive: async () => kubelet?.assertRunning() });
    await ok(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: ConfigMap
metadata: {name: app-config, namespace: ${NS}}
data: {greeting: v1}
---
apiVersion: v1
kind: Pod
metadata:
  name: live
  namespace: ${NS}
  labels: {app: live, rev: one}
spec:
  nodeName: ${NODE}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    volumeMounts:
    - {name: config, mountPath: /etc/config}
    - {name: config, mountPath: /etc/greeting, subPath: greeting}
    - {name: podinfo, mountPath: /etc/podinfo}
  volumes:
  - name: config
    configMap: {name: app-config}
  - name: podinfo
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
`,
    );
    await eventually(
      'pod live Running',
      async () => {
        await kubelet?.assertRunning();
        const r = await kubectl(['get', 'pod', 'live', '-o', 'jsonpath={.status.phase} {.metadata.uid}']);
        const [phase, uid] = r.stdout.split(' ');
        if (phase !== 'Running' || !uid) return undefined;
        podUID = uid;
        return true;
      },
      90_000,
    );
  });

  after(async () => {
    if (cluster) {
      await kubectl(['delete', 'pod', 'live', '--grace-period=0', '--force', '--ignore-not-found']);
      await kubectl(['delete', 'configmap', 'app-config', '--ignore-not-found']);
    }
    await kubelet?.stop();
    if (cluster) await kubectl(['delete', 'node', NODE, '--ignore-not-found']);
    await env?.close();
    await cluster?.stop();
  });

  it('updates the ConfigMap and labels files within syncFrequency, and never the subPath file', async () => {
    assert.deepEqual(await inPod('/etc/config/greeting', '/etc/greeting', '/etc/podinfo/labels'), [
      'v1',
      'v1',
      'app="live"\nrev="one"',
    ]);

    let started = Date.now();
    await ok(['patch', 'configmap', 'app-config', '-p', '{"data":{"greeting":"v2"}}']);
    const configMs = await eventually(
      'the new ConfigMap value in the container',
      async () => {
        await kubelet?.assertRunning();
        const [greeting] = await inPod('/etc/config/greeting');
        return greeting === 'v2' ? Date.now() - started : undefined;
      },
      UPDATE_BOUND_MS,
    );
    started = Date.now();
    await ok(['label', 'pod', 'live', 'rev=two', '--overwrite']);
    const labelsMs = await eventually(
      'the new labels in the container',
      async () => {
        await kubelet?.assertRunning();
        const [labels] = await inPod('/etc/podinfo/labels');
        return labels === 'app="live"\nrev="two"' ? Date.now() - started : undefined;
      },
      UPDATE_BOUND_MS,
    );
    console.log(
      `# ${strategy}: ConfigMap file updated ${configMs} ms after kubectl patch, labels file ` +
        `${labelsMs} ms after kubectl label (bound ${UPDATE_BOUND_MS} ms)`,
    );
    assert.deepEqual(await inPod('/etc/greeting'), ['v1'], 'a subPath mount never sees updates');

    const e = env;
    if (!e) throw new Error('not set up');
    const dir = projectedVolumePath(e.rootDir, podUID, 'configMap', 'config');
    assert.equal(await readFile(join(dir, 'greeting'), 'utf8'), 'v2', 'the host side agrees');
  });

  it('keeps the last content of a deleted ConfigMap and records FailedMount', async () => {
    await ok(['delete', 'configmap', 'app-config']);
    const event = await eventually(
      'a FailedMount event for the pod',
      async () => {
        await kubelet?.assertRunning();
        const out = await ok([
          'get',
          'events',
          '--field-selector',
          `involvedObject.uid=${podUID},reason=FailedMount`,
          '-o',
          'jsonpath={.items[*].message}',
        ]);
        return out.includes('app-config') ? out : undefined;
      },
      UPDATE_BOUND_MS,
    );
    assert.match(event, /configMap "app-config" not found/);
    assert.deepEqual(await inPod('/etc/config/greeting'), ['v2'], 'the last content stays');
    assert.equal((await ok(['get', 'pod', 'live', '-o', 'jsonpath={.status.phase}'])).trim(), 'Running');
  });
}

describe('live configMap and downwardAPI volumes, Watch strategy (default)', () => liveVolumes('Watch'));
describe('live configMap and downwardAPI volumes, Cache strategy (node TTL)', () => liveVolumes('Cache'));
