/**
 * The strategic merge patch the kubelet sends to `pods/<name>/status` (upstream statusutil
 * PatchPodStatus + the status manager's mergePodStatus): a two-way diff from the status the API
 * has to the status we want, with the pod UID as a precondition.
 *
 * Why not a JSON merge patch of the whole status: it replaces `conditions` wholesale, dropping a
 * condition someone else (a readiness-gate controller) added between our read and our write. A
 * strategic merge patch merges `conditions` by `type`, so only the conditions we change are touched.
 */
import { isDeepStrictEqual } from 'node:util';
import type { PodCondition, PodStatus } from '../api/types.ts';
import { isKubeletOwnedCondition } from './conditions.ts';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

/**
 * Lists of core/v1 PodStatus with patchStrategy=merge, and their merge keys. Every other list
 * (containerStatuses, initContainerStatuses, ephemeralContainerStatuses) has no patch strategy
 * upstream: it is atomic, so a changed one is sent whole and replaces the server's.
 */
const POD_STATUS_MERGE_KEYS: Readonly<Record<string, string>> = {
  conditions: 'type',
  podIPs: 'ip',
  hostIPs: 'ip',
};

export interface PodStatusPatch {
  metadata: { uid: string };
  status: JsonObject;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function toJson(v: unknown): Json {
  return JSON.parse(JSON.stringify(v ?? null)) as Json;
}

/** One field of a diff into `patch`: `m` when new or changed, the nested diff of two maps, nothing when equal. */
function diffField(patch: JsonObject, k: string, o: Json | undefined, m: Json): void {
  if (o === undefined || o === null) {
    if (m !== null) patch[k] = m;
  } else if (isObject(o) && isObject(m)) {
    const d = diffObject(o, m);
    if (d !== undefined) patch[k] = d;
  } else if (!isDeepStrictEqual(o, m)) {
    patch[k] = m;
  }
}

/** Field-by-field diff of two maps: changed and new fields, `null` for removed ones. */
function diffObject(original: JsonObject, modified: JsonObject): JsonObject | undefined {
  const patch: JsonObject = {};
  for (const [k, m] of Object.entries(modified)) diffField(patch, k, original[k], m);
  for (const [k, o] of Object.entries(original)) {
    if (!(k in modified) && o !== null) patch[k] = null;
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/**
 * Diff of a merge-keyed list (upstream diffListsOfMaps): new elements whole, changed ones as their
 * key plus changed fields, removed ones as `$patch: delete`. Undefined when nothing changed.
 */
function diffMergeList(original: Json[], modified: Json[], key: string): Json[] | undefined {
  const keyOf = (e: Json): Json | undefined => (isObject(e) ? e[key] : undefined);
  const out: Json[] = [];
  for (const m of modified) {
    const o = original.find((e) => isDeepStrictEqual(keyOf(e), keyOf(m)));
    if (o === undefined || !isObject(o) || !isObject(m)) {
      if (o === undefined || !isDeepStrictEqual(o, m)) out.push(m);
      continue;
    }
    const d = diffObject(o, m);
    if (d !== undefined) out.push({ [key]: keyOf(m) ?? null, ...d });
  }
  for (const o of original) {
    if (!modified.some((m) => isDeepStrictEqual(keyOf(m), keyOf(o))))
      out.push({ [key]: keyOf(o) ?? null, $patch: 'delete' });
  }
  return out.length > 0 ? out : undefined;
}

/** Upstream isOrderSame: the same keys at the same positions. */
function sameOrder(original: Json[], modified: Json[], key: string): boolean {
  const keyOf = (e: Json): Json | undefined => (isObject(e) ? e[key] : e);
  return (
    original.length === modified.length &&
    original.every((e, i) => isDeepStrictEqual(keyOf(e), keyOf(modified[i]!)))
  );
}

/**
 * The `status` part of upstream's CreateTwoWayMergePatch(original, modified, v1.Pod{}). One
 * deliberate difference: a top-level status field present in `base` but absent from `next` is
 * left alone rather than deleted — the kubelet never drops a field it once wrote, and fields it
 * does not write (nominatedNodeName, fields newer than our API level) are someone else's.
 */
function diffStatus(base: JsonObject, next: JsonObject): JsonObject {
  const patch: JsonObject = {};
  for (const [k, m] of Object.entries(next)) {
    const o = base[k];
    const key = POD_STATUS_MERGE_KEYS[k];
    if (key !== undefined && Array.isArray(m) && (o === undefined || o === null || Array.isArray(o))) {
      const original = o ?? [];
      const d = diffMergeList(original, m, key);
      if (d !== undefined || !sameOrder(original, m, key)) {
        if (d !== undefined) patch[k] = d;
        patch[`$setElementOrder/${k}`] = m.map((e) => (isObject(e) ? { [key]: e[key] ?? null } : e));
      }
    } else {
      diffField(patch, k, o, m);
    }
  }
  return patch;
}

/**
 * The patch turning `base` (the status the API has, as far as we know) into `next`, for the pod
 * with UID `podUID` (sent as `metadata.uid`: the server refuses the patch with a 409 Conflict when
 * the name now belongs to another pod). Undefined when `next` changes nothing.
 */
export function podStatusPatch(
  base: PodStatus | undefined,
  next: PodStatus,
  podUID: string,
): PodStatusPatch | undefined {
  const o = toJson(base ?? {});
  const m = toJson(next);
  if (!isObject(o) || !isObject(m)) throw new TypeError('podStatusPatch: objects expected');
  const status = diffStatus(o, m);
  if (Object.keys(status).length === 0) return undefined;
  return { metadata: { uid: podUID }, status };
}

/**
 * Upstream mergePodStatus: the status to write is ours, except that conditions the kubelet does not
 * own are the API's, untouched (first, in the API's order), followed by ours. So the patch never
 * changes, removes or resurrects someone else's condition, even when our copy of the pod is stale.
 */
export function mergePodStatusForApi(api: PodStatus | undefined, ours: PodStatus): PodStatus {
  if (ours.conditions === undefined) return ours;
  const theirs: PodCondition[] = (api?.conditions ?? []).filter((c) => !isKubeletOwnedCondition(c.type));
  const owned = ours.conditions.filter((c) => isKubeletOwnedCondition(c.type));
  return { ...ours, conditions: [...theirs, ...owned] };
}
