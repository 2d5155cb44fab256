/**
 * Which cgroup driver the container runtime uses, from its verbose CRI Status. Upstream 1.20 had
 * this check only for dockershim ("misconfiguration: kubelet cgroup driver: %q is different from
 * docker cgroup driver: %q", pkg/kubelet/dockershim/docker_service.go); 1.28+ asks the runtime
 * through the RuntimeConfig call, which containerd 1.6 does not have. containerd 1.6 reports its CRI
 * plugin configuration under `info.config`: the default runtime's runc option `SystemdCgroup`
 * (runtime type io.containerd.runc.v2), or the plugin-wide `systemdCgroup` of the old
 * io.containerd.runtime.v1.linux.
 */
import type { CallOptions, RuntimeService } from './types.ts';

export type RuntimeCgroupDriver = 'cgroupfs' | 'systemd';

interface ContainerdCriConfig {
  systemdCgroup?: boolean;
  containerd?: {
    defaultRuntimeName?: string;
    runtimes?: Record<string, { runtimeType?: string; options?: { SystemdCgroup?: boolean } | null }>;
  };
}

/** The driver named by a containerd CRI `config` JSON; undefined when it does not say. */
export function cgroupDriverOfContainerdConfig(configJson: string): RuntimeCgroupDriver | undefined {
  let config: ContainerdCriConfig;
  try {
    config = JSON.parse(configJson) as ContainerdCriConfig;
  } catch {
    // Not containerd's shape (another runtime's info): the runtime does not say.
    return undefined;
  }
  const name = config.containerd?.defaultRuntimeName;
  const runtime = name === undefined ? undefined : config.containerd?.runtimes?.[name];
  if (runtime?.runtimeType === 'io.containerd.runc.v2') {
    return runtime.options?.SystemdCgroup === true ? 'systemd' : 'cgroupfs';
  }
  if (typeof config.systemdCgroup === 'boolean') return config.systemdCgroup ? 'systemd' : 'cgroupfs';
  return undefined;
}

/**
 * Asks the runtime (verbose Status) which cgroup driver it uses; undefined when it does not tell
 * (not containerd, or a runtime type whose driver is not in the configuration). Rejects as the
 * Status call does.
 */
export async function runtimeCgroupDriver(
  runtime: Pick<RuntimeService, 'status'>,
  opts?: CallOptions,
): Promise<RuntimeCgroupDriver | undefined> {
  const status = await runtime.status({ ...opts, verbose: true });
  const config = status.info?.['config'];
  return config === undefined ? undefined : cgroupDriverOfContainerdConfig(config);
}
