/**
 * The kubelet-managed /etc/hosts (upstream makeHostsMount / ensureHostsFile): one file per pod at
 * `<rootDir>/pods/<uid>/etc-hosts`, mounted read-write at /etc/hosts in every container that does
 * not mount something there itself. A pod network pod gets localhost entries, its own IPs with its
 * hostname (and FQDN with a subdomain), then `spec.hostAliases`; a host-network pod gets the node's
 * /etc/hosts followed by its aliases.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KUBELET_DIR_MODE } from '../util/private-dir.ts';
import type { Container, KubeletPod, Pod } from '../api/types.ts';
import type { Mount } from './cri/types.ts';

export const ETC_HOSTS_PATH = '/etc/hosts';
const MANAGED_HEADER = '# Kubernetes-managed hosts file.\n';
const MANAGED_HEADER_HOST_NETWORK = '# Kubernetes-managed hosts file (host network).\n';

function aliasEntries(pod: Pod): string {
  const aliases = pod.spec.hostAliases ?? [];
  if (aliases.length === 0) return '';
  return `\n# Entries added by HostAliases.\n${aliases.map((a) => `${a.ip}\t${(a.hostnames ?? []).join('\t')}\n`).join('')}`;
}

/** The file for a pod on the pod network. `domain` is `<subdomain>.<ns>.svc.<clusterDomain>` or ''. */
export function managedHostsContent(
  pod: Pod,
  ips: readonly string[],
  hostname: string,
  domain: string,
): string {
  let out =
    MANAGED_HEADER +
    '127.0.0.1\tlocalhost\n' +
    '::1\tlocalhost ip6-localhost ip6-loopback\n' +
    'fe00::0\tip6-localnet\n' +
    'fe00::0\tip6-mcastprefix\n' +
    'fe00::1\tip6-allnodes\n' +
    'fe00::2\tip6-allrouters\n';
  for (const ip of ips)
    out += domain ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  return out + aliasEntries(pod);
}

/** The file for a host-network pod: the node's own /etc/hosts, then the pod's aliases. */
export function hostNetworkHostsContent(pod: Pod, nodeHosts: string): string {
  return MANAGED_HEADER_HOST_NETWORK + nodeHosts + aliasEntries(pod);
}

/** Upstream GeneratePodHostNameAndDomain's domain part. */
export function podHostDomain(pod: KubeletPod, clusterDomain: string): string {
  const sub = pod.spec.subdomain;
  if (!sub) return '';
  return `${sub}.${pod.metadata.namespace}.svc.${clusterDomain}`;
}

/** Whether the container gets the managed file (not when it mounts a volume at /etc/hosts). */
export function wantsEtcHosts(container: Container): boolean {
  return !(container.volumeMounts ?? []).some((m) => m.mountPath === ETC_HOSTS_PATH);
}

/**
 * Writes the pod's file (again: the pod IP may have changed with a new sandbox) and returns its
 * mount. `podIPs` empty on the pod network means no file, as upstream (the IP is not known yet).
 */
export async function ensureEtcHostsMount(opts: {
  pod: KubeletPod;
  podDir: string;
  podIPs: readonly string[];
  hostname: string;
  clusterDomain: string;
  nodeHostsFile?: string;
}): Promise<Mount | undefined> {
  const { pod } = opts;
  let content: string;
  if (pod.spec.hostNetwork) {
    content = hostNetworkHostsContent(pod, await readFile(opts.nodeHostsFile ?? ETC_HOSTS_PATH, 'utf8'));
  } else {
    if (opts.podIPs.length === 0) return undefined;
    content = managedHostsContent(pod, opts.podIPs, opts.hostname, podHostDomain(pod, opts.clusterDomain));
  }
  await mkdir(opts.podDir, { recursive: true, mode: KUBELET_DIR_MODE });
  const hostPath = join(opts.podDir, 'etc-hosts');
  // Containers of a pod start concurrently: each writes a whole new file and renames it in place.
  const tmp = `${hostPath}.${randomUUID()}.tmp`;
  await writeFile(tmp, content, { mode: 0o644 });
  await rename(tmp, hostPath);
  return { containerPath: ETC_HOSTS_PATH, hostPath, readonly: false, selinuxRelabel: true };
}
