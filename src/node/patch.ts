/**
 * Strategic merge patches for the Node status subresource (upstream nodeutil.PatchNodeStatus:
 * a two-way patch from the node as read to the node as computed, spec excluded).
 *
 * A small two-way diff that knows the Node's merge-keyed lists; any other list is replaced as a
 * whole, maps are merged key by key (null deletes a key), scalars are replaced.
 */
import type { Node } from './types.ts';
import { isDeepStrictEqual } from 'node:util';
import { deepEqual } from '../util/json.ts';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

/**
 * Lists merged by a key (patchStrategy=merge, patchMergeKey) in core/v1 Node, by JSON path. Not
 * spec.taints: it has no patch strategy (atomic), and a `$setElementOrder/taints` makes a 1.20 API
 * server panic (it compares the order list's maps without a merge key).
 */
const NODE_MERGE_KEYS: Record<string, string> = {
  'metadata.ownerReferences': 'uid',
  'status.conditions': 'type',
  'status.addresses': 'type',
};

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function toJson(v: unknown): Json {
  return JSON.parse(JSON.stringify(v ?? null)) as Json;
}

type ListDiff = { kind: 'merge'; items: Json[] } | { kind: 'replace' } | undefined;

/**
 * The patch items of a merge-keyed list. When a key is missing or repeated (e.g. two taints or
 * two addresses of one type) items cannot be matched by key: the list is compared whole and, if it
 * changed, replaced whole.
 */
function diffList(original: Json[], modified: Json[], mergeKey: string, path: string): ListDiff {
  const keyOf = (e: Json): Json | undefined => (isObject(e) ? e[mergeKey] : undefined);
  const keyed = (l: Json[]) =>
    l.every((e) => keyOf(e) !== undefined) &&
    new Set(l.map((e) => JSON.stringify(keyOf(e)))).size === l.length;
  if (!keyed(original) || !keyed(modified)) {
    return isDeepStrictEqual(original, modified) ? undefined : { kind: 'replace' };
  }
  const out: Json[] = [];
  for (const m of modified) {
    const o = original.find((e) => keyOf(e) === keyOf(m));
    if (o === undefined) {
      out.push(m);
      continue;
    }
    const d = diffObject(o as JsonObject, m as JsonObject, path);
    if (d !== undefined) out.push({ [mergeKey]: keyOf(m) ?? null, ...d });
  }
  for (const o of original) {
    if (!modified.some((m) => keyOf(m) === keyOf(o))) {
      out.push({ [mergeKey]: keyOf(o) ?? null, $patch: 'delete' });
    }
  }
  return out.length > 0 ? { kind: 'merge', items: out } : undefined;
}

function diffObject(original: JsonObject, modified: JsonObject, path: string): JsonObject | undefined {
  const patch: JsonObject = {};
  for (const [k, m] of Object.entries(modified)) {
    const o = original[k];
    const p = path === '' ? k : `${path}.${k}`;
    if (o === undefined || o === null) {
      if (m !== null) patch[k] = m;
      continue;
    }
    if (isObject(o) && isObject(m)) {
      const d = diffObject(o, m, p);
      if (d !== undefined) patch[k] = d;
      continue;
    }
    if (Array.isArray(o) && Array.isArray(m)) {
      const mergeKey = NODE_MERGE_KEYS[p];
      if (mergeKey === undefined) {
        if (!isDeepStrictEqual(o, m)) patch[k] = m;
        continue;
      }
      const d = diffList(o, m, mergeKey, p);
      if (d?.kind === 'replace') {
        patch[k] = [...m, { $patch: 'replace' }];
      } else if (d?.kind === 'merge') {
        patch[`$setElementOrder/${k}`] = m.map((e) =>
          isObject(e) ? { [mergeKey]: e[mergeKey] ?? null } : e,
        );
        patch[k] = d.items;
      }
      continue;
    }
    if (!isDeepStrictEqual(o, m)) patch[k] = m;
  }
  for (const k of Object.keys(original)) {
    if (!(k in modified) && original[k] !== null) patch[k] = null;
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** A two-way strategic merge patch turning `original` into `modified` ({} when equal). */
export function twoWayMergePatch(original: unknown, modified: unknown): JsonObject {
  const o = toJson(original);
  const m = toJson(modified);
  if (!isObject(o) || !isObject(m)) throw new TypeError('twoWayMergePatch: objects expected');
  return diffObject(o, m, '') ?? {};
}

/**
 * The patch for `PATCH /api/v1/nodes/<name>/status` (upstream preparePatchBytesforNodeStatus):
 * spec is never part of it, and changed addresses replace the list whole — status.addresses is
 * declared merge-by-type upstream, which would keep a stale address of the same type.
 */
export function nodeStatusPatch(original: Node, modified: Node): JsonObject {
  const oldAddresses = original.status?.addresses ?? [];
  const manualAddresses =
    oldAddresses.length > 0 && !deepEqual(oldAddresses, modified.status?.addresses ?? []);
  const diffNode: Node = { ...modified, spec: original.spec };
  if (original.spec === undefined) delete diffNode.spec;
  if (manualAddresses) diffNode.status = { ...modified.status, addresses: oldAddresses };
  const patch = twoWayMergePatch(original, diffNode);
  if (manualAddresses) {
    const status = isObject(patch['status']) ? patch['status'] : {};
    delete status['$setElementOrder/addresses'];
    status['addresses'] = [...toJsonList(modified.status?.addresses), { $patch: 'replace' }];
    patch['status'] = status;
  }
  return patch;
}

function toJsonList(v: unknown): Json[] {
  const j = toJson(v ?? []);
  return Array.isArray(j) ? j : [];
}
