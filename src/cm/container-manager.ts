/**
 * Pod-level cgroups per QoS class (upstream pkg/kubelet/cm: the node-allocatable `kubepods`
 * cgroup, the QoS container manager and the pod container manager), with the cgroupfs or the
 * systemd driver, on cgroup v1 (incl. hybrid) and v2.
 */
import { instrumentCgroups, type CgroupOperation } from './instrumented-cgroups.ts';
import type { KubeletPod, Pod } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import { podQOSClass } from '../api/qos.ts';
import type { NodeEventSink } from '../api/events.ts';
import { KubeletError, describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { detectLayout, settableControllers, type CgroupLayout } from './cgroup-layout.ts';
import { createCgroups, type Cgroups } from './cgroupfs.ts';
import { nodeCgroupFs, type CgroupFsOps } from './cgroupfs-ops.ts';
import { readMaxPids } from './max-pids.ts';
import {
  isSafeUid,
  parsePodCgroupDirName,
  podCgroupName,
  podCgroupPath,
  qosCgroupNames,
  type CgroupDriver,
  type QOSCgroupNames,
} from './names.ts';
import { createSystemdCgroups } from './systemd-cgroups.ts';
import { createSystemdUnits, type SystemdUnits } from './systemd-units.ts';
import { createSystemBus } from '../util/busctl.ts';
import {
  enforceReservedCgroups,
  FAILED_NODE_ALLOCATABLE_ENFORCEMENT,
  kubepodsConfig,
  NODE_ALLOCATABLE_ENFORCED,
  type NodeReservedOptions,
} from './node-reserved.ts';
import {
  qosTierConfigs,
  resourceConfigForPod,
  type NodeResources,
  type ResourceConfig,
} from './resources.ts';

/**
 * The kubelet's pod cgroup manager. With cgroupsPerQOS off every method does nothing and the
 * cgroup parent is '' (the runtime's default), exactly as before pod cgroups existed.
 */
export interface ContainerManager {
  /** Whether pod cgroups are managed (cgroupsPerQOS). */
  readonly enabled: boolean;
  /** The QoS cgroups' paths under the driver (undefined when disabled). */
  readonly qosCgroups: QOSCgroupNames | undefined;
  /**
   * Finds the cgroup hierarchies, checks that cgroupRoot exists, creates or updates `kubepods`
   * (node-allocatable limits) and its `burstable` and `besteffort` children. Called once from
   * Kubelet.run(); throws `KubeletError` (FailedPrecondition) when the hierarchy cannot be set up.
   */
  start(signal: AbortSignal): Promise<void>;
  /** The pod's cgroup as CRI cgroup_parent (`/kubepods/burstable/pod<uid>`), or '' when disabled. */
  podCgroupParent(pod: KubeletPod): string;
  /** The pod's cgroup exists in every required hierarchy (always true when disabled). */
  podCgroupExists(pod: KubeletPod): Promise<boolean>;
  /**
   * Creates the pod's cgroup with upstream ResourceConfigForPod values (and podPidsLimit) if it is
   * missing; the first call per pod after start also rewrites the values of an existing one.
   */
  ensurePodCgroup(pod: KubeletPod, signal: AbortSignal): Promise<void>;
  /** Recomputes the burstable (sum of Burstable cpu requests) and besteffort (2) cpu shares. */
  updateQOSCgroups(activePods: readonly Pod[], signal: AbortSignal): Promise<void>;
  /**
   * Removes the cgroups of pods for which `isActive(uid)` is false (checked again right before each
   * removal): leftover processes are killed first, as upstream. Returns the UIDs removed; a pod
   * whose removal failed is logged and left for the next call.
   */
  cleanupOrphanedPodCgroups(isActive: (uid: string) => boolean, signal: AbortSignal): Promise<string[]>;
  /** Kills whatever is left in the pod's cgroup and removes it from every hierarchy (any QoS). */
  destroyPodCgroup(uid: string, signal: AbortSignal): Promise<void>;
}

export interface ContainerManagerOptions extends NodeReservedOptions {
  cgroupsPerQOS: boolean;
  /** kubelet_cgroup_manager_duration_seconds: each create, update and destroy of a cgroup, timed. */
  cgroupOperation?: (operation: CgroupOperation, seconds: number) => void;
  /** Absolute cgroupfs name under which `kubepods` lives; '/' by default. */
  cgroupRoot: string;
  /** cgroupfs: directories by path; systemd: slices made through systemd over D-Bus. */
  cgroupDriver: CgroupDriver;
  /**
   * The runtime's cgroup driver (e.g. containerd's SystemdCgroup), checked at start: a mismatch
   * is a start failure naming both. Undefined (or resolving undefined): not checked.
   */
  runtimeCgroupDriver?: (signal: AbortSignal) => Promise<CgroupDriver | undefined>;
  /** systemd's Manager (default: through busctl on the system bus); tests pass a fake. */
  systemd?: SystemdUnits;
  /** Pod-level pids.max when > 0 (podPidsLimit). */
  podPidsLimit: number;
  /** cpuCFSQuota: false writes no CFS quota on pod cgroups (-1). */
  cpuCFSQuota: boolean;
  /** cpuCFSQuotaPeriod. */
  cpuCFSQuotaPeriodMs: number;
  /**
   * enforceNodeAllocatable; with "pods", kubepods gets `nodeAllocatable`, else `nodeCapacity`;
   * "system-reserved" / "kube-reserved" limit the reserved cgroups (node-reserved.ts).
   */
  enforceNodeAllocatable: readonly string[];
  /** The machine's capacity (cpu in millicores, memory in bytes; pids read from /proc if absent). */
  nodeCapacity: () => NodeResources;
  /**
   * The machine's huge pages in bytes by resource name (`hugepages-2Mi`), read at start: kubepods'
   * hugetlb limits (upstream getCgroupConfig of the capacity or allocatable: huge pages cannot be
   * reserved, so both are the capacity). Absent: kubepods' hugetlb files are left alone.
   */
  nodeHugePages?: () => Promise<Readonly<Record<string, number>>>;
  /** The capacity (with the node's task limit) minus the system and kube reservations; default: the capacity. */
  nodeAllocatable?: (capacity: NodeResources) => NodeResources;
  logger: Logger;
  /** Where the hierarchies are mounted (default /sys/fs/cgroup); tests pass a fake tree. */
  cgroupFsRoot?: string;
  /** File operations (default the real file system); tests pass the fake's. */
  fs?: CgroupFsOps;
  /** The node's task limit for kubepods (default: min of kernel.pid_max and kernel.threads-max). */
  maxPids?: () => Promise<number | undefined>;
  /**
   * An event on the Node (KubeletDependencies.nodeEvent): NodeAllocatableEnforced when kubepods'
   * and the reserved cgroups' limits are written, FailedNodeAllocatableEnforcement when not.
   */
  nodeEvent?: NodeEventSink;
}

export function createContainerManager(opts: ContainerManagerOptions): ContainerManager {
  const log = opts.logger;
  if (!opts.cgroupsPerQOS) return disabledManager();
  const names: QOSCgroupNames = qosCgroupNames(opts.cgroupRoot, opts.cgroupDriver);
  const ops = opts.fs ?? nodeCgroupFs;
  const fsRoot = opts.cgroupFsRoot ?? '/sys/fs/cgroup';
  const cpuPeriodUs = Math.round(opts.cpuCFSQuotaPeriodMs * 1000);
  let cgroups: Cgroups | undefined;
  /** Pods whose cgroup values were written since start (later ensures only check existence). */
  const applied = new Set<string>();
  /** Per-UID serialization: create and destroy of one pod's cgroup never overlap. */
  const locks = new Map<string, Promise<unknown>>();
  /** The node-allocatable values could not be written at start (e.g. usage above the new limit). */
  let nodeAllocatablePending: ResourceConfig | undefined;

  function withLock<T>(uid: string, fn: () => Promise<T>): Promise<T> {
    const prev = locks.get(uid) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    locks.set(uid, tail);
    void tail.then(() => {
      if (locks.get(uid) === tail) locks.delete(uid);
    });
    return run;
  }

  function started(op: string): Cgroups {
    if (!cgroups) throw new KubeletError('FailedPrecondition', op, 'the container manager has not started');
    return cgroups;
  }

  function podLog(pod: Pod): Logger {
    return log.child({ pod: podFullName(pod), podUID: pod.metadata.uid });
  }

  async function applyNodeAllocatable(
    cg: Cgroups,
    config: ResourceConfig,
    signal: AbortSignal,
  ): Promise<void> {
    try {
      await cg.apply(names.guaranteed, config, signal);
      if (nodeAllocatablePending) log.info('node allocatable limits applied', { cgroup: names.guaranteed });
      nodeAllocatablePending = undefined;
      opts.nodeEvent?.('Normal', NODE_ALLOCATABLE_ENFORCED, 'Updated Node Allocatable limit across pods');
    } catch (err) {
      if (signal.aborted) throw err;
      // Upstream keeps retrying (every minute) until evictions bring usage under the new limits;
      // the Warning event is sent once per episode (the retries here follow pod syncs, not a minute).
      if (!nodeAllocatablePending) {
        opts.nodeEvent?.(
          'Warning',
          FAILED_NODE_ALLOCATABLE_ENFORCEMENT,
          `Failed to update Node Allocatable Limits ${JSON.stringify(names.guaranteed)}: ${describeError(err)}`,
        );
      }
      nodeAllocatablePending = config;
      log.warn('failed to apply node allocatable limits; will retry', {
        cgroup: names.guaranteed,
        err: describeError(err),
      });
    }
  }

  async function destroyAll(uid: string, cg: Cgroups, signal: AbortSignal): Promise<boolean> {
    let removed = false;
    for (const qos of ['Guaranteed', 'Burstable', 'BestEffort'] as const) {
      const name = podCgroupPath(names, qos, uid);
      if (!(await cg.existsAnywhere(name))) continue;
      await cg.destroy(name, signal);
      removed = true;
    }
    applied.delete(uid);
    return removed;
  }

  /** The driver's cgroup operations; with systemd, checks that systemd answers on D-Bus. */
  async function driverCgroups(layout: CgroupLayout, signal: AbortSignal): Promise<Cgroups> {
    const fsCgroups = createCgroups(layout, ops, log);
    if (opts.cgroupDriver === 'cgroupfs') return fsCgroups;
    const units = opts.systemd ?? createSystemdUnits(createSystemBus(), log);
    try {
      const version = await units.version(signal);
      log.info('systemd cgroup driver', { systemd: version });
    } catch (err) {
      throw new KubeletError(
        'FailedPrecondition',
        'start container manager',
        `cgroupDriver is "systemd" but systemd is not reachable: ${describeError(err)}`,
        { cause: err },
      );
    }
    return createSystemdCgroups(fsCgroups, units, ops, log);
  }

  async function checkRuntimeDriver(signal: AbortSignal): Promise<void> {
    if (!opts.runtimeCgroupDriver) return;
    let runtime: CgroupDriver | undefined;
    try {
      runtime = await opts.runtimeCgroupDriver(signal);
    } catch (err) {
      if (signal.aborted) throw err;
      log.warn('could not ask the container runtime for its cgroup driver; not checked', {
        cgroupDriver: opts.cgroupDriver,
        err: describeError(err),
      });
      return;
    }
    if (runtime === undefined || runtime === opts.cgroupDriver) return;
    throw new KubeletError(
      'FailedPrecondition',
      'start container manager',
      `misconfiguration: kubelet cgroup driver "${opts.cgroupDriver}" is different from the container ` +
        `runtime's cgroup driver "${runtime}" (containerd: SystemdCgroup = ${runtime === 'systemd'} in ` +
        `the runc options); set both to the same driver`,
    );
  }

  return {
    enabled: true,
    qosCgroups: names,
    async start(signal) {
      await checkRuntimeDriver(signal);
      const layout = await detectLayout(fsRoot, ops);
      const made = await driverCgroups(layout, signal);
      const cg = opts.cgroupOperation ? instrumentCgroups(made, opts.cgroupOperation) : made;
      const root = names.root;
      if (!(await cg.exists(root))) {
        throw new KubeletError(
          'FailedPrecondition',
          'start container manager',
          `cgroup root ${JSON.stringify(root)} does not exist in every cgroup hierarchy under ${fsRoot}`,
        );
      }
      const controllers = settableControllers(layout);
      const missing = ['cpu', 'memory', 'pids'].filter((c) => !controllers.has(c));
      if (missing.length > 0) {
        log.warn('cgroup controllers missing; their pod limits are not enforced', {
          missing,
          mode: layout.mode,
        });
      }
      const hugePages = await opts.nodeHugePages?.();
      const capacity = { ...opts.nodeCapacity(), ...(hugePages !== undefined ? { hugePages } : {}) };
      const maxPids = capacity.pids ?? (await (opts.maxPids ?? readMaxPids)());
      const enforcePods = opts.enforceNodeAllocatable.includes('pods');
      const nodeConfig = kubepodsConfig(capacity, maxPids, enforcePods, opts.nodeAllocatable);
      await applyNodeAllocatable(cg, nodeConfig, signal);
      if (nodeAllocatablePending) {
        // The directory must exist even when the limits could not be written.
        await cg.apply(names.guaranteed, {}, signal);
      }
      const tiers = qosTierConfigs([]);
      // Upstream creates both tiers, or updates existing ones to have the right state on start
      // (an existing burstable tier keeps its shares until the first update; hugetlb unbounded).
      const burstableExists = await cg.exists(names.burstable);
      await cg.apply(
        names.burstable,
        burstableExists ? { hugetlb: tiers.burstable.hugetlb } : tiers.burstable,
        signal,
      );
      await cg.apply(names.besteffort, tiers.besteffort, signal);
      await enforceReservedCgroups(cg, opts.cgroupDriver, opts.enforceNodeAllocatable, opts, {
        log,
        signal,
        ...(opts.nodeEvent ? { nodeEvent: opts.nodeEvent } : {}),
      });
      cgroups = cg;
      log.info('pod cgroups per QoS class', {
        mode: layout.mode,
        driver: opts.cgroupDriver,
        kubepods: names.guaranteed,
        hierarchies: layout.hierarchies.map((h) => h.dir),
        nodeAllocatable: nodeConfig,
        enforceNodeAllocatable: opts.enforceNodeAllocatable,
      });
    },
    podCgroupParent(pod) {
      return podCgroupName(names, pod);
    },
    async podCgroupExists(pod) {
      return started('check pod cgroup').exists(podCgroupName(names, pod));
    },
    async ensurePodCgroup(pod, signal) {
      const uid = pod.metadata.uid;
      const name = podCgroupName(names, pod);
      const cg = started(`ensure pod cgroup ${name}`);
      await withLock(uid, async () => {
        if (applied.has(uid) && (await cg.exists(name))) return;
        const config = resourceConfigForPod(pod, { enforceCPULimits: opts.cpuCFSQuota, cpuPeriodUs });
        if (opts.podPidsLimit > 0) config.pidsLimit = opts.podPidsLimit;
        try {
          await cg.apply(name, config, signal);
        } catch (err) {
          throw new KubeletError(
            err instanceof KubeletError ? err.code : 'Internal',
            `ensure pod cgroup ${name}`,
            describeError(err),
            { cause: err },
          );
        }
        applied.add(uid);
        podLog(pod).debug('pod cgroup ready', {
          cgroup: name,
          qosClass: podQOSClass(pod),
          resources: config,
        });
      });
    },
    async updateQOSCgroups(activePods, signal) {
      const cg = started('update QoS cgroups');
      if (nodeAllocatablePending) await applyNodeAllocatable(cg, nodeAllocatablePending, signal);
      const tiers = qosTierConfigs(activePods);
      await cg.apply(names.burstable, tiers.burstable, signal);
      await cg.apply(names.besteffort, tiers.besteffort, signal);
      log.debug('QoS cgroups updated', { burstable: tiers.burstable, besteffort: tiers.besteffort });
    },
    async cleanupOrphanedPodCgroups(isActive, signal) {
      const cg = started('clean up orphaned pod cgroups');
      const found = new Set<string>();
      for (const parent of [names.guaranteed, names.burstable, names.besteffort]) {
        for (const child of await cg.children(parent)) {
          const uid = parsePodCgroupDirName(child, names.driver);
          if (uid !== undefined) found.add(uid);
        }
      }
      const removed: string[] = [];
      for (const uid of found) {
        if (isActive(uid)) continue;
        signal.throwIfAborted();
        try {
          const done = await withLock(uid, async () => (isActive(uid) ? false : destroyAll(uid, cg, signal)));
          if (done) {
            removed.push(uid);
            log.info('removed orphaned pod cgroup', { podUID: uid });
          }
        } catch (err) {
          if (signal.aborted) throw err;
          log.warn('failed to remove orphaned pod cgroup; will retry', {
            podUID: uid,
            err: describeError(err),
          });
        }
      }
      return removed;
    },
    async destroyPodCgroup(uid, signal) {
      if (!isSafeUid(uid)) return; // no such cgroup can exist
      const cg = started(`destroy pod cgroup of ${uid}`);
      await withLock(uid, () => destroyAll(uid, cg, signal));
    },
  };
}

function disabledManager(): ContainerManager {
  return {
    enabled: false,
    qosCgroups: undefined,
    start: () => Promise.resolve(),
    podCgroupParent: () => '',
    podCgroupExists: () => Promise.resolve(true),
    ensurePodCgroup: () => Promise.resolve(),
    updateQOSCgroups: () => Promise.resolve(),
    cleanupOrphanedPodCgroups: () => Promise.resolve([]),
    destroyPodCgroup: () => Promise.resolve(),
  };
}
