/**
 * Everything a container needs before CreateContainer (upstream generateContainerConfig's callers and
 * makeMounts): the runAsNonRoot check against the image's user, the volume mounts, the
 * termination-message file, the kubelet-managed /etc/hosts, the environment, the log directory, and
 * from them the CRI container config. It creates files on the host, never anything in the runtime.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { KUBELET_DIR_MODE } from '../../util/private-dir.ts';
import type { Container, KubeletPod } from '../../api/types.ts';
import type { Logger } from '../../util/logger.ts';
import { describeError } from '../../util/errors.ts';
import { DEFAULT_TERMINATION_MESSAGE_PATH } from '../../config/defaults.ts';
import type { ContainerConfig, Device, KeyValue, Mount, RuntimeService } from '../cri/index.ts';
import {
  generateContainerConfig,
  requiresNonRoot,
  verifyRunAsNonRoot,
  type ImageUser,
} from './container-config.ts';
import { ensureEtcHostsMount, wantsEtcHosts } from './etc-hosts.ts';
import { expandSubPathExpr } from '../env/index.ts';
import { podHostname, podLogsDirectory, type ClusterDNS } from './sandbox-config.ts';
import type { SeccompOptions } from './security-profiles.ts';
import { createTerminationMessageMount, podContainerDir } from './termination-message.ts';

/** What container setup needs; the runtime manager passes its own dependencies (a superset). */
export interface ContainerSetupDeps {
  runtime: RuntimeService;
  /** The pod logs root (podLogsDir); each container's log directory is made under it. */
  podLogsDir: string;
  /**
   * clusterDNS/clusterDomain: the domain goes into the managed /etc/hosts (and, through the runtime
   * manager, the sandbox's DNS for ClusterFirst pods; absent: they get the host's, MissingClusterDNS).
   */
  clusterDNS?: ClusterDNS;
  /** CRI mounts for a container's volumeMounts (the volume manager). */
  mountsFor: (pod: KubeletPod, container: Container) => Promise<Mount[]>;
  /**
   * CRI devices for a container's volumeDevices (block-mode PVCs; upstream makeBlockVolumes).
   * Absent: none (a container with volumeDevices then runs without them).
   */
  devicesFor?: (pod: KubeletPod, container: Container) => Promise<Device[]>;
  /**
   * The pod's extra supplemental groups from its PVs' `pv.beta.kubernetes.io/gid` (the volume
   * manager; upstream GetExtraSupplementalGroupsForPod). Absent: none.
   */
  extraSupplementalGroups?: (pod: KubeletPod) => number[];
  /** The container environment (env.ts makeEnvironment); absent: literal values only. */
  makeEnv?: (
    pod: KubeletPod,
    container: Container,
    podIPs: string[],
    signal?: AbortSignal,
  ) => Promise<KeyValue[]>;
  /** The image's configured user (CRI ImageStatus uid/username), for the runAsNonRoot check. */
  imageUser?: (imageRef: string, signal?: AbortSignal) => Promise<ImageUser | undefined>;
  /**
   * The kubelet root dir: termination-message files live under `<rootDir>/pods/<uid>/containers/`,
   * the managed /etc/hosts under `<rootDir>/pods/<uid>/`. Absent: containers get neither (and their
   * terminated state no message from a file); the runtime manager warns once.
   */
  rootDir?: string;
  /** Seccomp profile root and `seccompDefault`; absent: `<DEFAULT_ROOT_DIR>/seccomp`, Unconfined. */
  seccomp?: SeccompOptions;
  /** cgroup v2 and not singleProcessOOMKill: containers get memory.oom.group=1. */
  groupOomKill?: boolean;
  /** The page sizes the node supports: each container gets a hugetlb limit per size (0 unless requested). */
  hugePageSizes?: readonly string[];
}

export interface ContainerSetupRequest {
  pod: KubeletPod;
  container: Container;
  /** The sandbox's IPs (empty for a host-network pod): the managed /etc/hosts and status.podIP(s). */
  podIPs: string[];
  imageRef: string;
  restartCount: number;
  /** Carries the pod and container identity. */
  log: Logger;
  signal?: AbortSignal;
}

/**
 * Prepares the host side of one container and returns its CRI config. Rejects when the container
 * must not be created (runAsNonRoot against a root image, a bad seccomp profile, an environment
 * that cannot be resolved, …): that is the container's CreateContainerConfigError.
 */
export type ContainerSetup = (req: ContainerSetupRequest) => Promise<ContainerConfig>;

export function createContainerSetup(deps: ContainerSetupDeps): ContainerSetup {
  /** The kubelet-managed /etc/hosts (needs the root dir; a pod-network pod needs its IP). */
  async function etcHostsMount(
    pod: KubeletPod,
    container: Container,
    podIPs: string[],
  ): Promise<Mount | undefined> {
    if (deps.rootDir === undefined || !wantsEtcHosts(container)) return undefined;
    return ensureEtcHostsMount({
      pod,
      podDir: join(deps.rootDir, 'pods', pod.metadata.uid),
      podIPs,
      hostname: podHostname(pod),
      clusterDomain: deps.clusterDNS?.domain ?? '',
    });
  }

  /** Upstream makeMounts' termination-message part; a file that cannot be made is logged and skipped. */
  async function terminationMessageMount(
    pod: KubeletPod,
    container: Container,
    log: Logger,
  ): Promise<Mount | undefined> {
    const path = container.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH;
    if (deps.rootDir === undefined || path === '') return undefined;
    const dir = podContainerDir(deps.rootDir, pod.metadata.uid, container.name);
    try {
      return await createTerminationMessageMount(dir, path);
    } catch (err) {
      log.warn('cannot create the termination-message file; the container runs without one', {
        dir,
        err: describeError(err),
      });
      return undefined;
    }
  }

  return async ({ pod, container, podIPs, imageRef, restartCount, log, signal }) => {
    if (requiresNonRoot(pod, container)) {
      verifyRunAsNonRoot(pod, container, await deps.imageUser?.(imageRef, signal));
    }
    let envs: KeyValue[] | undefined;
    // Every container: service-link variables need the full environment even without valueFrom.
    if (deps.makeEnv) envs = await deps.makeEnv(pod, container, podIPs, signal);
    const mounts = await deps.mountsFor(pod, withExpandedSubPaths(container, envs));
    const devices = deps.devicesFor ? await deps.devicesFor(pod, container) : [];
    const message = await terminationMessageMount(pod, container, log);
    const hosts = await etcHostsMount(pod, container, podIPs);
    const config = generateContainerConfig(pod, container, {
      restartCount,
      imageRef,
      mounts: [...mounts, ...(message ? [message] : []), ...(hosts ? [hosts] : [])],
      ...(devices.length > 0 ? { devices } : {}),
      ...(envs ? { envs } : {}),
      ...(deps.seccomp ? { seccomp: deps.seccomp } : {}),
      groupOomKill: deps.groupOomKill ?? false,
      ...(deps.hugePageSizes ? { hugePageSizes: deps.hugePageSizes } : {}),
      ...(deps.extraSupplementalGroups ? { extraSupplementalGroups: deps.extraSupplementalGroups(pod) } : {}),
    });
    await mkdir(join(podLogsDirectory(deps.podLogsDir, pod), container.name), {
      recursive: true,
      mode: KUBELET_DIR_MODE,
    });
    return config;
  };
}

/**
 * The container with each subPathExpr expanded into a subPath, from its environment (the computed
 * one, or the literal values when there is none).
 */
function withExpandedSubPaths(container: Container, envs: readonly KeyValue[] | undefined): Container {
  if (!(container.volumeMounts ?? []).some((m) => m.subPathExpr)) return container;
  const env = new Map<string, string>(
    envs
      ? envs.map((e) => [e.key, e.value])
      : (container.env ?? []).flatMap((e) => (e.value !== undefined ? [[e.name, e.value] as const] : [])),
  );
  return {
    ...container,
    volumeMounts: (container.volumeMounts ?? []).map(({ subPathExpr, ...m }) =>
      subPathExpr ? { ...m, subPath: expandSubPathExpr(subPathExpr, env) } : m,
    ),
  };
}
