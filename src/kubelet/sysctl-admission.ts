/**
 * The sysctl allowlist admission handler (upstream pkg/kubelet/sysctl): a pod may set the safe
 * sysctls and those the node admin allowed with `allowedUnsafeSysctls` (names, or prefixes ending in
 * `*`), and only sysctls the kernel namespaces: net.* not with hostNetwork, the IPC ones not with
 * hostIPC. Anything else is refused at admission with reason `SysctlForbidden`.
 */
import { release } from 'node:os';
import type { Pod } from '../api/types.ts';
import { compileSysctlPatterns as compile, sysctlToDots, type SysctlAllowlist } from '../api/sysctl-names.ts';
import { KubeletError } from '../util/errors.ts';
import type { PodAdmitHandler } from './admission.ts';

export {
  sysctlNamespace,
  sysctlPatternProblems,
  type SysctlAllowlist,
  type SysctlNamespace,
} from '../api/sysctl-names.ts';

/** Upstream ForbiddenReason. */
export const SYSCTL_FORBIDDEN_REASON = 'SysctlForbidden';

export interface SafeSysctl {
  name: string;
  /** The Kubernetes release that made it safe. */
  since: string;
  /** The first kernel that namespaces it; on older kernels it is not safe (upstream drops it). */
  minKernel?: string;
}

/**
 * Upstream safeSysctls (safe_sysctls.go) as of 1.37, each with the release that added it. Kernel
 * minimums as upstream's pkg/util/kernel constants.
 */
export const SAFE_SYSCTLS: readonly SafeSysctl[] = [
  { name: 'kernel.shm_rmid_forced', since: '1.4' },
  { name: 'net.ipv4.ip_local_port_range', since: '1.4' },
  { name: 'net.ipv4.tcp_syncookies', since: '1.4' },
  { name: 'net.ipv4.ping_group_range', since: '1.18' },
  { name: 'net.ipv4.ip_unprivileged_port_start', since: '1.22' },
  { name: 'net.ipv4.ip_local_reserved_ports', since: '1.27', minKernel: '3.16' },
  { name: 'net.ipv4.tcp_keepalive_time', since: '1.29', minKernel: '4.5' },
  { name: 'net.ipv4.tcp_fin_timeout', since: '1.29', minKernel: '4.6' },
  { name: 'net.ipv4.tcp_keepalive_intvl', since: '1.29', minKernel: '4.5' },
  { name: 'net.ipv4.tcp_keepalive_probes', since: '1.29', minKernel: '4.5' },
  { name: 'net.ipv4.tcp_rmem', since: '1.32', minKernel: '4.15' },
  { name: 'net.ipv4.tcp_wmem', since: '1.32', minKernel: '4.15' },
  { name: 'net.ipv4.tcp_slow_start_after_idle', since: '1.37', minKernel: '4.15' },
  { name: 'net.ipv4.tcp_notsent_lowat', since: '1.37', minKernel: '4.6' },
];

/** `a.b.c` → [4, 15, 0]; undefined if the release string does not start with a version. */
function parseVersion(v: string): number[] | undefined {
  const m = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(v.trim());
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)];
}

function atLeast(have: number[], want: number[]): boolean {
  for (let i = 0; i < 3; i++) {
    const h = have[i] ?? 0;
    const w = want[i] ?? 0;
    if (h !== w) return h > w;
  }
  return true;
}

/**
 * Upstream SafeSysctlAllowlist: the safe sysctls the running kernel namespaces. `kernelRelease`
 * (`uname -r`) that cannot be parsed keeps only the sysctls without a kernel minimum, as upstream.
 */
export function safeSysctlAllowlist(
  kernelRelease: string,
  onDropped: (name: string, minKernel: string) => void = () => undefined,
): string[] {
  const kernel = parseVersion(kernelRelease);
  const out: string[] = [];
  for (const s of SAFE_SYSCTLS) {
    if (s.minKernel === undefined) {
      out.push(s.name);
      continue;
    }
    const want = parseVersion(s.minKernel);
    if (kernel && want && atLeast(kernel, want)) out.push(s.name);
    else onDropped(s.name, s.minKernel);
  }
  return out;
}

/** Compiles patterns; throws `KubeletError('InvalidArgument')` naming every bad one. */
export function compileSysctlAllowlist(patterns: readonly string[]): SysctlAllowlist {
  const { list, problems } = compile(patterns);
  if (problems.length > 0) {
    throw new KubeletError('InvalidArgument', 'compile sysctl allowlist', problems.join('; '));
  }
  return list;
}

/**
 * Upstream validateSysctl: undefined if the pod may set `name`, else why not (upstream's words).
 * The host-namespace check applies to allowed unsafe sysctls as much as to safe ones.
 */
export function checkSysctl(
  list: SysctlAllowlist,
  rawName: string,
  hostNetwork: boolean,
  hostIPC: boolean,
): string | undefined {
  const name = sysctlToDots(rawName);
  let ns = list.sysctls.get(name);
  if (ns === undefined) {
    for (const [prefix, prefixNs] of list.prefixes) {
      if (name.startsWith(prefix)) {
        ns = prefixNs;
        break;
      }
    }
  }
  if (ns === undefined) return `${JSON.stringify(name)} not allowlisted`;
  if ((ns === 'ipc' && hostIPC) || (ns === 'net' && hostNetwork)) {
    return `${JSON.stringify(name)} not allowed with host ${ns} enabled`;
  }
  return undefined;
}

export interface SysctlAdmitOptions {
  /** KubeletConfiguration `allowedUnsafeSysctls` (`--allowed-unsafe-sysctls`). */
  allowedUnsafeSysctls: readonly string[];
  /** `uname -r` of the node; default `os.release()`. Decides which safe sysctls apply. */
  kernelRelease?: string;
  /** Told about each safe sysctl left out because the kernel is too old to namespace it. */
  onDropped?: (name: string, minKernel: string) => void;
}

/**
 * Upstream's patternAllowlist admit handler over the safe sysctls plus the allowed unsafe ones.
 * Throws `KubeletError('InvalidArgument')` if `allowedUnsafeSysctls` is unusable (upstream refuses
 * to start the same way).
 */
export function sysctlAdmitHandler(opts: SysctlAdmitOptions): PodAdmitHandler {
  const safe = safeSysctlAllowlist(opts.kernelRelease ?? release(), opts.onDropped);
  const list = compileSysctlAllowlist([...safe, ...opts.allowedUnsafeSysctls]);
  return {
    name: 'SysctlAllowlist',
    admit(pod: Pod) {
      const sysctls = pod.spec.securityContext?.sysctls ?? [];
      for (const s of sysctls) {
        const why = checkSysctl(list, s.name, pod.spec.hostNetwork === true, pod.spec.hostIPC === true);
        if (why !== undefined) {
          return { admit: false, reason: SYSCTL_FORBIDDEN_REASON, message: `forbidden sysctl: ${why}` };
        }
      }
      return { admit: true };
    },
  };
}
