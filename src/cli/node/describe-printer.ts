/**
 * `describe pod` in kubectl's layout (upstream kubectl describe's describePod): labelled lines,
 * nested two spaces per level, aligned by a tabwriter (minWidth 0, padding 2) across the output.
 * Times are RFC 1123 with a numeric zone, in UTC. Events come from the kubelet's recent-event ring
 * (local socket only, server/pod-events.ts), aggregated as the API server's event correlator would
 * (same type, reason and message: one row, `AGE (xN over FIRST)`), printed as kubectl's
 * DescribeEvents; over HTTPS the kubelet serves none and the last section says so. Every value is escaped for the terminal before alignment, as
 * kubectl's prefixWriter does (terminal-text.ts).
 */
import type {
  Container,
  ContainerState,
  ContainerStatus,
  Pod,
  Probe,
  Toleration,
  Volume,
} from '../../api/types.ts';
import { humanDuration } from './pod-row.ts';
import { DESCRIBE_TABS, tabwrite } from './tabwriter.ts';
import { escapeTerminal } from './terminal-text.ts';

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Go's time.RFC1123Z in UTC: `Tue, 24 Nov 2026 20:00:00 +0000`; the input as is when unparsable. */
export function rfc1123z(timestamp: string | undefined): string {
  if (!timestamp) return '<unknown>';
  const d = new Date(timestamp);
  if (Number.isNaN(d.getTime())) return timestamp;
  const p = (n: number) => String(n).padStart(2, '0');
  return (
    `${DAYS[d.getUTCDay()]}, ${p(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ` +
    `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`
  );
}

class PrefixWriter {
  readonly lines: string[] = [];
  write(level: number, label: string, value?: string | number): void {
    const indent = '  '.repeat(level);
    this.lines.push(value === undefined ? `${indent}${label}` : `${indent}${label}:\t${value}`);
  }
  /** A label with a multi-line value: the first on the label's line, the rest in the value column. */
  multi(level: number, label: string, values: string[]): void {
    if (values.length === 0) {
      this.write(level, label, '<none>');
      return;
    }
    this.write(level, label, values[0]);
    for (const v of values.slice(1)) this.lines.push(`${'  '.repeat(level)}\t${v}`);
  }
}

function sortedPairs(m: Record<string, string> | undefined, sep: string): string[] {
  return Object.entries(m ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}${sep}${v}`);
}

function probeText(p: Probe): string {
  let what = 'unknown';
  if (p.exec) what = `exec [${(p.exec.command ?? []).join(' ')}]`;
  else if (p.httpGet) {
    const scheme = (p.httpGet.scheme ?? 'HTTP').toLowerCase();
    what = `http-get ${scheme}://${p.httpGet.host ?? ''}:${p.httpGet.port}${p.httpGet.path ?? ''}`;
  } else if (p.tcpSocket) what = `tcp-socket ${p.tcpSocket.host ?? ''}:${p.tcpSocket.port}`;
  else if (p.grpc) what = `grpc <pod>:${p.grpc.port} ${p.grpc.service ?? ''}`;
  return (
    `${what} delay=${p.initialDelaySeconds ?? 0}s timeout=${p.timeoutSeconds ?? 1}s ` +
    `period=${p.periodSeconds ?? 10}s #success=${p.successThreshold ?? 1} #failure=${p.failureThreshold ?? 3}`
  );
}

function describeState(w: PrefixWriter, label: string, s: ContainerState | undefined): void {
  if (s?.running) {
    w.write(2, label, 'Running');
    w.write(3, 'Started', rfc1123z(s.running.startedAt));
  } else if (s?.terminated) {
    const t = s.terminated;
    w.write(2, label, 'Terminated');
    if (t.reason) w.write(3, 'Reason', t.reason);
    if (t.message) w.write(3, 'Message', t.message.trim());
    w.write(3, 'Exit Code', t.exitCode);
    if (t.signal) w.write(3, 'Signal', t.signal);
    w.write(3, 'Started', rfc1123z(t.startedAt));
    w.write(3, 'Finished', rfc1123z(t.finishedAt));
  } else {
    w.write(2, label, 'Waiting');
    if (s?.waiting?.reason) w.write(3, 'Reason', s.waiting.reason);
    if (s?.waiting?.message) w.write(3, 'Message', s.waiting.message);
  }
}

function describeContainer(w: PrefixWriter, c: Container, st: ContainerStatus | undefined): void {
  w.write(1, `${c.name}:`);
  if (st?.containerID) w.write(2, 'Container ID', st.containerID);
  w.write(2, 'Image', c.image ?? '');
  w.write(2, 'Image ID', st?.imageID ?? '');
  const ports = c.ports ?? [];
  w.write(
    2,
    'Port',
    ports.length ? ports.map((p) => `${p.containerPort}/${p.protocol ?? 'TCP'}`).join(', ') : '<none>',
  );
  w.write(
    2,
    'Host Port',
    ports.length ? ports.map((p) => `${p.hostPort ?? 0}/${p.protocol ?? 'TCP'}`).join(', ') : '<none>',
  );
  if (c.command?.length) {
    w.write(2, 'Command');
    for (const a of c.command) w.write(3, a);
  }
  if (c.args?.length) {
    w.write(2, 'Args');
    for (const a of c.args) w.write(3, a);
  }
  if (st) {
    describeState(w, 'State', st.state);
    if (st.lastState?.terminated) describeState(w, 'Last State', st.lastState);
    w.write(2, 'Ready', st.ready ? 'True' : 'False');
    w.write(2, 'Restart Count', st.restartCount ?? 0);
  }
  for (const [label, m] of [
    ['Limits', c.resources?.limits],
    ['Requests', c.resources?.requests],
  ] as const) {
    const entries = Object.entries(m ?? {});
    if (entries.length === 0) continue;
    w.write(2, `${label}:`);
    for (const [k, v] of entries.sort()) w.write(3, k, v);
  }
  if (c.livenessProbe) w.write(2, 'Liveness', probeText(c.livenessProbe));
  if (c.readinessProbe) w.write(2, 'Readiness', probeText(c.readinessProbe));
  if (c.startupProbe) w.write(2, 'Startup', probeText(c.startupProbe));
  const env = c.env ?? [];
  if (env.length === 0) w.write(2, 'Environment', '<none>');
  else {
    w.write(2, 'Environment:');
    for (const e of env) w.write(3, e.name, e.value ?? (e.valueFrom ? '<set from a reference>' : ''));
  }
  const mounts = c.volumeMounts ?? [];
  if (mounts.length === 0) w.write(2, 'Mounts', '<none>');
  else {
    w.write(2, 'Mounts:');
    for (const m of mounts) w.write(3, `${m.mountPath} from ${m.name} (${m.readOnly ? 'ro' : 'rw'})`);
  }
}

function describeVolume(w: PrefixWriter, v: Volume): void {
  w.write(1, `${v.name}:`);
  const a = v as Volume & {
    configMap?: { name?: string; optional?: boolean };
    secret?: { secretName?: string; optional?: boolean };
    projected?: unknown;
    downwardAPI?: unknown;
  };
  if (v.emptyDir) {
    w.write(2, 'Type', "EmptyDir (a temporary directory that shares a pod's lifetime)");
    w.write(2, 'Medium', v.emptyDir.medium ?? '');
    w.write(2, 'SizeLimit', v.emptyDir.sizeLimit ?? '<unset>');
  } else if (v.hostPath) {
    w.write(2, 'Type', 'HostPath (bare host directory volume)');
    w.write(2, 'Path', v.hostPath.path);
    w.write(2, 'HostPathType', v.hostPath.type ?? '');
  } else if (a.configMap) {
    w.write(2, 'Type', 'ConfigMap (a volume populated by a ConfigMap)');
    w.write(2, 'Name', a.configMap.name ?? '');
    w.write(2, 'Optional', String(a.configMap.optional ?? false));
  } else if (a.secret) {
    w.write(2, 'Type', 'Secret (a volume populated by a Secret)');
    w.write(2, 'SecretName', a.secret.secretName ?? '');
    w.write(2, 'Optional', String(a.secret.optional ?? false));
  } else if (a.projected) {
    w.write(2, 'Type', 'Projected (a volume that contains injected data from multiple sources)');
  } else if (a.downwardAPI) {
    w.write(2, 'Type', 'DownwardAPI (a volume populated by information about the pod)');
  } else {
    w.write(2, 'Type', 'unknown');
  }
}

/** upstream printTolerationsMultilineWithIndent's one line. */
function tolerationText(t: Toleration): string {
  let s = `${t.key ?? ''}${t.value ? `=${t.value}` : ''}${t.effect ? `:${t.effect}` : ''}`;
  if (t.operator === 'Exists' && !t.value) s += t.key || t.effect ? ' op=Exists' : 'op=Exists';
  if (t.tolerationSeconds !== undefined) s += ` for ${t.tolerationSeconds}s`;
  return s;
}

/** The `describe pod` text of `pod`; `now` (ms) for the "Terminating (lasts …)" line. */
export function describePod(pod: Pod, now: number, events?: readonly DescribeEvent[]): string {
  const w = new PrefixWriter();
  const m = pod.metadata;
  const spec = pod.spec ?? { containers: [] };
  const status = pod.status ?? {};
  w.write(0, 'Name', m.name ?? '');
  w.write(0, 'Namespace', m.namespace ?? 'default');
  if (spec.priority !== undefined) w.write(0, 'Priority', spec.priority);
  if (spec.priorityClassName) w.write(0, 'Priority Class Name', spec.priorityClassName);
  if (spec.runtimeClassName) w.write(0, 'Runtime Class Name', spec.runtimeClassName);
  w.write(0, 'Service Account', spec.serviceAccountName ?? spec.serviceAccount ?? '');
  w.write(
    0,
    'Node',
    spec.nodeName ? `${spec.nodeName}${status.hostIP ? `/${status.hostIP}` : ''}` : '<none>',
  );
  if (status.startTime) w.write(0, 'Start Time', rfc1123z(status.startTime));
  w.multi(0, 'Labels', sortedPairs(m.labels, '='));
  w.multi(0, 'Annotations', sortedPairs(m.annotations, ': '));
  if (m.deletionTimestamp) {
    w.write(0, 'Status', `Terminating (lasts ${humanDuration(now - Date.parse(m.deletionTimestamp))})`);
    w.write(0, 'Termination Grace Period', `${m.deletionGracePeriodSeconds ?? 0}s`);
  } else {
    w.write(0, 'Status', status.phase ?? '');
  }
  if (status.reason) w.write(0, 'Reason', status.reason);
  if (status.message) w.write(0, 'Message', status.message);
  w.write(0, 'IP', status.podIP ?? '');
  const ips = status.podIPs ?? [];
  if (ips.length === 0) w.write(0, 'IPs', '<none>');
  else {
    w.write(0, 'IPs:');
    for (const ip of ips) w.write(1, 'IP', ip.ip);
  }
  const byName = (list: ContainerStatus[] | undefined) => new Map((list ?? []).map((s) => [s.name, s]));
  if (spec.initContainers?.length) {
    const st = byName(status.initContainerStatuses);
    w.write(0, 'Init Containers:');
    for (const c of spec.initContainers) describeContainer(w, c, st.get(c.name));
  }
  w.write(0, 'Containers:');
  const st = byName(status.containerStatuses);
  for (const c of spec.containers ?? []) describeContainer(w, c, st.get(c.name));
  if (spec.readinessGates?.length) {
    w.write(0, 'Readiness Gates:');
    w.write(1, 'Type\tStatus');
    for (const g of spec.readinessGates) {
      const c = status.conditions?.find((x) => x.type === g.conditionType);
      w.write(1, `${g.conditionType} \t${c?.status ?? '<none>'} `);
    }
  }
  const conditions = status.conditions ?? [];
  if (conditions.length > 0) {
    w.write(0, 'Conditions:');
    w.write(1, 'Type\tStatus');
    for (const c of conditions) w.write(1, `${c.type} \t${c.status} `);
  }
  const volumes = spec.volumes ?? [];
  if (volumes.length === 0) w.write(0, 'Volumes', '<none>');
  else {
    w.write(0, 'Volumes:');
    for (const v of volumes) describeVolume(w, v);
  }
  if (status.qosClass) w.write(0, 'QoS Class', status.qosClass);
  w.multi(0, 'Node-Selectors', sortedPairs(spec.nodeSelector, '='));
  w.multi(0, 'Tolerations', (spec.tolerations ?? []).map(tolerationText));
  describeEvents(w, events, now, m.name ?? '');
  return tabwrite(escapeTerminal(`${w.lines.join('\n')}\n`), DESCRIBE_TABS);
}

/** An event as the kubelet's ring keeps it (server/pod-events.ts LocalEvent). */
export interface DescribeEvent {
  at: string;
  type: string;
  reason: string;
  message: string;
}

/**
 * kubectl describe.go DescribeEvents: `Events:  <none>`, or a table sorted by last time with AGE
 * `LAST (xCOUNT over FIRST)` for repeated events and FROM the reporting component (`kubelet`).
 */
function describeEvents(
  w: PrefixWriter,
  events: readonly DescribeEvent[] | undefined,
  now: number,
  name: string,
): void {
  if (events === undefined) {
    w.write(0, 'Events', `<not served over HTTPS: use the local socket, or see \`tskubelet why ${name}\`>`);
    return;
  }
  if (events.length === 0) {
    w.write(0, 'Events', '<none>');
    return;
  }
  const groups = new Map<string, { e: DescribeEvent; count: number; first: number; last: number }>();
  for (const e of events) {
    const t = Date.parse(e.at);
    const key = `${e.type}\u0000${e.reason}\u0000${e.message}`;
    const g = groups.get(key);
    if (g) {
      g.count++;
      g.first = Math.min(g.first, t);
      g.last = Math.max(g.last, t);
    } else groups.set(key, { e, count: 1, first: t, last: t });
  }
  const since = (t: number): string => (Number.isNaN(t) ? '<unknown>' : humanDuration(now - t));
  w.write(0, 'Events:');
  w.write(1, 'Type\tReason\tAge\tFrom\tMessage');
  w.write(1, '----\t------\t----\t----\t-------');
  for (const g of [...groups.values()].sort((a, b) => a.last - b.last)) {
    const age = g.count > 1 ? `${since(g.last)} (x${g.count} over ${since(g.first)})` : since(g.first);
    w.write(1, `${g.e.type}\t${g.e.reason}\t${age}\tkubelet\t${g.e.message.trim()}`);
  }
}
