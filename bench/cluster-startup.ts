/**
 * Cluster pod startup (the SLI of the Kubernetes pod-startup SLO): N pods bound to the node through
 * the API (spec.nodeName), time from the create call to `Running` with every container started, as
 * seen by a watch. Real kube-apiserver + etcd (test/harness/cluster), containerd from the test bed,
 * tskubelet as its own process with default kubeAPIQPS 50 / burst 100. Images present.
 *
 *   node bench/cluster-startup.ts [--pods 30]
 */
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startContainerd, removeAllPods, BUSYBOX_IMAGE } from '../test/harness/index.ts';
import { startCluster } from '../test/harness/cluster/index.ts';
import { createApiClient } from '../src/api/client.ts';
import type { Pod } from '../src/api/types.ts';
import type { Node } from '../src/node/types.ts';
import { sleep } from '../src/util/abort.ts';

const { values } = parseArgs({ options: { pods: { type: 'string', default: '30' } } });
const N = Number(values.pods);
const NODE = 'tsk-bench';
const NS = 'default';

function pct(sorted: number[], p: number): number {
  return sorted[Math.max(0, Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

const bed = await startContainerd();
await removeAllPods(bed);
const cluster = await startCluster();
const admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
const dir = await mkdtemp(join(tmpdir(), 'tskubelet-cbench-'));
await mkdir(join(dir, 'manifests'));
const logFile = join(tmpdir(), 'tskubelet-bench-cluster.log');
const fd = openSync(logFile, 'w');
const kubelet = spawn(
  join(import.meta.dirname, '..', 'bin', 'tskubelet'),
  [
    'run',
    '--kubeconfig',
    await cluster.kubeletKubeconfig(NODE),
    '--container-runtime-endpoint',
    bed.endpoint,
    '--root-dir',
    join(dir, 'root'),
    '--hostname-override',
    NODE,
    '--node-ip',
    '127.0.0.1',
    '--healthz-port',
    '0',
  ],
  { stdio: ['ignore', fd, fd] },
);

for (;;) {
  const n = await admin
    .request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` })
    .catch(() => undefined);
  if (n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) break;
  await sleep(200);
}

const created = new Map<string, number>();
const running = new Map<string, number>();
const watchStop = new AbortController();
const allRunning = Promise.withResolvers<void>();
const watching = admin
  .watch(
    `/api/v1/namespaces/${NS}/pods`,
    { fieldSelector: `spec.nodeName=${NODE}` },
    (ev) => {
      const p = ev.object as unknown as Pod;
      const name = p.metadata.name ?? '';
      const started = (p.status?.containerStatuses ?? []).every((c) => c.state.running);
      if (p.status?.phase === 'Running' && started && !running.has(name) && created.has(name)) {
        running.set(name, Date.now());
        if (running.size === N) allRunning.resolve();
      }
    },
    { signal: watchStop.signal },
  )
  .catch(() => undefined);
await sleep(300);

const t0 = Date.now();
await Promise.all(
  Array.from({ length: N }, async (_, i) => {
    const name = `cbench-${i}`;
    created.set(name, Date.now());
    await admin.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/pods`,
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: NS },
        spec: {
          nodeName: NODE,
          terminationGracePeriodSeconds: 1,
          automountServiceAccountToken: false,
          containers: [{ name: 'main', image: BUSYBOX_IMAGE, command: ['sleep', '3600'] }],
        },
      },
    });
  }),
);
await Promise.race([allRunning.promise, sleep(180_000)]);
const wall = Date.now() - t0;
watchStop.abort();
await watching;

const lat = [...running].map(([name, t]) => t - (created.get(name) ?? t)).sort((a, b) => a - b);
for (const name of created.keys()) {
  await admin
    .request({
      method: 'DELETE',
      path: `/api/v1/namespaces/${NS}/pods/${name}`,
      body: { gracePeriodSeconds: 0 },
    })
    .catch(() => undefined);
}
kubelet.kill('SIGTERM');
await new Promise((r) => kubelet.once('exit', r));
await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` }).catch(() => undefined);
admin.close();
await removeAllPods(bed);
await rm(dir, { recursive: true, force: true });

const f = (x: number) => `${(x / 1000).toFixed(2)} s`;
process.stdout.write(
  `cluster pod startup (create → Running, watch), N=${N}: ${lat.length}/${N} running; ` +
    `p50 ${f(pct(lat, 50))}, p90 ${f(pct(lat, 90))}, p99 ${f(pct(lat, 99))}, max ${f(lat[lat.length - 1] ?? NaN)}; ` +
    `wall ${f(wall)} (kubelet log: ${logFile})\n`,
);
