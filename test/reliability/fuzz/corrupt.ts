/**
 * Targeted corruption of a valid pod: one field, chosen among every field the pod has, is broken in
 * one way, and the generator says what a kubelet must do about it (an {@link Expectation}):
 * - a wrong JSON type for a field tskubelet types (src/api/types.ts): refused, naming the field
 *   (upstream's decoder refuses every wrong type; tskubelet's shape check is its decoder);
 * - an invalid value upstream validation refuses (bad names, ports, enums, negative periods…):
 *   refused naming the field, for static pods (API pods were validated by the API server, so the
 *   kubelet may take them as they are);
 * - anything else (huge strings, odd numbers, deep nesting, huge lists, a field removed or set to
 *   null, an unknown field): either outcome, but a refusal must name the field or its parent.
 */
import fc from 'fast-check';
import type { Expectation } from './harness.ts';
import type { Json, JsonObj } from './pod-arbitrary.ts';

export type Seg = string | number;

export interface Corrupted {
  doc: Json;
  expect: Expectation;
}

/** Renders a path as the kubelet's field errors spell it (`spec.containers[0].ports[1].name`). */
export function renderPath(path: readonly Seg[]): string {
  let out = '';
  for (const s of path) out = typeof s === 'number' ? `${out}[${s}]` : out ? `${out}.${s}` : s;
  return out;
}

interface Leaf {
  path: Seg[];
  value: Json;
}

/** Every field of `doc` (objects, lists and scalars), depth first; not the root. */
export function fieldsOf(doc: Json, path: Seg[] = [], out: Leaf[] = []): Leaf[] {
  if (Array.isArray(doc)) {
    doc.forEach((v, i) => {
      out.push({ path: [...path, i], value: v });
      fieldsOf(v, [...path, i], out);
    });
  } else if (doc !== null && typeof doc === 'object') {
    for (const [k, v] of Object.entries(doc)) {
      out.push({ path: [...path, k], value: v });
      fieldsOf(v, [...path, k], out);
    }
  }
  return out;
}

function clone<T extends Json>(v: T): T {
  return structuredClone(v);
}

/** Sets (or with `undefined`, deletes) the value at `path` in place. */
export function setAt(doc: Json, path: readonly Seg[], value: Json | undefined): void {
  let at: Json = doc;
  for (const s of path.slice(0, -1)) at = (at as Record<string, Json>)[s as string] as Json;
  const last = path.at(-1) as Seg;
  if (Array.isArray(at) && typeof last === 'number') {
    if (value === undefined) at.splice(last, 1);
    else at[last] = value;
  } else {
    const o = at as JsonObj;
    if (value === undefined) delete o[last];
    else o[last] = value;
  }
}

/** The parent path an error may name instead of the field itself. */
function parentOf(path: readonly Seg[]): string {
  return renderPath(path.slice(0, -1));
}

const VOLUME_TYPED = new Set(['name', 'emptyDir', 'hostPath']);

/**
 * Whether tskubelet's types claim this field (so a wrong JSON type must be refused) or carry it
 * untyped (`unknown` in src/api/types.ts: volume sources other than emptyDir/hostPath, the inside
 * of env `valueFrom` and of `envFrom` items, podAffinity and preferred node affinity), which the
 * kubelet checks where it uses them.
 */
export function isTyped(path: readonly Seg[]): boolean {
  const p = path.map(String);
  const vi = p.indexOf('volumes');
  if (p[0] === 'spec' && vi === 1 && p.length > 3 && !VOLUME_TYPED.has(p[3] ?? '')) return false;
  const vf = p.indexOf('valueFrom');
  if (vf >= 0 && p.length > vf + 1) return false;
  const ef = p.indexOf('envFrom');
  if (ef >= 0 && p.length > ef + 1) return false;
  if (p.includes('podAffinity') || p.includes('podAntiAffinity')) return false;
  if (p.includes('preferredDuringSchedulingIgnoredDuringExecution')) return false;
  return true;
}

function isQuantity(path: readonly Seg[]): boolean {
  const p = path.map(String);
  const parent = p.at(-2);
  return (
    parent === 'limits' ||
    parent === 'requests' ||
    parent === 'overhead' ||
    p.at(-1) === 'sizeLimit' ||
    p.at(-1) === 'divisor'
  );
}

function isIntOrString(path: readonly Seg[]): boolean {
  const p = path.map(String);
  return p.at(-1) === 'port' && (p.at(-2) === 'httpGet' || p.at(-2) === 'tcpSocket');
}

type Kind = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'null';
function kindOf(v: Json): Kind {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v as Kind;
}

const SAMPLES: Record<Exclude<Kind, 'null'>, Json[]> = {
  string: ['x', '42', 'true', ''],
  number: [42, 0, -7, 1.5],
  boolean: [true, false],
  object: [{}, { x: 1 }],
  array: [[], ['x'], [1, 2]],
};

/** Values of another JSON type than `v` that a decoder of the field's type must refuse. */
function wrongTypes(path: readonly Seg[], v: Json): Json[] {
  let kinds: Kind[] = [kindOf(v)];
  if (isIntOrString(path) || isQuantity(path)) kinds = ['string', 'number'];
  const out: Json[] = [];
  for (const [k, samples] of Object.entries(SAMPLES) as [Exclude<Kind, 'null'>, Json[]][]) {
    if (kinds.includes(k)) continue;
    // An empty list or object where the other is expected is still the wrong type, but YAML
    // renders them alike only in flow style; keep them.
    out.push(...samples);
  }
  // A fraction where an integer is expected is refused too (int32/int64 fields).
  if (kindOf(v) === 'number' && Number.isInteger(v) && !isQuantity(path) && !isIntOrString(path)) {
    out.push(2.5);
  }
  return out;
}

/** Invalid values upstream validation refuses, for the fields it checks. */
function invalidValues(path: readonly Seg[], doc: Json): { value: Json; names?: string[] }[] {
  const p = path.map(String);
  const last = p.at(-1) ?? '';
  const parent = p.at(-2) ?? '';
  const joined = p.join('.');
  const inContainer = p[1] === 'containers' || p[1] === 'initContainers';
  if (joined === 'metadata.name') return [{ value: 'Bad_Name!' }, { value: 'x'.repeat(300) }];
  if (joined === 'metadata.namespace') return [{ value: 'Bad_NS' }, { value: 'n'.repeat(64) }];
  if (joined === 'spec.hostname' || joined === 'spec.subdomain') return [{ value: 'Bad.Host' }];
  if (joined === 'spec.restartPolicy' || joined === 'spec.dnsPolicy') return [{ value: 'Sometimes' }];
  if (joined === 'spec.terminationGracePeriodSeconds') return [{ value: -1 }];
  if (joined === 'spec.activeDeadlineSeconds') return [{ value: 0 }, { value: -5 }];
  if (joined === 'spec.containers') return [{ value: [] }];
  if (p[0] === 'spec' && inContainer && p.length === 4 && last === 'name') {
    const list = (doc as { spec: Record<string, Json[]> }).spec[p[1] ?? ''] ?? [];
    const others = [
      ...((doc as { spec: Record<string, Json[]> }).spec.containers ?? []),
      ...((doc as { spec: Record<string, Json[]> }).spec.initContainers ?? []),
    ]
      .map((c) => (c as JsonObj).name)
      .filter((n) => n !== (list[Number(p[2])] as JsonObj | undefined)?.name);
    const dup = others[0];
    return [
      { value: 'Bad_Name' },
      { value: '' },
      { value: 'c'.repeat(64) },
      // A duplicate is reported at whichever of the two comes later.
      ...(typeof dup === 'string' ? [{ value: dup, names: ['Duplicate value'] }] : []),
    ];
  }
  if (inContainer && p.length === 4 && last === 'image') return [{ value: '' }, { value: ' busybox' }];
  if (inContainer && (last === 'imagePullPolicy' || last === 'terminationMessagePolicy'))
    return [{ value: 'Sometimes' }];
  if (parent !== '' && p.at(-3) === 'ports') {
    if (last === 'containerPort') return [{ value: 0 }, { value: -1 }, { value: 65536 }];
    if (last === 'hostPort') return [{ value: 65536 }, { value: -3 }];
    if (last === 'protocol') return [{ value: 'XTP' }];
    if (last === 'name') return [{ value: 'Bad_Port' }, { value: 'p'.repeat(16) }, { value: '123' }];
  }
  if (
    /Probe$/.test(parent) &&
    ['periodSeconds', 'timeoutSeconds', 'failureThreshold', 'initialDelaySeconds'].includes(last)
  )
    return [{ value: -1 }];
  if ((parent === 'livenessProbe' || parent === 'startupProbe') && last === 'successThreshold')
    return [{ value: 2 }];
  if (last === 'scheme' && parent === 'httpGet') return [{ value: 'FTP' }];
  if (p[1] === 'volumes' && p.length === 4 && last === 'name')
    return [{ value: 'Bad_Vol', names: [renderPath(path), 'volumeMounts'] }];
  if (p.at(-3) === 'volumeMounts' && last === 'name') return [{ value: 'no-such-volume' }];
  if (p.at(-3) === 'volumeMounts' && last === 'mountPath') return [{ value: '' }];
  if (p.at(-3) === 'tolerations' && (last === 'operator' || last === 'effect')) return [{ value: 'Maybe' }];
  if (p.at(-3) === 'env' && last === 'name') return [{ value: '' }, { value: 'A=B' }];
  if (joined.startsWith('metadata.labels.') && p.length === 3) return [{ value: 'bad value!' }];
  if (last === 'path' && parent === 'hostPath') return [{ value: '' }];
  return [];
}

/** A string of `n` characters, mostly printable, with some multi-byte and control characters. */
function hugeString(n: number): string {
  const unit = 'aé\u{1F600}\t"\\:#-{}[]&*!|>\'%@`';
  return unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
}

export interface CorruptOptions {
  /** Static pods are validated; API pods only decoded. */
  validated: boolean;
  /** How deep nesting is rendered: a sentinel replaced in the text, or a real nested value. */
  deep: 'sentinel' | 'value';
}

/** The sentinel a text renderer replaces with `depth` nested lists. */
export function deepSentinel(depth: number): string {
  return `__DEEP_${depth}__`;
}

function nested(depth: number): Json {
  let v: Json = [];
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

type Mutation = (doc: Json) => Corrupted;

/** The ways to break the field at `leaf` of `doc`. */
function mutations(doc: Json, leaf: Leaf, opts: CorruptOptions): fc.Arbitrary<Mutation> {
  const here = renderPath(leaf.path);
  // A volume renamed or removed is reported where a container mounts it.
  const mounted = leaf.path[1] === 'volumes' ? ['volumeMounts'] : [];
  const names = [here, parentOf(leaf.path), ...mounted].filter((n) => n !== '');
  const typed = isTyped(leaf.path);
  const set =
    (value: Json | undefined, expect: Omit<Expectation, 'what'>, what: string): Mutation =>
    (d) => {
      const out = clone(d);
      setAt(out, leaf.path, value);
      return { doc: out, expect: { ...expect, what: `${here} ${what}` } };
    };
  const options: fc.Arbitrary<Mutation>[] = [];
  // The top-level kind and apiVersion: a manifest for something else.
  if (leaf.path.length === 1 && (leaf.path[0] === 'kind' || leaf.path[0] === 'apiVersion')) {
    options.push(
      fc
        .constantFrom('Deployment', 'v2', '')
        .map((v) => set(v, { mustReject: opts.validated, names: [here] }, `= ${JSON.stringify(v)}`)),
    );
  }
  const wrong = wrongTypes(leaf.path, leaf.value);
  options.push(
    fc
      .constantFrom(...wrong)
      .map((v) =>
        set(
          v,
          { mustReject: typed, names },
          `= ${JSON.stringify(v)} (wrong type${typed ? '' : ', carried'})`,
        ),
      ),
  );
  const invalid = invalidValues(leaf.path, doc);
  if (invalid.length > 0) {
    options.push(
      fc
        .constantFrom(...invalid)
        .map((x) =>
          set(
            x.value,
            { mustReject: opts.validated, names: x.names ?? names },
            `= ${JSON.stringify(x.value).slice(0, 40)} (invalid)`,
          ),
        ),
    );
  }
  const kind = kindOf(leaf.value);
  if (kind === 'string') {
    options.push(
      fc
        .constantFrom(64 * 1024, 300, 1024 * 1024)
        .map((n) => set(hugeString(n), { mustReject: false, names }, `= <${n}-character string>`)),
      fc
        .constantFrom('\u0000', '\u202e\u0301', 'ä/../..', '${HOME}$(X)', '\ud800', ' \n ')
        .map((s) => set(s, { mustReject: false, names }, `= ${JSON.stringify(s)}`)),
    );
  }
  if (kind === 'number') {
    options.push(
      fc
        .constantFrom(-1, 0, 2 ** 31, -(2 ** 31) - 1, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 1e300)
        .map((n) => set(n, { mustReject: false, names }, `= ${n}`)),
    );
  }
  if (kind === 'array' && Array.isArray(leaf.value) && leaf.value.length > 0) {
    const first = leaf.value[0] as Json;
    options.push(
      fc.constantFrom(1000, 5000).map((n) =>
        set(
          Array.from({ length: n }, () => clone(first)),
          { mustReject: false, names },
          `= ${n} copies of its first item`,
        ),
      ),
    );
  }
  // Removed, or null (which a decoder reads as "not set").
  options.push(
    fc
      .constantFrom(undefined, null)
      .map((v) => set(v, { mustReject: false, names }, v === null ? '= null' : 'removed')),
  );
  // Deeply nested lists in place of the value.
  options.push(
    fc.constantFrom(64, 1000, 20_000).map((depth) =>
      set(
        opts.deep === 'sentinel' ? deepSentinel(depth) : nested(depth),
        // A YAML parser that gives up on the depth cannot say where; "nested" is all it knows.
        { mustReject: false, names: [...names, /nested/] },
        `= ${depth} nested lists`,
      ),
    ),
  );
  // An unknown field next to it (a decoder ignores unknown fields).
  if (kind === 'object') {
    options.push(
      fc.constantFrom<Json>('x', 1, { deep: { er: [1, 2, { x: null }] } }).map((v) => (d: Json) => {
        const out = clone(d);
        const at = leaf.path.reduce<Json>(
          (o, s) => (o as Record<string, Json>)[s as string] as Json,
          out,
        ) as JsonObj;
        at.fuzzUnknownField = v;
        return { doc: out, expect: { mustReject: false, names: [], what: `${here}.fuzzUnknownField added` } };
      }),
    );
  }
  return fc.oneof(...options);
}

/** A valid pod with one field broken, or (1 in 8) left intact. */
export function corruptPod(pod: fc.Arbitrary<JsonObj>, opts: CorruptOptions): fc.Arbitrary<Corrupted> {
  return pod.chain((doc) => {
    const leaves = fieldsOf(doc);
    const intact = fc.constant<Corrupted>({
      doc,
      expect: { what: 'a valid pod', mustReject: false, names: [] },
    });
    const broken = fc
      .integer({ min: 0, max: leaves.length - 1 })
      .chain((i) => mutations(doc, leaves[i] as Leaf, opts))
      .map((m) => m(doc));
    return fc.oneof({ arbitrary: intact, weight: 1 }, { arbitrary: broken, weight: 7 });
  });
}
