import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pod } from '../api/types.ts';
import type { DNSConfig, NamespaceOption, PodSandboxConfig, PortMapping } from './cri/types.ts';
import { sandboxAnnotations, sandboxLabels } from './labels.ts';

/** Upstream BuildPodLogsDirectory: `<podLogsDir>/<namespace>_<name>_<uid>`. */
export function podLogsDirectory(podLogsDir: string, pod: Pod): string {
  return join(
    podLogsDir,
    `${pod.metadata.namespace ?? ''}_${pod.metadata.name ?? ''}_${pod.metadata.uid ?? ''}`,
  );
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
  try {
    return parseResolvConf(readFileSync(resolvConfPath, 'utf8'));
  } catch {
    // No resolv.conf on the host: the pod gets no DNS servers, as upstream does with resolvConf "".
    return {};
  }
}

/**
 * Upstream getPodDNS without cluster DNS configured: ClusterFirst falls back to the host's
 * resolv.conf (`Default`), `None` uses only spec.dnsConfig, and spec.dnsConfig is merged on top.
 */
export function podDNSConfig(pod: Pod, hostDNS: DNSConfig): DNSConfig {
  const policy = pod.spec.dnsPolicy ?? 'ClusterFirst';
  const base: DNSConfig = policy === 'None' ? {} : { ...hostDNS };
  const extra = pod.spec.dnsConfig;
  if (!extra) return base;
  const podOptions = (extra.options ?? []).map((o) =>
    o.value !== undefined ? `${o.name}:${o.value}` : o.name,
  );
  return {
    servers: [...new Set([...(base.servers ?? []), ...(extra.nameservers ?? [])])],
    searches: [...new Set([...(base.searches ?? []), ...(extra.searches ?? [])])],
    options: dedupeOptions([...(base.options ?? []), ...podOptions]),
  };
}

/** Upstream GeneratePodHostNameAndDomain, truncated to 63 characters as upstream does. */
export function podHostname(pod: Pod): string {
  const name = pod.spec.hostname ?? pod.metadata.name ?? '';
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
}

/** Upstream generatePodSandboxConfig. */
export function generateSandboxConfig(pod: Pod, opts: SandboxConfigOptions): PodSandboxConfig {
  const sc = pod.spec.securityContext ?? {};
  const sysctls: Record<string, string> = {};
  for (const s of sc.sysctls ?? []) sysctls[s.name] = s.value;
  const config: PodSandboxConfig = {
    metadata: {
      name: pod.metadata.name ?? '',
      namespace: pod.metadata.namespace ?? '',
      uid: pod.metadata.uid ?? '',
      attempt: opts.attempt,
    },
    logDirectory: podLogsDirectory(opts.podLogsDir, pod),
    dnsConfig: podDNSConfig(pod, opts.hostDNS),
    portMappings: portMappings(pod),
    labels: sandboxLabels(pod),
    annotations: sandboxAnnotations(pod),
    linux: {
      cgroupParent: '',
      sysctls,
      securityContext: {
        namespaceOptions: podNamespaceOptions(pod),
        ...(sc.runAsUser !== undefined ? { runAsUser: { value: sc.runAsUser } } : {}),
        ...(sc.runAsGroup !== undefined ? { runAsGroup: { value: sc.runAsGroup } } : {}),
        supplementalGroups: [
          ...(sc.supplementalGroups ?? []),
          ...(sc.fsGroup !== undefined ? [sc.fsGroup] : []),
        ],
      },
    },
  };
  if (!pod.spec.hostNetwork) config.hostname = podHostname(pod);
  return config;
}
