import type { KubeletPod } from '../api/types.ts';

export type PodSourceName = 'file' | 'http' | 'api';

/**
 * What the merge emits to the kubelet (upstream kubetypes.PodUpdate). Sources themselves only ever
 * send `SET` (a full snapshot); the storage turns snapshots into the incremental ops:
 * - ADD: a pod UID seen for the first time
 * - UPDATE: a known pod whose spec, labels, annotations or deletion fields changed
 * - DELETE: a known pod that gained a deletionTimestamp (graceful deletion; api source)
 * - REMOVE: a pod that left the source's snapshot
 * - RECONCILE: only the status changed (the kubelet does not restart anything for it)
 */
export type PodOp = 'ADD' | 'UPDATE' | 'DELETE' | 'REMOVE' | 'RECONCILE' | 'SET';

export interface PodUpdate {
  op: PodOp;
  pods: KubeletPod[];
  source: PodSourceName;
}

/**
 * A producer of snapshots. `start` begins delivery through `send`; `stop` ends it. Every pod sent
 * carries its identity (a {@link KubeletPod}): the source checks or assigns it. A source never
 * mutates a pod once sent; it may send the same object again in a later snapshot, and the merge
 * then takes that pod as unchanged without comparing it.
 */
export interface PodSource {
  readonly name: PodSourceName;
  start(send: (pods: KubeletPod[]) => void): void;
  stop(): Promise<void>;
}

/** Problems a source or the merge reports about a manifest (logged; an Event in cluster mode). */
export interface SourceProblem {
  source: PodSourceName;
  /** The file path or URL the problem is about. */
  origin: string;
  reason: 'InvalidManifest' | 'DuplicatePod' | 'ReadFailed' | 'FetchFailed';
  message: string;
  pod?: string;
}
