/**
 * The per-source merge (upstream podStorage in pkg/kubelet/config/config.go, mode
 * PodConfigNotificationIncremental). Sources hand in full snapshots; the storage remembers the last
 * one per source, keyed by pod UID, and answers with the incremental updates that turn the old
 * state into the new one.
 */
import { podFullName, type KubeletPod, type Pod } from '../api/types.ts';
import {
  ANNOTATION_CONFIG_MIRROR,
  ANNOTATION_CONFIG_SEEN,
  ANNOTATION_CONFIG_SOURCE,
} from '../config/defaults.ts';
import type { Logger } from '../util/logger.ts';
import { cloneJson, deepEqual } from '../util/json.ts';
import type { PodSourceName, PodUpdate, SourceProblem } from './types.ts';

/** Pure merge state; no timers, no I/O. */
export interface PodStorage {
  /**
   * Replaces `source`'s pods with `snapshot` and returns the updates, in upstream order:
   * REMOVE, ADD, UPDATE, DELETE, then (first snapshot of the source only, when it produced no
   * ADD/UPDATE/DELETE) one empty ADD, then RECONCILE. Empty ops are left out; a snapshot that changes
   * nothing returns `[]`. Pods in the result are copies: callers may keep or mutate them.
   */
  merge(source: PodSourceName, snapshot: readonly KubeletPod[]): PodUpdate[];
  /** True once every named source has delivered at least one snapshot. */
  seenSources(sources: Iterable<PodSourceName>): boolean;
  /** Copies of the current pods of all sources (sources in first-seen order). */
  allPods(): KubeletPod[];
}

export interface PodStorageOptions {
  logger: Logger;
  /** Duplicate names inside one snapshot are reported here (upstream records an Event). */
  onProblem?: (p: SourceProblem) => void;
  /** Clock for `kubernetes.io/config.seen`; tests pass a fixed one. */
  now?: () => Date;
}

/** Annotations the kubelet itself sets; a difference in them alone is not an update (upstream localAnnotations). */
const LOCAL_ANNOTATIONS: readonly string[] = [
  ANNOTATION_CONFIG_SOURCE,
  ANNOTATION_CONFIG_MIRROR,
  ANNOTATION_CONFIG_SEEN,
];

function withoutLocal(annotations: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(annotations ?? {})) {
    if (!LOCAL_ANNOTATIONS.includes(k)) out[k] = v;
  }
  return out;
}

/** Upstream podsDifferSemantically: spec, labels, deletion fields, non-local annotations. Not status. */
function differSemantically(a: Pod, b: Pod): boolean {
  return !(
    deepEqual(a.spec, b.spec) &&
    deepEqual(a.metadata.labels, b.metadata.labels) &&
    a.metadata.deletionTimestamp === b.metadata.deletionTimestamp &&
    a.metadata.deletionGracePeriodSeconds === b.metadata.deletionGracePeriodSeconds &&
    deepEqual(withoutLocal(a.metadata.annotations), withoutLocal(b.metadata.annotations))
  );
}

/** RFC 3339 with fractional seconds and trailing zeros trimmed, as Go's time.RFC3339Nano prints. */
export function rfc3339Nano(d: Date): string {
  return d.toISOString().replace(/\.?0+Z$/, 'Z');
}

export function createPodStorage(opts: PodStorageOptions): PodStorage {
  const now = opts.now ?? (() => new Date());
  const bySource = new Map<PodSourceName, Map<string, KubeletPod>>();
  /**
   * Per source, the objects it sent last time, by UID. The API source sends every pod after each
   * burst of watch events, most of them the very objects it sent before: taken as unchanged
   * without a copy or a comparison (a copy of every pod per event was most of the garbage, and of
   * the heap's high-water mark, when 110 pods start at once).
   */
  const sentBySource = new Map<PodSourceName, Map<string, KubeletPod>>();
  const seen = new Set<PodSourceName>();

  /** Upstream filterInvalidPods: first pod of a full name wins; a repeated UID is dropped the same way. */
  function dedupe(source: PodSourceName, snapshot: readonly KubeletPod[]): KubeletPod[] {
    const names = new Set<string>();
    const uids = new Set<string>();
    const kept: KubeletPod[] = [];
    for (const pod of snapshot) {
      const name = podFullName(pod);
      const uid = pod.metadata.uid;
      const clash = names.has(name)
        ? `name ${JSON.stringify(name)}`
        : uids.has(uid)
          ? `UID ${uid}`
          : undefined;
      if (clash) {
        const message = `duplicate pod ${clash} from source ${source}, ignoring`;
        opts.logger.warn('Ignoring duplicate pod from source', {
          pod: name,
          podUID: uid,
          source,
        });
        opts.onProblem?.({ source, origin: source, reason: 'DuplicatePod', message, pod: name });
        continue;
      }
      names.add(name);
      uids.add(uid);
      kept.push(pod);
    }
    return kept;
  }

  return {
    merge(source, snapshot) {
      const firstSet = !seen.has(source);
      seen.add(source);
      const old = bySource.get(source) ?? new Map<string, KubeletPod>();
      const next = new Map<string, KubeletPod>();
      const sentBefore = sentBySource.get(source);
      const sent = new Map<string, KubeletPod>();
      const adds: KubeletPod[] = [];
      const updates: KubeletPod[] = [];
      const deletes: KubeletPod[] = [];
      const reconciles: KubeletPod[] = [];

      for (const incoming of dedupe(source, snapshot)) {
        sent.set(incoming.metadata.uid, incoming);
        const kept = old.get(incoming.metadata.uid);
        if (kept && sentBefore?.get(incoming.metadata.uid) === incoming) {
          next.set(incoming.metadata.uid, kept);
          continue;
        }
        const pod = cloneJson(incoming);
        const annotations = (pod.metadata.annotations = { ...pod.metadata.annotations });
        annotations[ANNOTATION_CONFIG_SOURCE] = source;
        const uid = pod.metadata.uid;
        const existing = old.get(uid);
        if (!existing) {
          annotations[ANNOTATION_CONFIG_SEEN] = rfc3339Nano(now());
          opts.logger.debug('Receiving a new pod', { pod: podFullName(pod), podUID: uid, source });
          next.set(uid, pod);
          adds.push(pod);
          continue;
        }
        // The first-seen time is ours and stays what it was, whatever else changes.
        const firstSeen = existing.metadata.annotations?.[ANNOTATION_CONFIG_SEEN];
        if (firstSeen !== undefined) annotations[ANNOTATION_CONFIG_SEEN] = firstSeen;
        else delete annotations[ANNOTATION_CONFIG_SEEN];
        next.set(uid, pod);
        if (differSemantically(existing, pod)) {
          if (pod.metadata.deletionTimestamp) deletes.push(pod);
          else updates.push(pod);
        } else if (!deepEqual(existing.status, pod.status)) {
          reconciles.push(pod);
        }
      }
      const removes = [...old.entries()].filter(([uid]) => !next.has(uid)).map(([, pod]) => pod);
      bySource.set(source, next);
      sentBySource.set(source, sent);

      const out: PodUpdate[] = [];
      const emit = (op: PodUpdate['op'], pods: KubeletPod[]) => {
        if (pods.length > 0) out.push({ op, pods: pods.map((p) => cloneJson(p)), source });
      };
      emit('REMOVE', removes);
      emit('ADD', adds);
      emit('UPDATE', updates);
      emit('DELETE', deletes);
      if (firstSet && adds.length === 0 && updates.length === 0 && deletes.length === 0) {
        // Tells the kubelet the source is ready even though it has nothing to run.
        out.push({ op: 'ADD', pods: [], source });
      }
      emit('RECONCILE', reconciles);
      return out;
    },

    seenSources(sources) {
      for (const s of sources) if (!seen.has(s)) return false;
      return true;
    },

    allPods() {
      const out: KubeletPod[] = [];
      for (const pods of bySource.values()) for (const p of pods.values()) out.push(cloneJson(p));
      return out;
    },
  };
}
