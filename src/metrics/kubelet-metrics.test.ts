import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { register as globalRegistry } from 'prom-client';
import type { Pod } from '../api/types.ts';
import type { RuntimePodSummary } from '../runtime/kuberuntime/runtime-manager.ts';
import { createKubeletMetrics } from './kubelet-metrics.ts';
import { metricsText } from './metrics-text.ts';
import { buildPod } from '../../test/kit/pod.ts';

/** The sample lines of a family (no HELP/TYPE), as `name{labels} value`. */
function samples(text: string, name: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
}

function runtimePod(uid: string, ready: boolean, states: RuntimePodSummary['containers'][number]['state'][]) {
  return {
    uid,
    name: uid,
    namespace: 'ns',
    sandboxes: [{ id: `s-${uid}`, state: ready ? ('ready' as const) : ('notready' as const), createdAt: 0 }],
    containers: states.map((state, i) => ({
      id: `c-${uid}-${i}`,
      name: `c${i}`,
      state,
      createdAt: 0,
      podSandboxId: `s-${uid}`,
    })),
  };
}

describe('kubelet metrics', () => {
  it('uses a registry of its own, never the global one', async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    assert.notEqual(m.registry, globalRegistry);
    assert.deepEqual(await globalRegistry.getMetricsAsJSON(), []);
    assert.deepEqual(samples(await m.registry.metrics(), 'kubelet_node_name'), [
      'kubelet_node_name{node="n1"} 1',
    ]);
  });

  it('observes kubelet_eviction_stats_age_seconds by eviction signal with the default buckets', async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    m.recordEvictionStatsAge('memory.available', 7);
    const text = await m.registry.metrics();
    assert.match(text, /^# TYPE kubelet_eviction_stats_age_seconds histogram$/m);
    assert.deepEqual(samples(text, 'kubelet_eviction_stats_age_seconds_bucket').slice(-2), [
      'kubelet_eviction_stats_age_seconds_bucket{le="10",eviction_signal="memory.available"} 1',
      'kubelet_eviction_stats_age_seconds_bucket{le="+Inf",eviction_signal="memory.available"} 1',
    ]);
  });

  it('observes kubelet_cgroup_manager_duration_seconds by operation type, declared before any', async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    assert.match(await m.registry.metrics(), /^# TYPE kubelet_cgroup_manager_duration_seconds histogram$/m);
    m.cgroupOperation('create', 0.002);
    assert.deepEqual(samples(await m.registry.metrics(), 'kubelet_cgroup_manager_duration_seconds_count'), [
      'kubelet_cgroup_manager_duration_seconds_count{operation_type="create"} 1',
    ]);
  });

  it("serves the volume manager's storage_operation_* families in the kubelet registry", async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    m.volumes.operationDone('kubernetes.io/empty-dir', 'volume_mount', 0.01, false);
    assert.deepEqual(samples(await m.registry.metrics(), 'storage_operation_status_count'), [
      'storage_operation_status_count{volume_plugin="kubernetes.io/empty-dir",operation_name="volume_mount",status="success"} 1',
    ]);
  });

  it('reports kubelet_volume_stats_* per claim at scrape time (the first pod’s numbers), none without stats', async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    assert.deepEqual(samples(await m.registry.metrics(), 'kubelet_volume_stats_capacity_bytes'), []);
    const stat = (claim: string, capacityBytes: number) => ({
      namespace: 'ns',
      persistentvolumeclaim: claim,
      capacityBytes,
      availableBytes: 1,
      usedBytes: 2,
      inodes: 3,
      inodesFree: 4,
      inodesUsed: 5,
    });
    m.setVolumeStatsProvider(() => Promise.resolve([stat('a', 100), stat('a', 999), stat('b', 200)]));
    const text = await m.registry.metrics();
    assert.deepEqual(samples(text, 'kubelet_volume_stats_capacity_bytes'), [
      'kubelet_volume_stats_capacity_bytes{namespace="ns",persistentvolumeclaim="a"} 100',
      'kubelet_volume_stats_capacity_bytes{namespace="ns",persistentvolumeclaim="b"} 200',
    ]);
    assert.deepEqual(samples(text, 'kubelet_volume_stats_inodes_used'), [
      'kubelet_volume_stats_inodes_used{namespace="ns",persistentvolumeclaim="a"} 5',
      'kubelet_volume_stats_inodes_used{namespace="ns",persistentvolumeclaim="b"} 5',
    ]);
    assert.match(
      text,
      /# HELP kubelet_volume_stats_available_bytes \[ALPHA\] Number of available bytes in the volume/,
    );
    m.setVolumeStatsProvider(() => Promise.resolve([stat('b', 300)]));
    assert.deepEqual(
      samples(await m.registry.metrics(), 'kubelet_volume_stats_capacity_bytes'),
      ['kubelet_volume_stats_capacity_bytes{namespace="ns",persistentvolumeclaim="b"} 300'],
      'a claim gone from the stats is gone from the metrics',
    );
  });

  it('computes running pods and containers at scrape time from the runtime pods provider', async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    let pods: RuntimePodSummary[] | undefined;
    m.setRuntimePodsProvider(() => pods);
    let text = await m.registry.metrics();
    assert.deepEqual(
      samples(text, 'kubelet_running_pods'),
      ['kubelet_running_pods 0'],
      'before the first relist',
    );
    pods = [runtimePod('a', true, ['running', 'exited']), runtimePod('b', false, ['exited'])];
    text = await m.registry.metrics();
    assert.deepEqual(samples(text, 'kubelet_running_pods'), ['kubelet_running_pods 1']);
    assert.deepEqual(samples(text, 'kubelet_running_containers').sort(), [
      'kubelet_running_containers{container_state="created"} 0',
      'kubelet_running_containers{container_state="exited"} 2',
      'kubelet_running_containers{container_state="running"} 1',
      'kubelet_running_containers{container_state="unknown"} 0',
    ]);
    pods = [];
    text = await m.registry.metrics();
    assert.deepEqual(samples(text, 'kubelet_running_pods'), ['kubelet_running_pods 0']);
  });

  it('records pod worker, PLEG and pod start timings with upstream names and buckets', async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    m.podWorkers.workDone('create', 0.3);
    m.podWorkers.workDone('sync', 0.02);
    m.podWorkers.workerStarted(0.001);
    m.pleg.relisted(0.004, undefined);
    m.pleg.relisted(0.006, 1.01);
    m.observePodStartDuration(2);
    const text = await m.registry.metrics();
    assert.ok(text.includes('kubelet_pod_worker_duration_seconds_count{operation_type="create"} 1'));
    assert.ok(
      text.includes('kubelet_pod_worker_duration_seconds_bucket{le="0.5",operation_type="create"} 1'),
    );
    assert.ok(
      text.includes('kubelet_pod_worker_duration_seconds_bucket{le="0.25",operation_type="create"} 0'),
    );
    assert.ok(text.includes('kubelet_pod_worker_start_duration_seconds_count 1'));
    assert.ok(text.includes('kubelet_pleg_relist_duration_seconds_count 2'));
    assert.ok(text.includes('kubelet_pleg_relist_interval_seconds_count 1'));
    assert.ok(text.includes('kubelet_pod_start_duration_seconds_sum 2'));
    const le = [...text.matchAll(/kubelet_pleg_relist_duration_seconds_bucket\{le="([^"]+)"\}/g)].map(
      (x) => x[1],
    );
    assert.deepEqual(le, [
      '0.005',
      '0.01',
      '0.025',
      '0.05',
      '0.1',
      '0.25',
      '0.5',
      '1',
      '2.5',
      '5',
      '10',
      '+Inf',
    ]);
    assert.match(text, /# HELP kubelet_pleg_relist_duration_seconds \[ALPHA\] /);
  });

  it('counts container starts by type and failures by code, but not crash-loop back-off', async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    const pod: Pod = buildPod('p', {
      namespace: 'ns',
      uid: 'u',
      initContainers: ['init'],
      containers: ['a', 'b', 'c'],
    });
    m.recordContainerStarts(pod, {
      started: ['init', 'a'],
      startFailures: new Map([
        ['b', { reason: 'ErrImagePull', message: 'x' }],
        ['c', { reason: 'CrashLoopBackOff', message: 'y' }],
      ]),
    });
    const text = await m.registry.metrics();
    assert.deepEqual(samples(text, 'kubelet_started_containers_total').sort(), [
      'kubelet_started_containers_total{container_type="container"} 2',
      'kubelet_started_containers_total{container_type="init_container"} 1',
    ]);
    assert.deepEqual(samples(text, 'kubelet_started_containers_errors_total'), [
      'kubelet_started_containers_errors_total{container_type="container",code="ErrImagePull"} 1',
    ]);
  });

  it('labels API client requests by host and by templated URL', async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    m.restClient.requestDone({
      verb: 'PATCH',
      url: new URL('https://10.0.0.1:6443/api/v1/namespaces/default/pods/web-1/status'),
      status: 200,
      durationSeconds: 0.012,
    });
    m.restClient.requestDone({
      verb: 'GET',
      url: new URL('https://10.0.0.1:6443/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&watch=true'),
      status: undefined,
      durationSeconds: 0.5,
    });
    const text = await m.registry.metrics();
    assert.deepEqual(samples(text, 'rest_client_requests_total').sort(), [
      'rest_client_requests_total{code="200",method="PATCH",host="10.0.0.1:6443"} 1',
      'rest_client_requests_total{code="<error>",method="GET",host="10.0.0.1:6443"} 1',
    ]);
    assert.ok(
      text.includes(
        'rest_client_request_duration_seconds_count{verb="PATCH",url="https://10.0.0.1:6443/api/v1/namespaces/%7Bnamespace%7D/pods/%7Bname%7D/status"} 1',
      ),
      text,
    );
    assert.ok(
      text.includes('url="https://10.0.0.1:6443/api/v1/pods?fieldSelector=%7Bvalue%7D&watch=%7Bvalue%7D"'),
    );
  });

  it("serves probe counts from a registry of their own and drops a stopped worker's series", async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    const l = { probeType: 'Readiness', container: 'c', pod: 'p', namespace: 'ns', podUID: 'u' } as const;
    m.prober.probed(l, 'successful');
    m.prober.probed(l, 'successful');
    m.prober.probed(l, 'failed');
    let probes = await metricsText(m.probeRegistry);
    assert.match(probes.contentType, /^text\/plain; version=0\.0\.4/);
    assert.deepEqual(samples(probes.body, 'prober_probe_total'), [
      'prober_probe_total{probe_type="Readiness",result="successful",container="c",pod="p",namespace="ns",pod_uid="u"} 2',
      'prober_probe_total{probe_type="Readiness",result="failed",container="c",pod="p",namespace="ns",pod_uid="u"} 1',
    ]);
    assert.ok(!(await m.registry.metrics()).includes('prober_probe_total'));
    m.prober.workerStopped(l);
    probes = await metricsText(m.probeRegistry);
    assert.deepEqual(samples(probes.body, 'prober_probe_total'), []);
  });

  it('gives the PLEG last-seen time in whole Unix seconds once it was active (0 before), and a discard counter at 0', async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    let text = await m.registry.metrics();
    // 0 until then, as upstream's gauge before its first health check
    assert.deepEqual(samples(text, 'kubelet_pleg_last_seen_seconds'), ['kubelet_pleg_last_seen_seconds 0']);
    assert.deepEqual(samples(text, 'kubelet_pleg_discard_events'), ['kubelet_pleg_discard_events 0']);
    const before = Math.floor(Date.now() / 1000);
    m.pleg.seenActive?.();
    text = await m.registry.metrics();
    const seen = Number(/^kubelet_pleg_last_seen_seconds (\S+)$/m.exec(text)?.[1]);
    assert.ok(Number.isInteger(seen) && seen >= before && seen <= before + 1, String(seen));
    assert.match(
      text,
      /# HELP kubelet_pleg_last_seen_seconds \[ALPHA\] Timestamp in seconds when PLEG was last seen active\./,
    );
  });

  it('observes the containers per created pod', async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    m.podWorkers.podCreated?.(3);
    const text = await m.registry.metrics();
    assert.ok(text.includes('kubelet_containers_per_pod_count_bucket{le="2.5"} 0'));
    assert.ok(text.includes('kubelet_containers_per_pod_count_bucket{le="5"} 1'));
    assert.ok(text.includes('kubelet_containers_per_pod_count_sum 3'));
  });

  it('labels kubernetes_build_info with the version info when given, and leaves it out otherwise', async () => {
    const info = {
      major: '1',
      minor: '20',
      gitVersion: 'v1.20.2-tskubelet.0.1.0',
      gitCommit: '',
      gitTreeState: '',
      buildDate: '',
      goVersion: 'node24.0.0',
      compiler: 'tskubelet',
      platform: 'linux/amd64',
    };
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false, buildInfo: info });
    assert.deepEqual(samples(await m.registry.metrics(), 'kubernetes_build_info'), [
      'kubernetes_build_info{major="1",minor="20",git_version="v1.20.2-tskubelet.0.1.0",git_commit="",git_tree_state="",build_date="",go_version="node24.0.0",compiler="tskubelet",platform="linux/amd64"} 1',
    ]);
    const without = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    assert.doesNotMatch(await without.registry.metrics(), /kubernetes_build_info/);
  });

  it("serves each container's log bytes from the provider at scrape time, and nothing without stats", async () => {
    const m = createKubeletMetrics({ nodeName: 'n1', processMetrics: false });
    assert.deepEqual(samples(await m.registry.metrics(), 'kubelet_container_log_filesystem_used_bytes'), []);
    m.setContainerLogStatsProvider(() =>
      Promise.resolve([{ uid: 'u1', namespace: 'ns', pod: 'p', container: 'c', usedBytes: 4096 }]),
    );
    assert.deepEqual(samples(await m.registry.metrics(), 'kubelet_container_log_filesystem_used_bytes'), [
      'kubelet_container_log_filesystem_used_bytes{uid="u1",namespace="ns",pod="p",container="c"} 4096',
    ]);
  });

  it('adds the Node.js process metrics when asked (the default)', async () => {
    const m = createKubeletMetrics({ nodeName: 'n1' });
    const text = await m.registry.metrics();
    assert.match(text, /^process_cpu_seconds_total \d/m);
    assert.match(text, /^process_resident_memory_bytes \d/m);
    assert.match(text, /^process_start_time_seconds \d/m);
  });
});
