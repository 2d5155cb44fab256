import { KubeletError } from '../../util/errors.ts';
import { totalmem } from 'node:os';
import type { Container, KubeletPod, Pod } from '../../api/types.ts';
import { milliCPU, parseQuantity } from '../../api/quantity.ts';
import { podQOSClass } from '../../api/qos.ts';
import { hugePageSizeOfResource } from '../../api/hugepages.ts';
import type {
  ContainerConfig,
  Device,
  HugepageLimit,
  KeyValue,
  LinuxContainerResources,
  LinuxContainerSecurityContext,
  Mount,
} from '../cri/index.ts';
import { containerAnnotations, containerLabels } from './labels.ts';
import { expandVars, literalEnvironment } from '../env/index.ts';
import { podNamespaceOptions } from './sandbox-config.ts';
import {
  containerAppArmorProfile,
  containerSeccompProfile,
  seccompProfileRoot,
  type SeccompOptions,
} from './security-profiles.ts';
import {
  CGROUP_MIN_QUOTA_PERIOD_US,
  CGROUP_MIN_SHARES,
  CGROUP_QUOTA_PERIOD_US,
  CGROUP_SHARES_PER_CPU,
  DEFAULT_ROOT_DIR,
  DEFAULT_SECCOMP_DEFAULT,
} from '../../config/defaults.ts';

const DEFAULT_SECCOMP_OPTIONS: SeccompOptions = {
  profileRoot: seccompProfileRoot(DEFAULT_ROOT_DIR),
  defaultToRuntimeDefault: DEFAULT_SECCOMP_DEFAULT,
};

// Upstream securitycontext defaultMaskedPaths / defaultReadonlyPaths (the Default procMount), kept in
// step with moby: /proc/asound moved from read-only to masked in 1.27 (kubernetes#112037),
// /sys/devices/virtual/powercap masked since 1.31 and its patch releases down to 1.28 (#125970).
const DEFAULT_MASKED_PATHS: readonly string[] = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];
const DEFAULT_READONLY_PATHS: readonly string[] = [
  '/proc/bus',
  '/proc/fs',
  '/proc/irq',
  '/proc/sys',
  '/proc/sysrq-trigger',
];

/**
 * Upstream ConvertToRuntimeMaskedPaths / ConvertToRuntimeReadonlyPaths: `Unmasked` means both lists
 * empty, anything else the defaults. Sent for privileged containers too, as upstream does; the
 * runtime drops them for privileged containers. An empty list is meaningful on the wire: CRI
 * runtimes read it as "mask nothing", not as "use your defaults" (containerd#5029).
 */
export function procMountPaths(procMount: string | undefined): { masked: string[]; readonly: string[] } {
  if (procMount === 'Unmasked') return { masked: [], readonly: [] };
  return { masked: [...DEFAULT_MASKED_PATHS], readonly: [...DEFAULT_READONLY_PATHS] };
}

/** Upstream GetContainerOOMScoreAdjust by QoS class. */
export function oomScoreAdj(pod: Pod, container: Container, memoryCapacity: number): number {
  const qos = podQOSClass(pod);
  if (qos === 'Guaranteed') return -997;
  if (qos === 'BestEffort') return 1000;
  const req = container.resources?.requests?.memory;
  const memRequest = req ? parseQuantity(req, `${container.name}.resources.requests.memory`) : 0;
  const adj = 1000 - Math.floor((1000 * memRequest) / memoryCapacity);
  if (adj < 3) return 3; // 1000 + guaranteedOOMScoreAdj (-997): burstable always scores above guaranteed
  if (adj >= 1000) return 999;
  return adj;
}

/**
 * Upstream GetHugepageLimitsFromResources: every page size the node supports, limited to the
 * container's `hugepages-<size>` limit, else 0; a limit of a size the node lacks is dropped.
 */
export function hugepageLimits(container: Container, pageSizes: readonly string[]): HugepageLimit[] {
  const wanted = new Map<string, number>();
  for (const [name, q] of Object.entries(container.resources?.limits ?? {})) {
    const size = hugePageSizeOfResource(name);
    if (size === undefined) continue;
    wanted.set(
      size,
      Math.ceil(parseQuantity(q, `spec.containers[${container.name}].resources.limits.${name}`)),
    );
  }
  return pageSizes.map((pageSize) => ({ pageSize, limit: wanted.get(pageSize) ?? 0 }));
}

/**
 * Upstream generateLinuxContainerConfig resources part (cgroupfs, cpu CFS quota enabled);
 * `hugePageSizes`: the page sizes the node supports (none: no hugetlb limits are sent).
 */
export function containerResources(
  pod: Pod,
  container: Container,
  memoryCapacity: number,
  hugePageSizes: readonly string[] = [],
): LinuxContainerResources {
  const f = (k: string) => `spec.containers[${container.name}].resources.${k}`;
  const req = container.resources?.requests ?? {};
  const lim = container.resources?.limits ?? {};
  const cpuReq = req.cpu !== undefined ? milliCPU(req.cpu, f('requests.cpu')) : 0;
  const cpuLim = lim.cpu !== undefined ? milliCPU(lim.cpu, f('limits.cpu')) : 0;
  const sharesFrom = cpuReq === 0 && cpuLim !== 0 ? cpuLim : cpuReq;
  const cpuShares = Math.max(CGROUP_MIN_SHARES, Math.floor((sharesFrom * CGROUP_SHARES_PER_CPU) / 1000));
  const r: LinuxContainerResources = {
    cpuShares,
    oomScoreAdj: oomScoreAdj(pod, container, memoryCapacity),
  };
  if (cpuLim > 0) {
    r.cpuPeriod = CGROUP_QUOTA_PERIOD_US;
    r.cpuQuota = Math.max(CGROUP_MIN_QUOTA_PERIOD_US, Math.floor((cpuLim * CGROUP_QUOTA_PERIOD_US) / 1000));
  }
  if (lim.memory !== undefined)
    r.memoryLimitInBytes = Math.floor(parseQuantity(lim.memory, f('limits.memory')));
  if (hugePageSizes.length > 0) r.hugepageLimits = hugepageLimits(container, hugePageSizes);
  return r;
}

function securityContext(
  pod: Pod,
  container: Container,
  seccomp: SeccompOptions,
  extraGroups: readonly number[],
): LinuxContainerSecurityContext {
  const psc = pod.spec.securityContext ?? {};
  const sc = container.securityContext ?? {};
  const runAsUser = sc.runAsUser ?? psc.runAsUser;
  const runAsGroup = sc.runAsGroup ?? psc.runAsGroup;
  const privileged = sc.privileged ?? false;
  const out: LinuxContainerSecurityContext = {
    privileged,
    namespaceOptions: podNamespaceOptions(pod),
    readonlyRootfs: sc.readOnlyRootFilesystem ?? false,
    supplementalGroups: [
      ...(psc.supplementalGroups ?? []),
      ...(psc.fsGroup !== undefined ? [psc.fsGroup] : []),
      ...extraGroups,
    ],
    noNewPrivs: sc.allowPrivilegeEscalation === false,
  };
  if (runAsUser !== undefined) out.runAsUser = { value: runAsUser };
  if (runAsGroup !== undefined) out.runAsGroup = { value: runAsGroup };
  if (sc.capabilities) {
    out.capabilities = {
      addCapabilities: sc.capabilities.add ?? [],
      dropCapabilities: sc.capabilities.drop ?? [],
    };
  }
  const paths = procMountPaths(sc.procMount);
  out.maskedPaths = paths.masked;
  out.readonlyPaths = paths.readonly;
  out.seccomp = containerSeccompProfile(pod, container, seccomp);
  const apparmor = containerAppArmorProfile(pod, container);
  if (apparmor) out.apparmor = apparmor;
  return out;
}

/**
 * The environment of a container from literal values only (see `literalEnvironment` in env.ts): the
 * synchronous fallback when the caller did not compute the full environment with `makeEnvironment`.
 * valueFrom and envFrom fail with Unimplemented rather than silently dropping a variable.
 */
export function containerEnv(_pod: Pod, container: Container): KeyValue[] {
  return literalEnvironment(container);
}

export interface ContainerConfigOptions {
  restartCount: number;
  imageRef: string;
  /** Volume mounts, prepared by the volume manager. */
  mounts?: Mount[];
  /** Block-volume devices, prepared by the volume manager (upstream makeBlockVolumes). */
  devices?: Device[];
  memoryCapacity?: number;
  /**
   * The container environment computed by `makeEnvironment` (env.ts: service links, envFrom,
   * valueFrom). Absent: literal values only (`containerEnv`).
   */
  envs?: KeyValue[];
  /**
   * Where Localhost seccomp profiles live and whether an unset profile means RuntimeDefault
   * (`seccompDefault`). Absent: `<DEFAULT_ROOT_DIR>/seccomp`, Unconfined.
   */
  seccomp?: SeccompOptions;
  /**
   * Sets `memory.oom.group=1` in the container's cgroup (CRI `unified`), so an OOM kill ends every
   * process of the container (upstream since 1.28 on cgroup v2, unless singleProcessOOMKill).
   */
  groupOomKill?: boolean;
  /** The page sizes the node supports ("2MB", "1GB"): each gets a hugetlb limit. Absent: none. */
  hugePageSizes?: readonly string[];
  /**
   * Groups added after the pod's supplementalGroups and fsGroup: the `pv.beta.kubernetes.io/gid`
   * of the pod's PVs (upstream GetExtraSupplementalGroupsForPod). Absent: none.
   */
  extraSupplementalGroups?: readonly number[];
}

/** Upstream generateContainerConfig; mounts come prepared from the volume manager. */
export function generateContainerConfig(
  pod: KubeletPod,
  container: Container,
  opts: ContainerConfigOptions,
): ContainerConfig {
  const envs = opts.envs ?? containerEnv(pod, container);
  const envMap = new Map(envs.map((e) => [e.key, e.value]));
  const expand = (s: string) => expandVars(s, (n) => envMap.get(n));
  const config: ContainerConfig = {
    metadata: { name: container.name, attempt: opts.restartCount },
    image: { image: opts.imageRef },
    command: (container.command ?? []).map(expand),
    args: (container.args ?? []).map(expand),
    workingDir: container.workingDir ?? '',
    envs,
    mounts: opts.mounts ?? [],
    ...(opts.devices && opts.devices.length > 0 ? { devices: opts.devices } : {}),
    labels: containerLabels(pod, container),
    annotations: containerAnnotations(pod, container, opts.restartCount),
    logPath: `${container.name}/${opts.restartCount}.log`,
    stdin: container.stdin ?? false,
    stdinOnce: container.stdinOnce ?? false,
    tty: container.tty ?? false,
    linux: {
      resources: {
        ...containerResources(pod, container, opts.memoryCapacity ?? totalmem(), opts.hugePageSizes),
        ...(opts.groupOomKill ? { unified: { 'memory.oom.group': '1' } } : {}),
      },
      securityContext: securityContext(
        pod,
        container,
        opts.seccomp ?? DEFAULT_SECCOMP_OPTIONS,
        opts.extraSupplementalGroups ?? [],
      ),
    },
  };
  return config;
}

/** The user an image runs as by default (CRI Image.uid / Image.username). */
export interface ImageUser {
  uid?: number;
  username: string;
}

export function requiresNonRoot(pod: Pod, container: Container): boolean {
  return (container.securityContext?.runAsNonRoot ?? pod.spec.securityContext?.runAsNonRoot) === true;
}

/**
 * Upstream verifyRunAsNonRoot: with runAsNonRoot, the effective user (runAsUser, else the image's
 * user) must be a known non-zero UID. Violations are CreateContainerConfigError, with upstream's
 * wording.
 */
export function verifyRunAsNonRoot(
  pod: KubeletPod,
  container: Container,
  image: ImageUser | undefined,
): void {
  if (!requiresNonRoot(pod, container)) return;
  const who = `pod: "${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})", container: ${container.name}`;
  const fail = (msg: string) => {
    throw new KubeletError('FailedPrecondition', 'verify runAsNonRoot', `${msg} (${who})`);
  };
  const runAsUser = container.securityContext?.runAsUser ?? pod.spec.securityContext?.runAsUser;
  if (runAsUser !== undefined) {
    if (runAsUser === 0) fail("container's runAsUser breaks non-root policy");
    return;
  }
  if (image?.uid !== undefined) {
    if (image.uid === 0) fail('container has runAsNonRoot and image will run as root');
    return;
  }
  const name = image?.username ?? '';
  if (name === '') fail('container has runAsNonRoot and image will run as root');
  if (!/^\d+$/.test(name.split(':')[0] ?? '')) {
    fail(
      `container has runAsNonRoot and image has non-numeric user (${name}), cannot verify user is non-root`,
    );
  }
  if (Number(name.split(':')[0] ?? '0') === 0) fail('container has runAsNonRoot and image will run as root');
}
