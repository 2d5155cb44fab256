/**
 * What lets a volume change between pod syncs: one setup at a time per pod (a sync and a refresh
 * never write the same volume at once, and a cleanup waits for both), and the refresh of pods whose
 * volumes project an object that just changed (the Watch strategy reports changes as they happen).
 */
import { podVolumeObjectNames } from '../api/pod-references.ts';
import type { KubeletPod } from '../api/types.ts';
import { abortReason, untilAborted } from '../util/abort.ts';
import type { ObjectChange } from './objects.ts';

/** Runs work for one pod UID strictly one after another (a promise chain per UID, dropped when idle). */
export interface PodSerializer {
  /**
   * Runs `fn` after the pod's earlier work has settled. When `signal` aborts first, rejects at once
   * and `fn` is skipped if it has not started.
   */
  run<T>(uid: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
}

export function createPodSerializer(): PodSerializer {
  const tails = new Map<string, Promise<unknown>>();
  return {
    async run(uid, fn, signal) {
      const prev = tails.get(uid) ?? Promise.resolve();
      const run = prev.then(() => {
        if (signal?.aborted) throw abortReason(signal);
        return fn();
      });
      const tail = run.then(
        () => undefined,
        () => undefined,
      );
      tails.set(uid, tail);
      void tail.then(() => {
        if (tails.get(uid) === tail) tails.delete(uid);
      });
      return await untilAborted(run, signal);
    },
  };
}

/** True when one of the pod's volumes projects the changed object. */
export function projectsObject(pod: KubeletPod, change: ObjectChange): boolean {
  if (pod.metadata.namespace !== change.namespace) return false;
  const names = podVolumeObjectNames(pod);
  return (change.kind === 'secret' ? names.secrets : names.configMaps).has(change.name);
}
