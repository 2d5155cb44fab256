import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createStatsProvider } from '../../src/stats/index.ts';
import { sleep } from '../../src/util/abort.ts';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { IMAGE, NODE, podManifest, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { useKubelet, waitForPhase } from './support.ts';

/**
 * The Summary API and /metrics/resource against real containerd: a busybox pod that burns a little
 * CPU (capped at 0.1 core) and writes 1 MiB into an emptyDir must show up with real, non-zero
 * numbers, pod-level numbers included (containerd 1.6 answers ListPodSandboxStats for pods that
 * have a cgroup parent, which the kubelet's pod cgroups give them).
 */
void describe('stats summary on real containerd', () => {
  const t = useKubelet();

  void it('reports non-zero CPU, memory, network, volume and log usage for a running pod', async () => {
    await writeManifest(
      t.env,
      'stats.yaml',
      podManifest('stats', {
        volumes: [{ name: 'cache', emptyDir: {} }],
        containers: [
          {
            name: 'busy',
            image: IMAGE,
            command: [
              'sh',
              '-c',
              // A second process that always runs: the count must not hang on whether the loop's
              // `sleep 0.1` happens to be alive when the stats are read.
              'sleep 3600 & head -c 1048576 /dev/zero > /cache/blob; echo started; ' +
                'while true; do i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; sleep 0.1; done',
            ],
            resources: { limits: { cpu: '100m', memory: '64Mi' } },
            volumeMounts: [{ name: 'cache', mountPath: '/cache' }],
          },
        ],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'stats', 'Running', 60_000);
    // Volume usage is measured at most once a minute: ask only once the blob is fully written.
    const blob = join(
      t.env.rootDir,
      'pods',
      view.pod.metadata.uid ?? '',
      'volumes',
      'kubernetes.io~empty-dir',
      'cache',
      'blob',
    );
    await eventually('the 1 MiB blob in the emptyDir', async () => {
      const st = await stat(blob).catch(() => undefined);
      return st && st.size >= 1024 * 1024 ? true : undefined;
    });
    const provider = createStatsProvider({
      runtime: t.env.cri.runtime,
      imageService: t.env.cri.image,
      rootDir: t.env.rootDir,
      podLogsDir: t.env.logsDir,
      nodeName: NODE,
      pods: () => t.k.kubelet.pods().map((v) => v.pod),
    });
    await provider.summary();
    await sleep(1_500);
    const s = await provider.summary();

    assert.equal(s.node.nodeName, NODE);
    assert.ok((s.node.cpu?.usageCoreNanoSeconds ?? 0) > 0);
    assert.ok((s.node.cpu?.usageNanoCores ?? 0) > 0);
    assert.ok((s.node.memory?.workingSetBytes ?? 0) > 0);
    assert.ok((s.node.fs?.capacityBytes ?? 0) > 0);
    assert.ok((s.node.runtime?.imageFs?.usedBytes ?? 0) > 0, JSON.stringify(s.node.runtime));
    assert.ok(
      s.node.systemContainers?.some((c) => c.name === 'pods' && (c.cpu?.usageCoreNanoSeconds ?? 0) > 0),
      JSON.stringify(s.node.systemContainers),
    );

    const pod = s.pods.find((p) => p.podRef.name === `stats-${NODE}`);
    assert.ok(pod, JSON.stringify(s.pods.map((p) => p.podRef)));
    const c = pod.containers.find((x) => x.name === 'busy');
    assert.ok(c);
    assert.ok((c.cpu?.usageCoreNanoSeconds ?? 0) > 0, JSON.stringify(c.cpu));
    assert.ok((c.cpu?.usageNanoCores ?? 0) > 0, JSON.stringify(c.cpu));
    assert.ok((c.cpu?.usageNanoCores ?? 0) < 0.2e9, 'the 100m limit holds');
    assert.ok((c.memory?.workingSetBytes ?? 0) > 0, JSON.stringify(c.memory));
    assert.ok((c.logs?.usedBytes ?? 0) > 0, JSON.stringify(c.logs));
    assert.ok((pod.cpu?.usageCoreNanoSeconds ?? 0) >= (c.cpu?.usageCoreNanoSeconds ?? 0));
    assert.ok((pod.memory?.workingSetBytes ?? 0) > 0);
    assert.ok(
      pod.network?.interfaces?.some((i) => i.name === 'eth0'),
      JSON.stringify(pod.network),
    );
    // containerd counts the processes of the pod's running containers (sh and its sleep here).
    assert.ok((pod.process_stats?.process_count ?? 0) >= 2, JSON.stringify(pod.process_stats));
    const cache = pod.volume?.find((v) => v.name === 'cache');
    assert.ok((cache?.usedBytes ?? 0) >= 1024 * 1024, JSON.stringify(pod.volume));
    assert.ok((pod['ephemeral-storage']?.usedBytes ?? 0) >= 1024 * 1024);

    const { body } = await provider.resourceMetricsText();
    assert.match(
      body,
      new RegExp(
        `^container_cpu_usage_seconds_total\\{container="busy",pod="stats-${NODE}",namespace="default"\\} [0-9.e-]+ \\d{13}$`,
        'm',
      ),
    );
    assert.match(body, /^scrape_error 0$/m);
  });
});
