/**
 * The Node events about orphaned pods' volumes (ours: upstream's cleanupOrphanedPodDirs only logs,
 * and leaves an orphan with mounted volumes in place, its issue #60987). An orphan is a pod the
 * kubelet finds on the node (in the runtime, or as a directory under `<root-dir>/pods`) that no
 * source claims any more, e.g. one deleted while the kubelet was down.
 */

/** An orphaned pod's volume mounts were torn down and its directory removed. */
export const ORPHANED_POD_CLEANED_UP = 'OrphanedPodCleanedUp';
/** An orphaned pod's directory could not be removed (its mounts kept); retried. */
export const FAILED_ORPHANED_POD_CLEANUP = 'FailedOrphanedPodCleanup';

/** The Normal event's message: the pod and the mounts it had. */
export function orphanCleanedUpMessage(uid: string, mounts: readonly string[], pod?: string): string {
  const who = pod ? `orphaned pod ${pod} (${uid})` : `orphaned pod ${uid}`;
  return (
    `Removed the directory of ${who}` +
    (mounts.length > 0
      ? `, unmounting ${mounts.length} volume mount(s): ${mounts.join(', ')}`
      : ' (nothing mounted)')
  );
}
