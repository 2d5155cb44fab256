import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeletPod, Pod } from '../api/types.ts';
import type { DNSConfig, NamespaceOption, PodSandboxConfig, PortMapping } from './cri/types.ts';
import { sandboxAnnotations, sandboxLabels } from './labels.ts';
import {
  DEFAULT_DNS_OPTIONS,
  MAX_DNS_NAMESERVERS,
  MAX_DNS_SEARCH_LIST_CHARS,
  MAX_DNS_SEARCH_PATHS,
  MAX_DNS_SEARCH_PATH_LENGTH,
} from '../config/defaults.ts';
import { sandboxSeccompProfile } from './security-profiles.ts';
import { sysctlToDots } from '../api/sysctl-names.ts';

/** Upstream BuildPodLogsDirectory: `<podLogsDir>/<namespace>_<name>_<uid>`. */
export function podLogsDirectory(podLogsDir: string, pod: KubeletPod): string {
  return join(podLogsDir, `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`);
}

/** Upstream appendOptions: one value per option name, a later one replacing an earlier one. */
function dedupeOptions(options: string[]): string[] {
  const byName = new Map<string, string>();
  for (const o of options) byName.set(o.split(':')[0] ?? o, o);
  return [...byName.values()];
}

/**
 * Parses resolv.conf the way the kubelet does for the `Default` DNS policy: search domains lose a
 * trailing dot and the root domain `.` is dropped; options keep one value per name.
 */
export function parseResolvConf(text: string): DNSConfig {
  const servers: string[] = [];
  let searches: string[] = [];
  const options: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    if (line === '') continue;
    const [key, ...rest] = line.split(/\s+/);
    if (key === 'nameserver' && rest[0]) servers.push(rest[0]);
    else if (key === 'search') searches = rest.map((d) => d.replace(/\.$/, '')).filter((d) => d !== '');
    else if (key === 'options') options.push(...rest);
  }
  return { servers, searches, options: dedupeOptions(options) };
}

export function readHostDNS(resolvConfPath: string): DNSConfig {
  // resolvConf "": no host DNS at all (upstream skips the file).
  if (resolvConfPath === '') return {};
  try {
    return parseResolvConf(readFileSync(resolvConfPath, 'utf8'));
  } catch {
    // No resolv.conf on the host: the pod gets no DNS servers, as upstream does with resolvConf "".
    return {};
  }
}

/** The kubelet's cluster DNS settings (KubeletConfiguration `clusterDNS`, `clusterDomain`). */
export interface ClusterDNS {
  /** Nameservers of ClusterFirst pods; empty: they fall back to the host's, with a warning. */
  readonly servers: readonly string[];
  /** The cluster's DNS domain (e.g. `cluster.local`); '' adds no cluster search domains. */
  readonly domain: string;
}

/** A problem with a pod's DNS worth a Warning event on the pod; the pod still starts. */
export interface DNSWarning {
  reason: 'MissingClusterDNS' | 'DNSConfigForming';
  message: string;
}

/** Upstream getPodDNSType: which base configuration a pod's dnsPolicy selects. */
function podDNSType(pod: Pod): 'cluster' | 'host' | 'none' {
  switch (pod.spec.dnsPolicy ?? 'ClusterFirst') {
    case 'None':
      return 'none';
    case 'Default':
      return 'host';
    case 'ClusterFirst':
      // A host-network pod cannot rely on cluster DNS unless it asks (ClusterFirstWithHostNet).
      return pod.spec.hostNetwork ? 'host' : 'cluster';
    default:
      // ClusterFirstWithHostNet; anything else is refused by validation, and upstream treats it so too.
      return 'cluster';
  }
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

/** Upstream formDNSSearchFitsLimits: count, per-domain length, then total line length. */
function fitSearches(searches: string[], warnings: DNSWarning[]): string[] {
  let out = searches.slice(0, MAX_DNS_SEARCH_PATHS);
  let exceeded = out.length < searches.length;
  const short = out.filter((d) => d.length <= MAX_DNS_SEARCH_PATH_LENGTH);
  exceeded ||= short.length < out.length;
  out = short;
  while (out.length > 0 && out.join(' ').length > MAX_DNS_SEARCH_LIST_CHARS) {
    out = out.slice(0, -1);
    exceeded = true;
  }
  if (exceeded) {
    warnings.push({
      reason: 'DNSConfigForming',
      message:
        `search domains exceed the limits (${MAX_DNS_SEARCH_PATHS} domains, ${MAX_DNS_SEARCH_PATH_LENGTH} ` +
        `characters each, ${MAX_DNS_SEARCH_LIST_CHARS} in all); some were left out, the pod uses: ${out.join(' ')}`,
    });
  }
  return out;
}

/** Upstream formDNSNameserversFitsLimits. */
function fitServers(servers: string[], warnings: DNSWarning[]): string[] {
  if (servers.length <= MAX_DNS_NAMESERVERS) return servers;
  const out = servers.slice(0, MAX_DNS_NAMESERVERS);
  warnings.push({
    reason: 'DNSConfigForming',
    message: `more than ${MAX_DNS_NAMESERVERS} nameservers; some were left out, the pod uses: ${out.join(' ')}`,
  });
  return out;
}

/**
 * Upstream GetPodDNS. The base is chosen by dnsPolicy: `ClusterFirst` (not host-network) and
 * `ClusterFirstWithHostNet` get the cluster's nameservers, the search domains
 * `<ns>.svc.<domain> svc.<domain> <domain>` before the host's, and `ndots:5`; without cluster
 * nameservers they fall back to `Default` with a MissingClusterDNS warning. `Default` (and a
 * host-network ClusterFirst pod) get the host's resolv.conf, `None` starts empty. spec.dnsConfig
 * is merged on top (duplicates dropped, a pod option replaces a base option of the same name),
 * then the resolver limits are applied (DNSConfigForming warnings).
 */
export function podDNS(
  pod: KubeletPod,
  hostDNS: DNSConfig,
  cluster?: ClusterDNS,
): { config: DNSConfig; warnings: DNSWarning[] } {
  const warnings: DNSWarning[] = [];
  let servers = [...(hostDNS.servers ?? [])];
  let searches = [...(hostDNS.searches ?? [])];
  let options = [...(hostDNS.options ?? [])];
  const type = podDNSType(pod);
  if (type === 'none') {
    servers = [];
    searches = [];
    options = [];
  } else if (type === 'cluster' && cluster && cluster.servers.length > 0) {
    servers = [...cluster.servers];
    if (cluster.domain !== '') {
      const d = cluster.domain;
      searches = unique([`${pod.metadata.namespace}.svc.${d}`, `svc.${d}`, d, ...searches]);
    }
    options = [...DEFAULT_DNS_OPTIONS];
  } else if (type === 'cluster') {
    warnings.push({
      reason: 'MissingClusterDNS',
      message:
        `pod "${pod.metadata.namespace}/${pod.metadata.name}" asks for cluster DNS ` +
        `(dnsPolicy ${pod.spec.dnsPolicy ?? 'ClusterFirst'}) but the kubelet has no clusterDNS configured; ` +
        'it gets the node\'s resolv.conf (dnsPolicy "Default") instead',
    });
  }
  const extra = pod.spec.dnsConfig;
  if (extra) {
    // Upstream mergeDNSOptions: an option without a value (or with an empty one) is its name alone.
    const podOptions = (extra.options ?? []).map((o) => (o.value ? `${o.name}:${o.value}` : o.name));
    servers = unique([...servers, ...(extra.nameservers ?? [])]);
    searches = unique([...searches, ...(extra.searches ?? [])]);
    options = dedupeOptions([...options, ...podOptions]);
  }
  return {
    config: { servers: fitServers(servers, warnings), searches: fitSearches(searches, warnings), options },
    warnings,
  };
}

/** Upstream GeneratePodHostNameAndDomain, truncated to 63 characters as upstream does. */
export function podHostname(pod: KubeletPod): string {
  const name = pod.spec.hostname ?? pod.metadata.name;
  if (name.length <= 63) return name;
  return name.slice(0, 63).replace(/[-.]+$/, '');
}

export function podNamespaceOptions(pod: Pod): NamespaceOption {
  const pid = pod.spec.hostPID ? 'NODE' : pod.spec.shareProcessNamespace ? 'POD' : 'CONTAINER';
  return {
    network: pod.spec.hostNetwork ? 'NODE' : 'POD',
    pid,
    ipc: pod.spec.hostIPC ? 'NODE' : 'POD',
  };
}

function portMappings(pod: Pod): PortMapping[] {
  const out: PortMapping[] = [];
  for (const c of pod.spec.containers) {
    for (const p of c.ports ?? []) {
      out.push({
        protocol: p.protocol ?? 'TCP',
        containerPort: p.containerPort,
        hostPort: p.hostPort ?? 0,
        hostIp: p.hostIP ?? '',
      });
    }
  }
  return out;
}

export interface SandboxConfigOptions {
  podLogsDir: string;
  hostDNS: DNSConfig;
  attempt: number;
  /** The pod's cgroup (e.g. `/kubepods/burstable/pod<uid>`); '' or absent: the runtime's default. */
  cgroupParent?: string;
  /** Cluster DNS for ClusterFirst pods; absent: they fall back to `hostDNS`. */
  clusterDNS?: ClusterDNS;
  /** Receives the pod's DNS warnings (MissingClusterDNS, DNSConfigForming); absent: dropped. */
  onDNSWarning?: (warning: DNSWarning) => void;
}

function sandboxDNS(pod: KubeletPod, opts: SandboxConfigOptions): DNSConfig {
  const { config, warnings } = podDNS(pod, opts.hostDNS, opts.clusterDNS);
  for (const w of warnings) opts.onDNSWarning?.(w);
  return config;
}

/** Upstream generatePodSandboxConfig. */
export function generateSandboxConfig(pod: KubeletPod, opts: SandboxConfigOptions): PodSandboxConfig {
  const sc = pod.spec.securityContext ?? {};
  const sysctls: Record<string, string> = {};
  // Upstream converts slash-separated names first (runc only knows the dotted form).
  for (const s of sc.sysctls ?? []) sysctls[sysctlToDots(s.name)] = s.value;
  const config: PodSandboxConfig = {
    metadata: {
      name: pod.metadata.name,
      namespace: pod.metadata.namespace,
      uid: pod.metadata.uid,
      attempt: opts.attempt,
    },
    logDirectory: podLogsDirectory(opts.podLogsDir, pod),
    dnsConfig: sandboxDNS(pod, opts),
    portMappings: portMappings(pod),
    labels: sandboxLabels(pod),
    annotations: sandboxAnnotations(pod),
    linux: {
      cgroupParent: opts.cgroupParent ?? '',
      sysctls,
      securityContext: {
        namespaceOptions: podNamespaceOptions(pod),
        ...(sc.runAsUser !== undefined ? { runAsUser: { value: sc.runAsUser } } : {}),
        ...(sc.runAsGroup !== undefined ? { runAsGroup: { value: sc.runAsGroup } } : {}),
        supplementalGroups: [
          ...(sc.supplementalGroups ?? []),
          ...(sc.fsGroup !== undefined ? [sc.fsGroup] : []),
        ],
        // Upstream HasPrivilegedContainer: runtimes refuse a privileged container in a sandbox
        // that was not created privileged.
        privileged: [...(pod.spec.initContainers ?? []), ...pod.spec.containers].some(
          (c) => c.securityContext?.privileged === true,
        ),
        seccomp: sandboxSeccompProfile(),
      },
    },
  };
  if (!pod.spec.hostNetwork) config.hostname = podHostname(pod);
  return config;
}
