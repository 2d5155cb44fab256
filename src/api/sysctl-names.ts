/**
 * Sysctl names and allowlist patterns (upstream pkg/kubelet/sysctl namespace.go and the pod
 * security policy's IsValidSysctlPattern): which kernel namespace isolates a sysctl, and whether a
 * pattern such as `kernel.msg*` is well-formed and namespaced. Shared by the configuration
 * (`allowedUnsafeSysctls` is checked when it is compiled) and the sysctl admission handler.
 */

export type SysctlNamespace = 'ipc' | 'net';

// Upstream namespace.go: sysctls the kernel is known to namespace.
const NAMESPACED: Readonly<Record<string, SysctlNamespace>> = { 'kernel.sem': 'ipc' };
const NAMESPACED_PREFIXES: readonly (readonly [string, SysctlNamespace])[] = [
  ['kernel.shm', 'ipc'],
  ['kernel.msg', 'ipc'],
  ['fs.mqueue.', 'ipc'],
  ['net.', 'net'],
];

/** Upstream NamespacedBy: the namespace that isolates a (dotted) sysctl, undefined if none is known. */
export function sysctlNamespace(name: string): SysctlNamespace | undefined {
  const exact = NAMESPACED[name];
  if (exact) return exact;
  return NAMESPACED_PREFIXES.find(([prefix]) => name.startsWith(prefix))?.[1];
}

/**
 * Upstream convertSysctlVariableToDotsSeparator (sysctl.d(5)): a name whose first separator is a
 * slash uses slashes as separators, and its dots are part of a component, so the two swap
 * (`net/ipv4/conf/eno2.100/rp_filter` → `net.ipv4.conf.eno2/100.rp_filter`). Dotted names are
 * returned unchanged.
 */
export function sysctlToDots(name: string): string {
  const first = name.search(/[./]/);
  if (first === -1 || name[first] === '.') return name;
  return name.replace(/[./]/g, (c) => (c === '.' ? '/' : '.'));
}

// Upstream policy validation IsValidSysctlPattern: dot- or slash-separated segments, the last may
// end in `*`; at most 253 characters (SysctlMaxLength).
const SYSCTL_SEGMENT = '[a-z0-9]([-_a-z0-9]*[a-z0-9])?';
const SYSCTL_PATTERN = new RegExp(`^(${SYSCTL_SEGMENT}[./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`);
const SYSCTL_MAX_LENGTH = 253;

/** A compiled allowlist: exact names and prefixes, each with the namespace that isolates it. */
export interface SysctlAllowlist {
  readonly sysctls: ReadonlyMap<string, SysctlNamespace>;
  readonly prefixes: ReadonlyMap<string, SysctlNamespace>;
}

/**
 * Upstream NewAllowlist: every pattern must be well-formed and known to be namespaced. All
 * problems are collected; any problem makes the list unusable.
 */
export function compileSysctlPatterns(patterns: readonly string[]): {
  list: SysctlAllowlist;
  problems: string[];
} {
  const problems: string[] = [];
  const sysctls = new Map<string, SysctlNamespace>();
  const prefixes = new Map<string, SysctlNamespace>();
  for (const raw of patterns) {
    if (raw.length > SYSCTL_MAX_LENGTH || !SYSCTL_PATTERN.test(raw)) {
      problems.push(
        `sysctl ${JSON.stringify(raw)} must have at most ${SYSCTL_MAX_LENGTH} characters and match regex ${SYSCTL_PATTERN.source.slice(1, -1)}`,
      );
      continue;
    }
    const s = sysctlToDots(raw);
    const isPrefix = s.endsWith('*');
    const name = isPrefix ? s.slice(0, -1) : s;
    const ns = sysctlNamespace(name);
    if (ns === undefined) problems.push(`the sysctl ${JSON.stringify(s)} is not known to be namespaced`);
    else (isPrefix ? prefixes : sysctls).set(name, ns);
  }
  return { list: { sysctls, prefixes }, problems };
}

/** What is wrong with an `allowedUnsafeSysctls` list (empty: nothing), one line per pattern. */
export function sysctlPatternProblems(patterns: readonly string[]): string[] {
  return compileSysctlPatterns(patterns).problems;
}
