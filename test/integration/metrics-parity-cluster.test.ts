/**
 * Metric parity with the upstream kubelet 1.20.2 in cluster mode (issue 29): both kubelets, one
 * after the other, join the bed's kube-apiserver as the same node (test/kit/kubelets.ts, the flags
 * the cluster benchmarks give them), run the same short workload — API pods with probes, with an
 * emptyDir and a local PersistentVolumeClaim, one whose container keeps exiting, and a static pod
 * with its mirror pod — then /metrics, /metrics/cadvisor, /metrics/resource and /metrics/probes of
 * each are scraped on the read-only port and their families diffed (test/kit/metrics-parity.ts).
 * Every family upstream shows must be in tskubelet's scrape with the same type, labels and buckets,
 * but for COMMON_ACCEPTED (both modes) and CLUSTER_ACCEPTED below, each with its reason. This is
 * what the standalone test (metrics-parity.test.ts) cannot see: the API client, node status,
 * certificate and volume families. The report is printed, and written to the file named by
 * METRICS_PARITY_REPORT (e.g. bench/results/<date>-metrics-parity-cluster-<commit>.txt); with
 * TSKUBELET_BASE_TREE set, another tree's bin/tskubelet runs too and its diff is reported beside;
 * with METRICS_PARITY_RAW_DIR set, each kubelet's scrapes are written there as they were served.
 * About 90 s on the bed. Run it alone:
 * `flock /tmp/tskubelet-bed.lock node --test test/integration/metrics-parity-cluster.test.ts`.
 * Upstream counterpart: none (test/instrumentation checks metric declarations statically).
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createApiClient } from '../../src/api/client.ts';
import type { ApiClient } from '../../src/api/client-types.ts';
import { isApiStatus } from '../../src/api/client-types.ts';
import type { Pod, PodList } from '../../src/api/types.ts';
import type { Node } from '../../src/node/types.ts';
import { sleep } from '../../src/util/abort.ts';
import { monotonicNow } from '../../src/util/clock.ts';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { removeAllPods } from '../harness/index.ts';
import { IMAGE, podManifest, setupEnv, writeManifest, type Env } from '../kit/bed.ts';
import { BENCH_READONLY_PORT, removeKubeletDir, startKubelet, type KubeletKind } from '../kit/kubelets.ts';
import {
  COMMON_ACCEPTED,
  diffReport,
  scrapeEndpoints,
  mixinReport,
  unfedReport,
  type Accepted,
  type Scrape,
} from '../kit/metrics-parity.ts';
import { eventually, until } from '../kit/poll.ts';
import { buildBoundClaim, localPvSource, type ManifestObject } from '../kit/persistent-volume.ts';

const NODE = 'metrics-parity-c';
const NS = 'default';
/** After the workload is up: a few probe periods more before the scrape. */
const SETTLE_MS = 4_000;
/**
 * Both kubelets walk pod volumes this often (upstream's default is 1m, which would leave
 * kubelet_volume_stats_* empty for a workload this short).
 */
const VOLUME_STATS_PERIOD = '5s';

/**
 * The differences accepted in cluster mode beyond COMMON_ACCEPTED (both modes), each with its
 * reason. None today: every family upstream feeds in this workload (API client, node status, HTTP
 * server, volume and volume-manager families included) is in tskubelet's scrape with upstream's
 * type, labels and buckets.
 */
const CLUSTER_ACCEPTED: readonly Accepted[] = [];
const ACCEPTED: readonly Accepted[] = [...COMMON_ACCEPTED, ...CLUSTER_ACCEPTED];

/** The API objects of one kubelet's run (names carry the kind: a Retained PV is not bound twice). */
function workload(kind: KubeletKind, pvDir: string) {
  const claim = `mpc-data-${kind}`;
  const [pv, pvc] = buildBoundClaim(`mpc-pv-${kind}`, claim, {
    source: localPvSource(pvDir, NODE),
    namespace: NS,
    volumeMode: 'Filesystem',
  }).items;
  const pod = (name: string, spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>): Pod => {
    const p = podManifest(name, { nodeName: NODE, ...spec });
    p.metadata.namespace = NS;
    return p;
  };
  const pods = [
    pod('mpc-probed', {
      containers: [
        {
          name: 'c',
          image: IMAGE,
          command: ['sh', '-c', 'touch /tmp/ready; sleep 3600'],
          readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1 },
          livenessProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
          startupProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
        },
      ],
    }),
    pod('mpc-volumes', {
      containers: [
        {
          name: 'c',
          image: IMAGE,
          command: ['sh', '-c', 'echo x > /data/x; echo y > /scratch/y; sleep 3600'],
          volumeMounts: [
            { name: 'data', mountPath: '/data' },
            { name: 'scratch', mountPath: '/scratch' },
          ],
        },
      ],
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: claim } },
        { name: 'scratch', emptyDir: {} },
      ],
    }),
    pod('mpc-restarts', {
      containers: [{ name: 'c', image: IMAGE, command: ['sh', '-c', 'sleep 1; exit 3'] }],
    }),
  ];
  return { pv, pvc, pods };
}

/** What the scrape waits for, each met or not in one pod list. */
function workloadState(list: PodList): Record<string, boolean> {
  const pod = (name: string) => list.items.find((p) => p.metadata.name === name);
  const ready = (p: Pod | undefined) =>
    p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  return {
    'mpc-probed Ready': ready(pod('mpc-probed')),
    'mpc-volumes Ready': ready(pod('mpc-volumes')),
    'the mirror pod Ready': ready(pod(`mpc-static-${NODE}`)),
    'mpc-restarts restarted': (pod('mpc-restarts')?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1,
  };
}

/**
 * Deletes the object at `path` (absent: fine). With `finalizers`, also clears them: a claim's and a
 * PV's protection finalizers wait for the controller manager, which may be starting (or stopped
 * with the bed) and would leave the name taken for the next run.
 */
async function deleteIgnoringAbsent(admin: ApiClient, path: string, finalizers = false): Promise<void> {
  try {
    await admin.request({ method: 'DELETE', path });
    if (finalizers) {
      await admin.request({
        method: 'PATCH',
        path,
        contentType: 'application/merge-patch+json',
        body: { metadata: { finalizers: null } },
      });
    }
  } catch (err) {
    if (!isApiStatus(err, 404)) throw err; // gone (at once, or once its finalizers were cleared)
  }
}

/**
 * Creates the claim and its PV already bound to each other (the PV's claimRef names the claim's
 * UID, both statuses Bound), as the PV controller would leave them: the run waits for no controller.
 */
async function createBoundClaim(
  admin: ApiClient,
  claim: { metadata: { name: string } },
  pv: ManifestObject,
): Promise<void> {
  const made = await admin.request<{ metadata: { uid: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/${NS}/persistentvolumeclaims`,
    body: claim,
  });
  pv.spec.claimRef = { ...(pv.spec.claimRef as Record<string, string>), uid: made.metadata.uid };
  await admin.request({ method: 'POST', path: '/api/v1/persistentvolumes', body: pv });
  const status = (path: string, body: unknown) =>
    admin.request({ method: 'PATCH', path, contentType: 'application/merge-patch+json', body });
  await status(`/api/v1/persistentvolumes/${pv.metadata.name}/status`, { status: { phase: 'Bound' } });
  await status(`/api/v1/namespaces/${NS}/persistentvolumeclaims/${claim.metadata.name}/status`, {
    status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '64Mi' } },
  });
}

/** Removes what a run (this one or one killed midway) left in the API: pods, claims, PVs, the Node. */
async function cleanApi(admin: ApiClient, kind: KubeletKind): Promise<void> {
  const list = await admin.request<PodList>({
    method: 'GET',
    path: `/api/v1/namespaces/${NS}/pods`,
    query: { fieldSelector: `spec.nodeName=${NODE}` },
  });
  await Promise.all(
    list.items.map(async (p) => {
      try {
        await admin.request({
          method: 'DELETE',
          path: `/api/v1/namespaces/${NS}/pods/${p.metadata.name ?? ''}`,
          body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0 },
        });
      } catch (err) {
        if (!isApiStatus(err, 404)) throw err;
      }
    }),
  );
  await deleteIgnoringAbsent(admin, `/api/v1/namespaces/${NS}/persistentvolumeclaims/mpc-data-${kind}`, true);
  await deleteIgnoringAbsent(admin, `/api/v1/persistentvolumes/mpc-pv-${kind}`, true);
  await deleteIgnoringAbsent(admin, `/api/v1/nodes/${NODE}`);
}

async function nodeReady(admin: ApiClient): Promise<boolean> {
  try {
    const n = await admin.request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` });
    return n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  } catch (err) {
    if (isApiStatus(err, 404)) return false; // not registered yet
    throw err;
  }
}

/** Seconds from `a` to `b` (monotonic ms), one decimal. */
const secs = (a: number, b: number): string => ((b - a) / 1000).toFixed(1);

describe('metric families of tskubelet and the upstream kubelet 1.20.2 joined to a cluster', () => {
  let env: Env | undefined;
  let cluster: ClusterBed | undefined;
  let admin: ApiClient | undefined;
  const scrapes = new Map<KubeletKind, Scrape>();
  const timings: string[] = [];

  async function runKubelet(kind: KubeletKind): Promise<Scrape> {
    if (!env || !cluster || !admin) throw new Error('not set up');
    const api = admin;
    const t0 = monotonicNow();
    const rootDir = join(env.dir, `root-${kind}`);
    const pvDir = join(env.dir, `pv-${kind}`);
    await mkdir(pvDir, { recursive: true });
    await cleanApi(api, kind);
    const { pv, pvc, pods } = workload(kind, pvDir);
    await createBoundClaim(api, pvc, pv);
    const k = await startKubelet({
      kind,
      nodeName: NODE,
      endpoint: env.bed.endpoint,
      rootDir,
      manifestDir: env.manifests,
      kubeconfig: await cluster.kubeletKubeconfig(NODE),
      logFile: join(env.dir, `${kind}.log`),
      readOnlyPort: BENCH_READONLY_PORT,
      extraArgs: [`--volume-stats-agg-period=${VOLUME_STATS_PERIOD}`],
    });
    try {
      await k.ready(60_000);
      await eventually(`${kind}: node ${NODE} Ready`, () => nodeReady(api), 60_000);
      const tReady = monotonicNow();
      for (const p of pods) {
        await api.request({ method: 'POST', path: `/api/v1/namespaces/${NS}/pods`, body: p });
      }
      let last: PodList | undefined;
      /** When each condition was first seen met, in s from the pods' creation (the report's timings). */
      const met = new Map<string, string>();
      await until(
        `${kind}: the workload up (probed pod Ready, volumes mounted, a restart, the mirror pod)`,
        async () => {
          last = await api.request<PodList>({
            method: 'GET',
            path: `/api/v1/namespaces/${NS}/pods`,
            query: { fieldSelector: `spec.nodeName=${NODE}` },
          });
          const state = workloadState(last);
          for (const [what, ok] of Object.entries(state)) {
            if (ok && !met.has(what)) met.set(what, secs(tReady, monotonicNow()));
          }
          return Object.values(state).every(Boolean);
        },
        {
          timeoutMs: 90_000,
          intervalMs: 500,
          describe: () => (last ? workloadState(last) : 'no pod list yet'),
        },
      );
      const tUp = monotonicNow();
      // The local PV's usage is walked every VOLUME_STATS_PERIOD: wait for its first sample (a
      // scrape a second: each one computes the summary).
      await until(
        `${kind}: kubelet_volume_stats_used_bytes of the claim`,
        async () => {
          const res = await fetch(`http://127.0.0.1:${BENCH_READONLY_PORT}/metrics`);
          return (await res.text()).includes(`persistentvolumeclaim="mpc-data-${kind}"`);
        },
        { timeoutMs: 30_000, intervalMs: 1_000 },
      );
      const tStats = monotonicNow();
      await sleep(SETTLE_MS);
      const rawDir = process.env.METRICS_PARITY_RAW_DIR;
      const scrape = await scrapeEndpoints(
        BENCH_READONLY_PORT,
        rawDir ? { dir: rawDir, prefix: `cluster-${kind}-` } : undefined,
      );
      timings.push(
        `${kind}: node Ready ${secs(t0, tReady)} s after the start, workload up ${secs(tReady, tUp)} s ` +
          `later (${[...met].map(([w, t]) => `${w} at ${t} s`).join(', ')}), ` +
          `volume stats ${secs(tUp, tStats)} s later, scraped ${secs(tStats, monotonicNow())} s later`,
      );
      return scrape;
    } finally {
      await k.stop();
      await cleanApi(api, kind);
      await removeAllPods(env.bed);
      await removeKubeletDir(rootDir);
    }
  }

  before(
    async () => {
      env = await setupEnv();
      cluster = await startCluster();
      admin = await createApiClient({ kubeconfig: cluster.adminKubeconfig, qps: 0, burst: 0 });
      await mkdir(env.manifests, { recursive: true });
      await writeManifest(
        env,
        'static.yaml',
        podManifest('mpc-static', { containers: [{ name: 'c', image: IMAGE, command: ['sleep', '3600'] }] }),
      );
      scrapes.set('upstream', await runKubelet('upstream'));
      if (process.env.TSKUBELET_BASE_TREE) scrapes.set('tskubelet-base', await runKubelet('tskubelet-base'));
      scrapes.set('tskubelet', await runKubelet('tskubelet'));
    },
    { timeout: 8 * 60_000 },
  );
  after(
    async () => {
      admin?.close();
      await env?.close();
      await cluster?.stop();
    },
    { timeout: 120_000 },
  );

  it('has every upstream family with the same type, labels and buckets, but for the accepted differences', async (t) => {
    const up = scrapes.get('upstream');
    const ours = scrapes.get('tskubelet');
    assert.ok(up && ours, 'both kubelets were scraped');
    const base = scrapes.get('tskubelet-base');
    const sections: string[] = [`# cluster mode; ${timings.join('; ')}`];
    if (base) {
      sections.push(
        `# before: ${process.env.TSKUBELET_BASE_TREE ?? ''}`,
        diffReport(up, base, ACCEPTED).lines.join('\n'),
      );
    }
    const now = diffReport(up, ours, ACCEPTED);
    const unfed = unfedReport(ours);
    const mixin = mixinReport(up, ours);
    sections.push('# this tree', now.lines.join('\n'), unfed.lines.join('\n'), mixin.lines.join('\n'));
    const report = sections.join('\n');
    t.diagnostic(report);
    const file = process.env.METRICS_PARITY_REPORT;
    if (file) await writeFile(file, `${report}\n`);
    assert.deepEqual(
      [...now.unexplained, ...unfed.unexplained, ...mixin.unexplained],
      [],
      'differences neither fixed nor accepted',
    );
  });
});
