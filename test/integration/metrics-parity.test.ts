/**
 * Metric parity with the upstream kubelet 1.20.2 (issue 29): both kubelets run, one after the
 * other, standalone on the bed's containerd with the same flags (test/kit/kubelets.ts) and the
 * same static pods (a plain one, one whose container keeps exiting, one with probes, one with an
 * init container); then /metrics, /metrics/cadvisor, /metrics/resource and /metrics/probes of each
 * are scraped on the read-only port and their metric families diffed (test/kit/metrics-parity.ts):
 * names, types, label names, bucket bounds, help texts. Every family upstream shows must be in
 * tskubelet's scrape with the same type, labels and buckets, but for the differences accepted in
 * COMMON_ACCEPTED there, each with its reason. metrics-parity-cluster.test.ts makes the same diff
 * with both kubelets joined to the bed's kube-apiserver. The raw diff is printed (and written to the file named by
 * METRICS_PARITY_REPORT, e.g. bench/results/<date>-metrics-parity-<commit>.txt);
 * with TSKUBELET_BASE_TREE set, another tree's bin/tskubelet (a worktree at an older commit) runs
 * too and its diff is reported beside (not asserted): the diff before a change, in the same run.
 * Run it alone:
 * `flock /tmp/tskubelet-bed.lock node --test test/integration/metrics-parity.test.ts`.
 * Upstream counterpart: none (test/instrumentation checks metric declarations statically).
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { IMAGE, podManifest, setupEnv, writeManifest, type Env } from '../kit/bed.ts';
import { BENCH_READONLY_PORT, removeKubeletDir, startKubelet, type KubeletKind } from '../kit/kubelets.ts';
import { eventually } from '../kit/poll.ts';
import { COMMON_ACCEPTED, diffReport, scrapeEndpoints, type Scrape } from '../kit/metrics-parity.ts';
import { removeAllPods } from '../harness/index.ts';
import { sleep } from '../../src/util/abort.ts';

/** How long each kubelet runs the workload before the scrape: a few restarts and probe periods. */
const WORKLOAD_MS = 30_000;

/** The workload: the same static pods for both kubelets. */
async function writeWorkload(env: Env): Promise<void> {
  await mkdir(env.manifests, { recursive: true });
  await writeManifest(
    env,
    'plain.yaml',
    podManifest('mp-plain', { containers: [{ name: 'c', image: IMAGE, command: ['sleep', '3600'] }] }),
  );
  await writeManifest(
    env,
    'restarts.yaml',
    podManifest('mp-restarts', {
      containers: [{ name: 'c', image: IMAGE, command: ['sh', '-c', 'sleep 1; exit 3'] }],
    }),
  );
  await writeManifest(
    env,
    'probed.yaml',
    podManifest('mp-probed', {
      containers: [
        {
          name: 'c',
          image: IMAGE,
          command: ['sh', '-c', 'touch /tmp/ready; sleep 3600'],
          readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 2 },
          livenessProbe: { exec: { command: ['true'] }, periodSeconds: 2 },
          startupProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
        },
      ],
    }),
  );
  await writeManifest(
    env,
    'init.yaml',
    podManifest('mp-init', {
      initContainers: [{ name: 'init', image: IMAGE, command: ['true'] }],
      containers: [
        { name: 'a', image: IMAGE, command: ['sleep', '3600'] },
        { name: 'b', image: IMAGE, command: ['sleep', '3600'] },
      ],
    }),
  );
}

async function runKubelet(env: Env, kind: KubeletKind): Promise<Scrape> {
  const rootDir = join(env.dir, `root-${kind}`);
  const k = await startKubelet({
    kind,
    nodeName: 'metrics-parity',
    endpoint: env.bed.endpoint,
    rootDir,
    manifestDir: env.manifests,
    logFile: join(env.dir, `${kind}.log`),
    readOnlyPort: BENCH_READONLY_PORT,
  });
  try {
    await k.ready(60_000);
    await eventually(
      `${kind}: four pod sandboxes and a restarted container`,
      async () => {
        const sandboxes = await env.cri.runtime.listPodSandbox();
        const containers = await env.cri.runtime.listContainers();
        return (
          sandboxes.filter((s) => s.state === 'SANDBOX_READY').length >= 4 &&
          containers.some((c) => c.metadata?.name === 'c' && (c.metadata.attempt ?? 0) >= 1)
        );
      },
      120_000,
    );
    await sleep(WORKLOAD_MS);
    return await scrapeEndpoints(BENCH_READONLY_PORT);
  } finally {
    await k.stop();
    await removeAllPods(env.bed);
    await removeKubeletDir(rootDir);
  }
}

describe('metric families of tskubelet and the upstream kubelet 1.20.2 after the same workload', () => {
  let env: Env | undefined;
  const scrapes = new Map<KubeletKind, Scrape>();

  before(
    async () => {
      env = await setupEnv();
      await writeWorkload(env);
      scrapes.set('upstream', await runKubelet(env, 'upstream'));
      if (process.env.TSKUBELET_BASE_TREE)
        scrapes.set('tskubelet-base', await runKubelet(env, 'tskubelet-base'));
      scrapes.set('tskubelet', await runKubelet(env, 'tskubelet'));
    },
    { timeout: 12 * 60_000 },
  );
  after(() => env?.close(), { timeout: 120_000 });

  it('has every upstream family with the same type, labels and buckets, but for the accepted differences', async (t) => {
    const up = scrapes.get('upstream');
    const ours = scrapes.get('tskubelet');
    assert.ok(up && ours, 'both kubelets were scraped');
    const base = scrapes.get('tskubelet-base');
    const sections: string[] = [];
    if (base)
      sections.push(
        `# before: ${process.env.TSKUBELET_BASE_TREE ?? ''}`,
        diffReport(up, base, COMMON_ACCEPTED).lines.join('\n'),
      );
    const now = diffReport(up, ours, COMMON_ACCEPTED);
    sections.push('# this tree', now.lines.join('\n'));
    const report = sections.join('\n');
    t.diagnostic(report);
    const file = process.env.METRICS_PARITY_REPORT;
    if (file) await writeFile(file, `${report}\n`);
    assert.deepEqual(now.unexplained, [], 'differences neither fixed nor accepted');
  });
});
