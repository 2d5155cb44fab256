/**
 * What the metric parity tests share (test/integration/metrics-parity.test.ts standalone,
 * metrics-parity-cluster.test.ts joined to the bed's kube-apiserver): the four endpoints scraped on
 * the read-only port, the differences accepted everywhere (each with its reason), and the report —
 * one line per difference, per endpoint, with what the test fails on. The families are read and
 * diffed by test/kit/prom-text.ts.
 * Upstream counterpart: none (test/instrumentation checks metric declarations statically).
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { diffFamilies, parseFamilies, type FamilyDiff, type MetricFamily } from './prom-text.ts';

export const ENDPOINTS = ['/metrics', '/metrics/cadvisor', '/metrics/resource', '/metrics/probes'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];
export type Scrape = Record<Endpoint, Map<string, MetricFamily>>;

/**
 * A difference that stays, with its reason. `family` is a family name or a prefix ending in `*`;
 * `kinds` the differences accepted for it (`missing`: an upstream family tskubelet lacks).
 */
export interface Accepted {
  endpoint: Endpoint;
  family: string;
  kinds: readonly FamilyDiff['kind'][];
  reason: string;
}

export const NOT_APPLICABLE = 'not applicable';
export const GAP = 'gap, not yet emulated';

/** `missing` for each of `families` on `endpoint`, for one reason. */
export function missing(endpoint: Endpoint, families: readonly string[], reason: string): Accepted[] {
  return families.map((family) => ({ endpoint, family, kinds: ['missing'], reason }));
}

/** The differences accepted in both modes: what only a Go binary has, and cadvisor's own families. */
export const COMMON_ACCEPTED: readonly Accepted[] = [
  // ---- not applicable: what only a Go binary linking these libraries has ----
  ...missing('/metrics', ['go_*'], `${NOT_APPLICABLE}: the Go runtime's (tskubelet has nodejs_* instead)`),
  ...missing(
    '/metrics',
    ['apiserver_*'],
    `${NOT_APPLICABLE}: k8s.io/apiserver's audit, envelope-encryption and client-certificate families, ` +
      'registered by the Go kubelet only because it links that library; the kubelet never feeds them',
  ),
  ...missing(
    '/metrics',
    ['get_token_count', 'get_token_fail_count'],
    `${NOT_APPLICABLE}: client-go's cached token source for alternate (oauth2) credentials, which tskubelet's API client has not`,
  ),
  ...missing(
    '/metrics',
    ['rest_client_exec_plugin_*'],
    `${NOT_APPLICABLE}: client-go's exec credential plugins, which tskubelet's kubeconfig loader does not run`,
  ),
  ...missing(
    '/metrics/cadvisor',
    ['cadvisor_version_info'],
    `${NOT_APPLICABLE}: cadvisor's own build and the docker version; tskubelet embeds no cadvisor`,
  ),
  ...missing(
    '/metrics/cadvisor',
    ['machine_nvm_*'],
    `${NOT_APPLICABLE}: Intel Optane (ipmctl) memory, read by a cadvisor built with libipmctl only`,
  ),
  // ---- gaps: upstream 1.20 families tskubelet does not produce yet (issue 29) ----
  ...missing(
    '/metrics/cadvisor',
    ['container_processes'],
    `${GAP}: declared, but tskubelet's stats carry no process count for the bed's containers, so it has no sample`,
  ),
  ...missing(
    '/metrics/cadvisor',
    [
      'container_cpu_load_average_10s',
      'container_cpu_system_seconds_total',
      'container_cpu_user_seconds_total',
      'container_file_descriptors',
      'container_fs_*',
      'container_last_seen',
      'container_memory_cache',
      'container_memory_failcnt',
      'container_memory_failures_total',
      'container_memory_mapped_file',
      'container_memory_max_usage_bytes',
      'container_memory_swap',
      'container_network_receive_packets_dropped_total',
      'container_network_receive_packets_total',
      'container_network_transmit_packets_dropped_total',
      'container_network_transmit_packets_total',
      'container_sockets',
      'container_spec_*',
      'container_tasks_state',
      'container_threads',
      'container_threads_max',
      'container_ulimits_soft',
    ],
    `${GAP}: cadvisor container families beyond the twelve tskubelet computes from cgroup and CRI stats ` +
      '(cpu/memory/fs/network usage and start time); the kubernetes-mixin alerts read none of these',
  ),
];

function acceptedFor(list: readonly Accepted[], endpoint: Endpoint, d: FamilyDiff): Accepted | undefined {
  return list.find(
    (a) =>
      a.endpoint === endpoint &&
      a.kinds.includes(d.kind) &&
      (a.family.endsWith('*') ? d.name.startsWith(a.family.slice(0, -1)) : a.family === d.name),
  );
}

function describeDiff(d: FamilyDiff): string {
  switch (d.kind) {
    case 'missing':
      return `missing ${d.name} (${d.reference.type}{${d.reference.labelNames.join(',')}})`;
    case 'extra':
      return `extra   ${d.name} (${d.compared.type}{${d.compared.labelNames.join(',')}})`;
    default:
      return `${d.kind.padEnd(7)} ${d.name}: upstream "${d.reference}" / tskubelet "${d.compared}"`;
  }
}

export interface DiffReport {
  /** One `## endpoint: …` summary line per endpoint, each followed by its differences. */
  lines: string[];
  /** The summary lines alone (for docs/status.md). */
  summary: string[];
  /** What the test fails on: differences neither fixed nor accepted. */
  unexplained: string[];
}

/**
 * The diff of every endpoint against upstream's scrape. Extra families and help texts are reported,
 * not failed on; an accepted difference no scrape shows any more (fixed, or absent from this run) is
 * said (`not seen`), not failed on.
 */
export function diffReport(up: Scrape, ours: Scrape, accepted: readonly Accepted[]): DiffReport {
  const lines: string[] = [];
  const summary: string[] = [];
  const unexplained: string[] = [];
  const used = new Set<Accepted>();
  for (const endpoint of ENDPOINTS) {
    const diffs = diffFamilies(up[endpoint], ours[endpoint]);
    const shown = (m: Map<string, MetricFamily>) => [...m.values()].filter((f) => f.samples > 0).length;
    const count = (p: (d: FamilyDiff) => boolean) => diffs.filter(p).length;
    const isAccepted = (d: FamilyDiff) => acceptedFor(accepted, endpoint, d) !== undefined;
    const head =
      `## ${endpoint}: upstream ${shown(up[endpoint])} families, tskubelet ${shown(ours[endpoint])}; ` +
      `missing ${count((d) => d.kind === 'missing')} (accepted ${count((d) => d.kind === 'missing' && isAccepted(d))}), ` +
      `extra ${count((d) => d.kind === 'extra')}, ` +
      `labels/buckets/type ${count((d) => ['labels', 'buckets', 'type'].includes(d.kind))} ` +
      `(accepted ${count((d) => ['labels', 'buckets', 'type'].includes(d.kind) && isAccepted(d))}), ` +
      `help ${count((d) => d.kind === 'help')}`;
    lines.push(head);
    summary.push(head);
    for (const d of diffs) {
      const a = acceptedFor(accepted, endpoint, d);
      if (a) used.add(a);
      lines.push(`${describeDiff(d)}${a ? `  [accepted: ${a.reason}]` : ''}`);
      if (!a && d.kind !== 'extra' && d.kind !== 'help') unexplained.push(`${endpoint} ${describeDiff(d)}`);
    }
  }
  for (const a of accepted) {
    if (!used.has(a)) lines.push(`not seen: accepted ${a.endpoint} ${a.family} (${a.reason})`);
  }
  return { lines, summary, unexplained };
}

/**
 * GETs the four endpoints on the plain-HTTP read-only `port` of 127.0.0.1 and parses them. With
 * `raw`, each scrape's text is also written to `<raw.dir>/<raw.prefix><endpoint>.txt` (the values,
 * which the diff leaves out: which plugins, operations and signals each kubelet reported).
 */
export async function scrapeEndpoints(port: number, raw?: { dir: string; prefix: string }): Promise<Scrape> {
  const out = {} as Scrape;
  for (const path of ENDPOINTS) {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(10_000) });
    assert.equal(res.status, 200, `${path}: HTTP ${res.status}`);
    const text = await res.text();
    if (raw) await writeFile(join(raw.dir, `${raw.prefix}${path.slice(1).replace(/\//g, '-')}.txt`), text);
    out[path] = parseFamilies(text);
  }
  return out;
}

/**
 * Families the upstream kubelet 1.20.2 registers on /metrics that a short workload never feeds: a Go
 * vector prints nothing (not even HELP and TYPE) before its first sample, so no scrape of upstream
 * shows them and the diff cannot. From the 1.20.2 sources: pkg/kubelet/metrics/metrics.go
 * (Register), pkg/volume/util/metrics.go, pkg/kubelet/certificate/kubelet.go and
 * cmd/kubelet/app/server.go (registered with certificate rotation only). tskubelet must declare
 * each with upstream's type (prom-client prints HELP and TYPE of an empty family), or say why not
 * (`notApplicable`); `conditional` ones are declared only when their feature is on, as upstream.
 */
export const UPSTREAM_UNFED: readonly {
  name: string;
  type: string;
  notApplicable?: string;
  conditional?: string;
}[] = [
  { name: 'kubelet_evictions', type: 'counter' },
  { name: 'kubelet_eviction_stats_age_seconds', type: 'histogram' },
  { name: 'kubelet_run_podsandbox_errors_total', type: 'counter' },
  { name: 'kubelet_runtime_operations_errors_total', type: 'counter' },
  { name: 'storage_operation_errors_total', type: 'counter' },
  // Fed with cgroupsPerQOS only, which the bed's kubelets run without; declared always, as upstream.
  { name: 'kubelet_cgroup_manager_duration_seconds', type: 'histogram' },
  {
    name: 'kubelet_certificate_manager_client_ttl_seconds',
    type: 'gauge',
    conditional: 'rotateCertificates',
  },
  {
    name: 'kubelet_certificate_manager_client_expiration_renew_errors',
    type: 'counter',
    conditional: 'rotateCertificates',
  },
  {
    name: 'kubelet_certificate_manager_server_ttl_seconds',
    type: 'gauge',
    conditional: 'serverTLSBootstrap',
  },
  {
    name: 'kubelet_certificate_manager_server_rotation_seconds',
    type: 'histogram',
    conditional: 'serverTLSBootstrap',
  },
  { name: 'kubelet_server_expiration_renew_errors', type: 'counter', conditional: 'serverTLSBootstrap' },
  {
    name: 'kubelet_preemptions',
    type: 'counter',
    notApplicable:
      'tskubelet does not preempt running pods to admit a critical one (upstream CriticalPodAdmissionHandler)',
  },
  {
    name: 'kubelet_device_plugin_registration_total',
    type: 'counter',
    notApplicable: 'tskubelet has no device plugin manager',
  },
  {
    name: 'kubelet_device_plugin_alloc_duration_seconds',
    type: 'histogram',
    notApplicable: 'tskubelet has no device plugin manager',
  },
  ...[
    'kubelet_node_config_assigned',
    'kubelet_node_config_active',
    'kubelet_node_config_last_known_good',
  ].map((name) => ({
    name,
    type: 'gauge',
    notApplicable: 'dynamic kubelet config (--dynamic-config-dir), which tskubelet does not implement',
  })),
  {
    name: 'volume_operation_total_seconds',
    type: 'histogram',
    notApplicable:
      "pkg/volume/util registers it in every binary, but only the controllers' attach/detach and provisioning feed it",
  },
];

/**
 * Whether tskubelet's /metrics declares each family of UPSTREAM_UNFED: one line each, and what the
 * test fails on (an applicable, unconditional family not declared, or declared with another type).
 */
export function unfedReport(ours: Scrape): { lines: string[]; unexplained: string[] } {
  const lines: string[] = [
    `## /metrics, families upstream registers that this workload does not feed: ${UPSTREAM_UNFED.length}`,
  ];
  const unexplained: string[] = [];
  for (const u of UPSTREAM_UNFED) {
    const f = ours['/metrics'].get(u.name);
    let line: string;
    if (f && f.type !== u.type) {
      line = `type    ${u.name}: upstream "${u.type}" / tskubelet "${f.type}"`;
      unexplained.push(line);
    } else if (f) {
      line = `declared ${u.name} (${u.type})`;
    } else if (u.notApplicable) {
      line = `absent  ${u.name} (${u.type})  [${NOT_APPLICABLE}: ${u.notApplicable}]`;
    } else if (u.conditional) {
      line = `absent  ${u.name} (${u.type})  [declared with ${u.conditional} only, as upstream]`;
    } else {
      line = `absent  ${u.name} (${u.type})`;
      unexplained.push(line);
    }
    lines.push(line);
  }
  return { lines, unexplained };
}

/**
 * The kubelet series the kubernetes-mixin's kubelet and storage alerts (and the recording rules
 * they read) select, with the labels they join or group on: the alerts that apply to a kubelet
 * (PLEG, pod start latency, certificate expiry and renewal, volume fill, too many pods). Older
 * mixin releases, the ones written for 1.20 clusters, read `kubelet_running_pod_count` for
 * KubeletTooManyPods; newer ones read kube-state-metrics only. From kubernetes-mixin's
 * alerts/kubelet.libsonnet, alerts/storage_alerts.libsonnet and rules/kubelet.libsonnet.
 */
export const MIXIN_SERIES: readonly { alert: string; family: string; labels: readonly string[] }[] = [
  { alert: 'every kubelet alert (node name join)', family: 'kubelet_node_name', labels: ['node'] },
  { alert: 'KubeletTooManyPods (1.20-era mixin)', family: 'kubelet_running_pod_count', labels: [] },
  { alert: 'KubeletTooManyPods (1.20-era mixin)', family: 'kubelet_running_pods', labels: [] },
  { alert: 'KubeletPlegDurationHigh', family: 'kubelet_pleg_relist_duration_seconds', labels: [] },
  { alert: 'KubeletPodStartUpLatencyHigh', family: 'kubelet_pod_worker_duration_seconds', labels: [] },
  ...(['client', 'server'] as const).map((side) => ({
    alert: `Kubelet${side === 'client' ? 'Client' : 'Server'}CertificateExpiration`,
    family: `kubelet_certificate_manager_${side}_ttl_seconds`,
    labels: [],
  })),
  {
    alert: 'KubeletClientCertificateRenewalErrors',
    family: 'kubelet_certificate_manager_client_expiration_renew_errors',
    labels: [],
  },
  {
    alert: 'KubeletServerCertificateRenewalErrors',
    family: 'kubelet_server_expiration_renew_errors',
    labels: [],
  },
  ...['capacity_bytes', 'available_bytes', 'used_bytes'].map((s) => ({
    alert: 'KubePersistentVolumeFillingUp',
    family: `kubelet_volume_stats_${s}`,
    labels: ['namespace', 'persistentvolumeclaim'],
  })),
  ...['inodes', 'inodes_free', 'inodes_used'].map((s) => ({
    alert: 'KubePersistentVolumeInodesFillingUp',
    family: `kubelet_volume_stats_${s}`,
    labels: ['namespace', 'persistentvolumeclaim'],
  })),
];

/**
 * Whether every series a mixin alert selects on the upstream kubelet's /metrics is on tskubelet's
 * too, with the labels the alert uses: one line per series, and what the test fails on. A series
 * upstream shows no sample of (a family it only registers, e.g. the certificate ones without
 * rotation) is reported, not failed on.
 */
export function mixinReport(up: Scrape, ours: Scrape): { lines: string[]; unexplained: string[] } {
  const lines: string[] = [];
  const unexplained: string[] = [];
  for (const s of MIXIN_SERIES) {
    const u = up['/metrics'].get(s.family);
    const o = ours['/metrics'].get(s.family);
    const has = (f: MetricFamily | undefined) =>
      f !== undefined && f.samples > 0 && s.labels.every((l) => f.labelNames.includes(l));
    const state = has(u)
      ? has(o)
        ? 'both'
        : 'MISSING on tskubelet'
      : has(o)
        ? 'tskubelet only'
        : 'neither (no sample upstream either)';
    lines.push(`mixin ${s.alert}: ${s.family}${s.labels.length ? `{${s.labels.join(',')}}` : ''} — ${state}`);
    if (has(u) && !has(o)) unexplained.push(`mixin ${s.alert}: ${s.family} missing on tskubelet`);
  }
  return { lines, unexplained };
}
