/**
 * Feeds the secret and configMap managers from a pod source's snapshots, as upstream's pod manager
 * does from its pod updates (basicManager.updatePodsInternal / DeletePod): a pod that arrives or
 * changes registers what it references, a pod that reached a terminal phase or left the snapshot
 * unregisters it. Registering runs before the snapshot reaches the kubelet, so a pod's first sync
 * finds its watches started.
 */
import type { KubeletPod } from './types.ts';

/** The part of the manager this needs (PodObjectManager). */
export interface PodRegistry {
  registerPod(pod: KubeletPod): void;
  unregisterPod(uid: string): void;
}

/** Upstream isPodInTerminatedState: a finished pod needs none of its objects any more. */
function isTerminal(pod: KubeletPod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * What counts as "the pod changed": its resourceVersion for API pods (upstream registers again on
 * every update, status updates included, which also invalidates the Cache strategy's entries); a
 * static pod's spec is its UID, so it never changes once seen.
 */
function version(pod: KubeletPod): string {
  return pod.metadata.resourceVersion ?? '';
}

/**
 * A snapshot observer for one source: call it with every snapshot the source sends, before passing
 * the snapshot on. Keeps one entry per pod of the last snapshot (bounded by the source's pods).
 */
export function registerSnapshots(registry: PodRegistry): (pods: readonly KubeletPod[]) => void {
  /** UID → the version registered; absent: not registered (never seen, or terminal). */
  const seen = new Map<string, string>();
  return (pods) => {
    const current = new Set<string>();
    for (const pod of pods) {
      const uid = pod.metadata.uid;
      current.add(uid);
      if (isTerminal(pod)) {
        if (seen.delete(uid)) registry.unregisterPod(uid);
        continue;
      }
      const v = version(pod);
      if (seen.get(uid) === v) continue;
      seen.set(uid, v);
      registry.registerPod(pod);
    }
    for (const uid of [...seen.keys()]) {
      if (current.has(uid)) continue;
      seen.delete(uid);
      registry.unregisterPod(uid);
    }
  };
}
