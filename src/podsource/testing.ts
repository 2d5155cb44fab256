/** Test helpers for this folder (not exported from index.ts). */
import type { KubeletPod, Pod } from '../api/types.ts';
import { buildPod } from '../../test/kit/pod.ts';

/** Collects snapshots a source sends and lets a test wait for one that satisfies a predicate. */
export function snapshotRecorder() {
  const seen: Pod[][] = [];
  let waiters: { pred: (pods: Pod[]) => boolean; resolve: (pods: Pod[]) => void }[] = [];
  return {
    seen,
    send: (pods: Pod[]): void => {
      seen.push(pods);
      const ready = waiters.filter((w) => w.pred(pods));
      waiters = waiters.filter((w) => !ready.includes(w));
      for (const w of ready) w.resolve(pods);
    },
    /**
     * Resolves with the first snapshot, from now on, matching `pred`. The guard timeout only keeps a
     * broken test from hanging; it is not what the test measures.
     */
    next(pred: (pods: Pod[]) => boolean = () => true, guardMs = 10_000): Promise<Pod[]> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no matching snapshot arrived')), guardMs);
        waiters.push({
          pred,
          resolve: (pods) => {
            clearTimeout(timer);
            resolve(pods);
          },
        });
      });
    },
  };
}

/** A minimal valid manifest (before static-pod defaulting). */
export function manifest(name: string, image = 'busybox:1.29', extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers: [{ name: 'main', image }] },
    ...extra,
  };
}

/** A pod as a source would hand it to the storage. */
export function pod(name: string, uid: string, patch: (p: KubeletPod) => void = () => {}): KubeletPod {
  const p = buildPod(name, {
    uid,
    typeMeta: true,
    annotations: { 'kubernetes.io/config.hash': uid },
    containers: ['main'],
    status: { phase: 'Pending' },
  });
  patch(p);
  return p;
}
