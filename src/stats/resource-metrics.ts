/**
 * `/metrics/resource` (upstream 1.20 collectors/resource_metrics.go: names, labels, sample times)
 * and the subset of cadvisor's `/metrics/cadvisor` families that the summary's numbers can back.
 */
import type { PodEntry } from './pod-stats.ts';
import { renderFamilies, type Family, type Sample } from './prom-text.ts';
import type { ContainerStats, NetworkStats, Summary } from './types.ts';

const alpha = (text: string): string => `[ALPHA] ${text}`;

/** Core-seconds from core-nanoseconds. */
const seconds = (ns: number): number => ns / 1e9;

/**
 * The resource metrics of a CPU-and-memory summary; without one (it failed), only
 * `scrape_error 1`, as upstream.
 */
export function resourceMetrics(s: Summary<number> | undefined): string {
  const fam = (name: string, type: Family['type'], help: string): Family => ({
    name,
    help: alpha(help),
    type,
    samples: [],
  });
  const nodeCpu = fam(
    'node_cpu_usage_seconds_total',
    'counter',
    'Cumulative cpu time consumed by the node in core-seconds',
  );
  const nodeMem = fam('node_memory_working_set_bytes', 'gauge', 'Current working set of the node in bytes');
  const ctrCpu = fam(
    'container_cpu_usage_seconds_total',
    'counter',
    'Cumulative cpu time consumed by the container in core-seconds',
  );
  const ctrMem = fam(
    'container_memory_working_set_bytes',
    'gauge',
    'Current working set of the container in bytes',
  );
  const podCpu = fam(
    'pod_cpu_usage_seconds_total',
    'counter',
    'Cumulative cpu time consumed by the pod in core-seconds',
  );
  const podMem = fam('pod_memory_working_set_bytes', 'gauge', 'Current working set of the pod in bytes');
  const scrapeError = fam(
    'scrape_error',
    'gauge',
    '1 if there was an error while getting container metrics, 0 otherwise',
  );
  scrapeError.samples.push({ value: s ? 0 : 1 });
  if (s) {
    const { cpu, memory } = s.node;
    if (cpu?.usageCoreNanoSeconds !== undefined) {
      nodeCpu.samples.push({ value: seconds(cpu.usageCoreNanoSeconds), timestampMs: cpu.time });
    }
    if (memory?.workingSetBytes !== undefined) {
      nodeMem.samples.push({ value: memory.workingSetBytes, timestampMs: memory.time });
    }
    for (const p of s.pods) {
      const { name: pod, namespace } = p.podRef;
      for (const c of p.containers) {
        const labels = { container: c.name, pod, namespace };
        if (c.cpu?.usageCoreNanoSeconds !== undefined) {
          ctrCpu.samples.push({
            labels,
            value: seconds(c.cpu.usageCoreNanoSeconds),
            timestampMs: c.cpu.time,
          });
        }
        if (c.memory?.workingSetBytes !== undefined) {
          ctrMem.samples.push({ labels, value: c.memory.workingSetBytes, timestampMs: c.memory.time });
        }
      }
      if (p.cpu?.usageCoreNanoSeconds !== undefined) {
        podCpu.samples.push({
          labels: { pod, namespace },
          value: seconds(p.cpu.usageCoreNanoSeconds),
          timestampMs: p.cpu.time,
        });
      }
      if (p.memory?.workingSetBytes !== undefined) {
        podMem.samples.push({
          labels: { pod, namespace },
          value: p.memory.workingSetBytes,
          timestampMs: p.memory.time,
        });
      }
    }
  }
  return renderFamilies([nodeCpu, nodeMem, ctrCpu, ctrMem, podCpu, podMem, scrapeError]);
}

/** What the cadvisor subset needs beyond the summary. */
export interface CadvisorInput {
  summary: Summary<number>;
  entries: PodEntry[];
  /** The block device of a filesystem path (the `device` label), when known. */
  deviceOf(path: string): string | undefined;
}

/** The families served at /metrics/cadvisor (cadvisor has many more; these are the ones we can back). */
export const CADVISOR_FAMILIES = [
  'container_cpu_usage_seconds_total',
  'container_memory_usage_bytes',
  'container_memory_working_set_bytes',
  'container_memory_rss',
  'container_fs_usage_bytes',
  'container_fs_limit_bytes',
  'container_network_receive_bytes_total',
  'container_network_receive_errors_total',
  'container_network_transmit_bytes_total',
  'container_network_transmit_errors_total',
  'container_processes',
  'container_start_time_seconds',
] as const;

type CadvisorName = (typeof CADVISOR_FAMILIES)[number];

/**
 * cadvisor-named metrics for the node's root cgroup (`id="/"`), each pod cgroup (container="") and
 * each running container, labelled as the kubelet labels cadvisor's (container, id, image, name,
 * namespace, pod). `id` is the cgroup name where known, `name` the runtime's container ID.
 */
export function cadvisorMetrics(input: CadvisorInput): string {
  const help: Record<CadvisorName, [Family['type'], string]> = {
    container_cpu_usage_seconds_total: ['counter', 'Cumulative cpu time consumed in seconds.'],
    container_memory_usage_bytes: [
      'gauge',
      'Current memory usage in bytes, including all memory regardless of when it was accessed',
    ],
    container_memory_working_set_bytes: ['gauge', 'Current working set in bytes.'],
    container_memory_rss: ['gauge', 'Size of RSS in bytes.'],
    container_fs_usage_bytes: [
      'gauge',
      'Number of bytes that are consumed by the container on this filesystem.',
    ],
    container_fs_limit_bytes: [
      'gauge',
      'Number of bytes that can be consumed by the container on this filesystem.',
    ],
    container_network_receive_bytes_total: ['counter', 'Cumulative count of bytes received'],
    container_network_receive_errors_total: [
      'counter',
      'Cumulative count of errors encountered while receiving',
    ],
    container_network_transmit_bytes_total: ['counter', 'Cumulative count of bytes transmitted'],
    container_network_transmit_errors_total: [
      'counter',
      'Cumulative count of errors encountered while transmitting',
    ],
    container_processes: ['gauge', 'Number of processes running inside the container.'],
    container_start_time_seconds: ['gauge', 'Start time of the container since unix epoch in seconds.'],
  };
  const fams = new Map<CadvisorName, Family>(
    CADVISOR_FAMILIES.map((n) => [n, { name: n, type: help[n][0], help: help[n][1], samples: [] }]),
  );
  const push = (n: CadvisorName, s: Sample): void => void fams.get(n)?.samples.push(s);

  type Base = Record<'container' | 'id' | 'image' | 'name' | 'namespace' | 'pod', string>;
  const cpuMem = (labels: Base, c: Pick<ContainerStats<number>, 'cpu' | 'memory'>): void => {
    if (c.cpu?.usageCoreNanoSeconds !== undefined) {
      push('container_cpu_usage_seconds_total', {
        labels: { ...labels, cpu: 'total' },
        value: seconds(c.cpu.usageCoreNanoSeconds),
        timestampMs: c.cpu.time,
      });
    }
    const m = c.memory;
    if (!m) return;
    if (m.usageBytes !== undefined)
      push('container_memory_usage_bytes', { labels, value: m.usageBytes, timestampMs: m.time });
    if (m.workingSetBytes !== undefined) {
      push('container_memory_working_set_bytes', { labels, value: m.workingSetBytes, timestampMs: m.time });
    }
    if (m.rssBytes !== undefined)
      push('container_memory_rss', { labels, value: m.rssBytes, timestampMs: m.time });
  };
  const network = (labels: Base, n: NetworkStats<number> | undefined): void => {
    for (const i of n?.interfaces ?? []) {
      const l = { ...labels, interface: i.name };
      const at = n?.time;
      if (i.rxBytes !== undefined)
        push('container_network_receive_bytes_total', { labels: l, value: i.rxBytes, timestampMs: at });
      if (i.rxErrors !== undefined)
        push('container_network_receive_errors_total', { labels: l, value: i.rxErrors, timestampMs: at });
      if (i.txBytes !== undefined)
        push('container_network_transmit_bytes_total', { labels: l, value: i.txBytes, timestampMs: at });
      if (i.txErrors !== undefined)
        push('container_network_transmit_errors_total', { labels: l, value: i.txErrors, timestampMs: at });
    }
  };

  const root: Base = { container: '', id: '/', image: '', name: '', namespace: '', pod: '' };
  cpuMem(root, input.summary.node);
  network(root, input.summary.node.network);

  for (const e of input.entries) {
    const { name: pod, namespace } = e.stats.podRef;
    const podLabels: Base = { container: '', id: e.cgroup ?? '', image: '', name: '', namespace, pod };
    cpuMem(podLabels, e.stats);
    network(podLabels, e.stats.network);
    const tasks = e.stats.process_stats?.process_count;
    if (tasks !== undefined)
      push('container_processes', { labels: podLabels, value: tasks, timestampMs: e.stats.cpu?.time });
    for (const c of e.containers) {
      const labels: Base = {
        container: c.stats.name,
        id: e.cgroup !== undefined ? `${e.cgroup}/${c.cri.id}` : '',
        image: c.cri.image.image,
        name: c.cri.id,
        namespace,
        pod,
      };
      cpuMem(labels, c.stats);
      push('container_start_time_seconds', { labels, value: c.stats.startTime / 1000 });
      const fs = c.stats.rootfs;
      const mount = c.criStats.writableLayer?.fsId?.mountpoint;
      if (fs && mount !== undefined) {
        const l = { ...labels, device: input.deviceOf(mount) ?? mount };
        if (fs.usedBytes !== undefined)
          push('container_fs_usage_bytes', { labels: l, value: fs.usedBytes, timestampMs: fs.time });
        if (fs.capacityBytes !== undefined)
          push('container_fs_limit_bytes', { labels: l, value: fs.capacityBytes, timestampMs: fs.time });
      }
    }
  }
  return renderFamilies([...fams.values()]);
}
