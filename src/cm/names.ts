/**
 * Cgroup names of the QoS hierarchy (upstream pkg/kubelet/cm cgroup_manager_linux.go CgroupName,
 * qos_container_manager_linux.go, pod_container_manager_linux.go): a name is a list of components,
 * `[<cgroupRoot parts>, kubepods, burstable, pod<uid>]`; `kubepods` holds Guaranteed pods directly,
 * `burstable` and `besteffort` the other two classes. Each driver turns a name into the cgroup's
 * path under every hierarchy root, which is also what the runtime gets as cgroup_parent:
 *
 * - cgroupfs: `/kubepods/burstable/pod<uid>`;
 * - systemd: one slice per level, each component's `-` escaped to `_` (upstream
 *   escapeSystemdCgroupName) and the slice named by all components so far (systemd's slice
 *   nesting): `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice`.
 */
import path from 'node:path';
import type { KubeletPod } from '../api/types.ts';
import { podQOSClass, type QOSClass } from '../api/qos.ts';
import { NODE_ALLOCATABLE_CGROUP_NAME, POD_CGROUP_NAME_PREFIX } from '../config/defaults.ts';
import { KubeletError } from '../util/errors.ts';

export type CgroupDriver = 'cgroupfs' | 'systemd';

const SLICE_SUFFIX = '.slice';

/** Paths (absolute, as given to CRI as cgroup_parent) of the three QoS parents, for one driver. */
export interface QOSCgroupNames {
  readonly driver: CgroupDriver;
  /** The cgroup root's path (cgroupRoot under the driver: `/`, `/pods` or `/pods.slice`). */
  readonly root: string;
  /** `<root>/kubepods`: the node-allocatable cgroup, parent of Guaranteed pods. */
  readonly guaranteed: string;
  readonly burstable: string;
  readonly besteffort: string;
  /** Components of each QoS parent's name. */
  readonly components: Readonly<Record<QOSClass, readonly string[]>>;
}

/** Go's path.Clean for an absolute cgroup name; '' and '/' are the root. */
export function cleanCgroupName(name: string): string {
  return path.posix.normalize(`/${name}`).replace(/(.)\/$/, '$1');
}

/** upstream escapeSystemdCgroupName / unescapeSystemdCgroupName. */
const escapeSystemd = (part: string): string => part.replaceAll('-', '_');
const unescapeSystemd = (part: string): string => part.replaceAll('_', '-');

/** The path of a cgroup name under a hierarchy root (upstream CgroupName.ToCgroupfs / ToSystemd). */
export function cgroupPath(components: readonly string[], driver: CgroupDriver): string {
  if (components.length === 0) return '/';
  if (driver === 'cgroupfs') return `/${components.join('/')}`;
  const escaped = components.map(escapeSystemd);
  return `/${escaped.map((_, i) => `${escaped.slice(0, i + 1).join('-')}${SLICE_SUFFIX}`).join('/')}`;
}

/** The systemd unit of a slice path (its last component), e.g. `kubepods-burstable.slice`. */
export function sliceUnitOf(slicePath: string): string {
  return path.posix.basename(slicePath);
}

export function qosCgroupNames(cgroupRoot: string, driver: CgroupDriver = 'cgroupfs'): QOSCgroupNames {
  const root = cleanCgroupName(cgroupRoot)
    .split('/')
    .filter((p) => p !== '');
  const guaranteed = [...root, NODE_ALLOCATABLE_CGROUP_NAME];
  const burstable = [...guaranteed, 'burstable'];
  const besteffort = [...guaranteed, 'besteffort'];
  return {
    driver,
    root: cgroupPath(root, driver),
    guaranteed: cgroupPath(guaranteed, driver),
    burstable: cgroupPath(burstable, driver),
    besteffort: cgroupPath(besteffort, driver),
    components: { Guaranteed: guaranteed, Burstable: burstable, BestEffort: besteffort },
  };
}

export function qosParent(names: QOSCgroupNames, qos: QOSClass): string {
  switch (qos) {
    case 'Guaranteed':
      return names.guaranteed;
    case 'Burstable':
      return names.burstable;
    case 'BestEffort':
      return names.besteffort;
  }
}

/**
 * A UID usable as one path component: letters, digits, `-`, `_`, `.` (not `.` or `..`). API UIDs
 * are UUIDs and static pod UIDs hex digests; anything else is refused rather than put in a path.
 */
const SAFE_UID = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}$/;

export function isSafeUid(uid: string): boolean {
  return SAFE_UID.test(uid);
}

/** The last component of a pod's cgroup name (upstream GetPodCgroupNameSuffix). */
function podComponent(uid: string): string {
  if (!isSafeUid(uid)) {
    throw new KubeletError(
      'InvalidArgument',
      'pod cgroup name',
      `pod UID ${JSON.stringify(uid)} cannot be used as a cgroup name`,
    );
  }
  return `${POD_CGROUP_NAME_PREFIX}${uid}`;
}

/** The path of a pod's cgroup under the QoS class `qos` (upstream GetPodContainerName). */
export function podCgroupPath(names: QOSCgroupNames, qos: QOSClass, uid: string): string {
  return cgroupPath([...names.components[qos], podComponent(uid)], names.driver);
}

/** The pod's cgroup, e.g. `/kubepods/burstable/pod<uid>`, by its QoS class. */
export function podCgroupName(names: QOSCgroupNames, pod: KubeletPod): string {
  return podCgroupPath(names, podQOSClass(pod), pod.metadata.uid);
}

/**
 * The UID of a pod cgroup directory name (`pod<uid>`, or `…-pod<uid_>.slice` with the systemd
 * driver), or undefined for anything else.
 */
export function parsePodCgroupDirName(name: string, driver: CgroupDriver = 'cgroupfs'): string | undefined {
  let last = name;
  if (driver === 'systemd') {
    if (!name.endsWith(SLICE_SUFFIX)) return undefined;
    const unit = name.slice(0, -SLICE_SUFFIX.length);
    last = unescapeSystemd(unit.slice(unit.lastIndexOf('-') + 1));
  }
  if (!last.startsWith(POD_CGROUP_NAME_PREFIX)) return undefined;
  const uid = last.slice(POD_CGROUP_NAME_PREFIX.length);
  return isSafeUid(uid) ? uid : undefined;
}
