/**
 * Node allocatable enforcement on the cgroups of the daemons (upstream
 * pkg/kubelet/cm/node_container_manager_linux.go enforceNodeAllocatableCgroups,
 * enforceExistingCgroup, getCgroupConfig; cgroup_manager_linux.go CgroupName): with
 * "system-reserved" (or "kube-reserved") in enforceNodeAllocatable, the existing cgroup named by
 * systemReservedCgroup (kubeReservedCgroup) is limited to the reservation: cpu shares from the
 * reserved cpu, the reserved memory as its limit, the reserved pids as pids.max. A missing cgroup
 * or an empty reservation fails the start, as upstream. Also the kubepods values of `start`.
 * The reserved cgroups' hugetlb files are left alone (upstream 1.20 would write 0 for every page
 * size there, since a reservation holds no huge pages).
 */
import path from 'node:path';
import { KubeletError, describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { NodeEventSink } from '../api/events.ts';
import type { Cgroups } from './cgroupfs.ts';
import { cgroupPath, cleanCgroupName, type CgroupDriver } from './names.ts';
import {
  milliCPUToShares,
  nodeAllocatableConfig,
  type NodeResources,
  type ResourceConfig,
} from './resources.ts';

/** A reservation as cgroup values: cpu in millicores, memory in bytes, pids; each optional. */
export interface ReservedResources {
  milliCPU?: number;
  memory?: number;
  pids?: number;
}

/** The container manager's node allocatable options besides kubepods'. */
export interface NodeReservedOptions {
  /** systemReserved (after reservedSystemCPUs); undefined when nothing is reserved. */
  systemReserved?: ReservedResources;
  kubeReserved?: ReservedResources;
  /** The existing cgroups "system-reserved" / "kube-reserved" enforcement limits, as configured. */
  systemReservedCgroup?: string;
  kubeReservedCgroup?: string;
}

/**
 * A configured cgroup name under the driver (upstream CgroupName then Name): cgroupfs takes the
 * path as given (`/system.slice`); systemd takes the last component as a slice name and rebuilds
 * its parents from the dashes (`/kube.slice/kube-kubelet.slice`, `system.slice` → `/system.slice`).
 */
export function reservedCgroupPath(name: string, driver: CgroupDriver): string {
  if (driver === 'cgroupfs') return cleanCgroupName(name);
  const unit = path.posix.basename(name).replace(/\.slice$/, '');
  const components = unit.split('-').map((p) => p.replaceAll('_', '-'));
  return cgroupPath(
    components.filter((c) => c !== ''),
    'systemd',
  );
}

/** upstream getCgroupConfig of a reservation: cpu shares, memory limit, pids limit. */
export function reservedCgroupConfig(r: ReservedResources): ResourceConfig {
  return {
    ...(r.milliCPU !== undefined ? { cpuShares: milliCPUToShares(r.milliCPU) } : {}),
    ...(r.memory !== undefined ? { memory: r.memory } : {}),
    ...(r.pids !== undefined ? { pidsLimit: r.pids } : {}),
  };
}

/**
 * The kubepods values (upstream createNodeAllocatableCgroups / enforceNodeAllocatableCgroups):
 * the capacity with the node's task limit, or, with "pods" enforced, what `allocatable` makes of it.
 */
export function kubepodsConfig(
  capacity: NodeResources,
  maxPids: number | undefined,
  enforcePods: boolean,
  allocatable: ((capacity: NodeResources) => NodeResources) | undefined,
): ResourceConfig {
  const pids = capacity.pids ?? maxPids;
  const internal = pids !== undefined ? { ...capacity, pids } : capacity;
  if (!enforcePods || !allocatable) return nodeAllocatableConfig(internal);
  // Huge pages cannot be reserved (RESERVABLE_RESOURCES): allocatable has the capacity's.
  const a = allocatable(internal);
  const hugePages = a.hugePages ?? capacity.hugePages;
  return nodeAllocatableConfig(hugePages !== undefined ? { ...a, hugePages } : a);
}

/** Upstream's event reasons (pkg/kubelet/events). */
export const NODE_ALLOCATABLE_ENFORCED = 'NodeAllocatableEnforced';
export const FAILED_NODE_ALLOCATABLE_ENFORCEMENT = 'FailedNodeAllocatableEnforcement';

const ENFORCEMENTS = [
  {
    key: 'system-reserved',
    what: 'System Reserved',
    reserved: 'systemReserved',
    cgroup: 'systemReservedCgroup',
  },
  { key: 'kube-reserved', what: 'Kube Reserved', reserved: 'kubeReserved', cgroup: 'kubeReservedCgroup' },
] as const;

/**
 * Writes the reservations to their cgroups for each of "system-reserved" and "kube-reserved" in
 * `enforce`, with upstream's Node event either way. Throws FailedPrecondition naming the cgroup when
 * it cannot (upstream: the kubelet does not start).
 */
export async function enforceReservedCgroups(
  cg: Cgroups,
  driver: CgroupDriver,
  enforce: readonly string[],
  opts: NodeReservedOptions,
  ctx: { log: Logger; signal: AbortSignal; nodeEvent?: NodeEventSink },
): Promise<void> {
  const { log, signal } = ctx;
  for (const e of ENFORCEMENTS) {
    if (!enforce.includes(e.key)) continue;
    const configured = opts[e.cgroup] ?? '';
    const fail = (why: string, cause?: unknown): KubeletError => {
      const message = `Failed to enforce ${e.what} Cgroup Limits on ${JSON.stringify(configured)}: ${why}`;
      ctx.nodeEvent?.('Warning', FAILED_NODE_ALLOCATABLE_ENFORCEMENT, message);
      return new KubeletError(
        'FailedPrecondition',
        'enforce node allocatable',
        message,
        cause === undefined ? undefined : { cause },
      );
    };
    if (configured === '') throw fail(`${e.cgroup} is not set`);
    const name = reservedCgroupPath(configured, driver);
    const reserved = opts[e.reserved];
    if (reserved === undefined)
      throw fail(`${JSON.stringify(name)} cgroup is not config properly (${e.reserved} is empty)`);
    const config = reservedCgroupConfig(reserved);
    if (!(await cg.exists(name))) throw fail(`${JSON.stringify(name)} cgroup does not exist`);
    try {
      await cg.apply(name, config, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      throw fail(describeError(err), err);
    }
    log.info(`Updated limits on ${e.what.toLowerCase()} cgroup`, { cgroup: name, resources: config });
    ctx.nodeEvent?.(
      'Normal',
      NODE_ALLOCATABLE_ENFORCED,
      `Updated limits on ${e.what.toLowerCase()} cgroup ${name}`,
    );
  }
}
