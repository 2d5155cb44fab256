/**
 * Cgroup names (cgroupfs driver) of the QoS hierarchy: `<cgroupRoot>/kubepods` holds Guaranteed
 * pods directly, `kubepods/burstable` and `kubepods/besteffort` the other two classes, and each pod
 * is `pod<uid>` below its class (upstream qos_container_manager_linux.go, pod_container_manager_linux.go).
 */
import path from 'node:path';
import type { KubeletPod } from '../api/types.ts';
import { podQOSClass, type QOSClass } from '../api/qos.ts';
import { NODE_ALLOCATABLE_CGROUP_NAME, POD_CGROUP_NAME_PREFIX } from '../config/defaults.ts';
import { KubeletError } from '../util/errors.ts';

/** Absolute cgroupfs names (as given to CRI as cgroup_parent) of the three QoS parents. */
export interface QOSCgroupNames {
  /** `<root>/kubepods`: the node-allocatable cgroup, parent of Guaranteed pods. */
  readonly guaranteed: string;
  readonly burstable: string;
  readonly besteffort: string;
}

/** Go's path.Clean for an absolute cgroup name; '' and '/' are the root. */
export function cleanCgroupName(name: string): string {
  return path.posix.normalize(`/${name}`).replace(/(.)\/$/, '$1');
}

export function qosCgroupNames(cgroupRoot: string): QOSCgroupNames {
  const guaranteed = path.posix.join(cleanCgroupName(cgroupRoot), NODE_ALLOCATABLE_CGROUP_NAME);
  return {
    guaranteed,
    burstable: path.posix.join(guaranteed, 'burstable'),
    besteffort: path.posix.join(guaranteed, 'besteffort'),
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

/** The directory name of a pod's cgroup (upstream GetPodCgroupNameSuffix). */
export function podCgroupDirName(uid: string): string {
  if (!isSafeUid(uid)) {
    throw new KubeletError(
      'InvalidArgument',
      'pod cgroup name',
      `pod UID ${JSON.stringify(uid)} cannot be used as a cgroup name`,
    );
  }
  return `${POD_CGROUP_NAME_PREFIX}${uid}`;
}

/** The pod's cgroup, e.g. `/kubepods/burstable/pod<uid>` (upstream GetPodContainerName). */
export function podCgroupName(names: QOSCgroupNames, pod: KubeletPod): string {
  return path.posix.join(qosParent(names, podQOSClass(pod)), podCgroupDirName(pod.metadata.uid));
}

/** The UID of a pod cgroup directory name (`pod<uid>`), or undefined for anything else. */
export function parsePodCgroupDirName(name: string): string | undefined {
  if (!name.startsWith(POD_CGROUP_NAME_PREFIX)) return undefined;
  const uid = name.slice(POD_CGROUP_NAME_PREFIX.length);
  return isSafeUid(uid) ? uid : undefined;
}
