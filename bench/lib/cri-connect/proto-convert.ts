/**
 * Between protobuf-es messages (gen/api_pb.ts: enums as numbers, int64 as bigint, bytes as
 * Uint8Array, `$typeName` on every message) and the plain values of types.ts (enums as names,
 * int64 as number, bytes as Buffer, absent message fields missing). One plan per message type,
 * built on first use from the descriptor and reused, so a conversion is a walk over known fields
 * with no reflection per value.
 */
import { ScalarType, type DescEnum, type DescField, type DescMessage } from '@bufbuild/protobuf';

type Obj = Record<string, unknown>;
type Conv = (v: unknown) => unknown;

/** A field of a message plan: its name and how each value (or element, or map value) converts. */
interface Step {
  key: string;
  /** null: the value is copied as it is. */
  conv: Conv | null;
  shape: 'single' | 'message' | 'list' | 'map';
  /** What an absent field becomes on the protobuf side. */
  zero: () => unknown;
}

const is64 = (t: ScalarType): boolean =>
  t === ScalarType.INT64 ||
  t === ScalarType.UINT64 ||
  t === ScalarType.SINT64 ||
  t === ScalarType.FIXED64 ||
  t === ScalarType.SFIXED64;

function scalarZero(t: ScalarType): () => unknown {
  if (is64(t)) return () => 0n;
  switch (t) {
    case ScalarType.STRING:
      return () => '';
    case ScalarType.BOOL:
      return () => false;
    case ScalarType.BYTES:
      return () => new Uint8Array(0);
    default:
      return () => 0;
  }
}

// ---- protobuf-es message → plain value (responses)

const toPlainPlans = new WeakMap<DescMessage, (m: Obj) => Obj>();

function enumToName(e: DescEnum): Conv {
  const names: string[] = [];
  for (const v of e.values) names[v.number] = v.name;
  // An unknown number (a newer runtime) stays a number, as proto-loader passes it.
  return (v) => names[v as number] ?? v;
}

function scalarToPlain(t: ScalarType): Conv | null {
  if (is64(t)) return (v) => Number(v);
  if (t === ScalarType.BYTES) {
    return (v) => {
      const u = v as Uint8Array;
      return Buffer.from(u.buffer, u.byteOffset, u.byteLength);
    };
  }
  return null;
}

function toPlainStep(f: DescField): Step {
  const zero = () => undefined;
  switch (f.fieldKind) {
    case 'scalar':
      return { key: f.localName, conv: scalarToPlain(f.scalar), shape: 'single', zero };
    case 'enum':
      return { key: f.localName, conv: enumToName(f.enum), shape: 'single', zero };
    case 'message':
      return { key: f.localName, conv: toPlainOf(f.message) as Conv, shape: 'message', zero };
    case 'list': {
      const conv =
        f.listKind === 'message'
          ? (toPlainOf(f.message) as Conv)
          : f.listKind === 'enum'
            ? enumToName(f.enum)
            : scalarToPlain(f.scalar);
      return { key: f.localName, conv, shape: 'list', zero };
    }
    case 'map': {
      const conv =
        f.mapKind === 'message'
          ? (toPlainOf(f.message) as Conv)
          : f.mapKind === 'enum'
            ? enumToName(f.enum)
            : scalarToPlain(f.scalar);
      return { key: f.localName, conv, shape: 'map', zero };
    }
  }
}

function convertMapValues(v: Obj, conv: Conv): Obj {
  const out: Obj = {};
  for (const k of Object.keys(v)) out[k] = conv(v[k]);
  return out;
}

/** The converter for one message type (built once, recursively for nested types). */
export function toPlainOf(desc: DescMessage): (m: Obj) => Obj {
  const cached = toPlainPlans.get(desc);
  if (cached) return cached;
  const steps: Step[] = [];
  const fn = (m: Obj): Obj => {
    const out: Obj = {};
    for (const s of steps) {
      const v = m[s.key];
      if (s.shape === 'message') {
        if (v !== undefined) out[s.key] = (s.conv as Conv)(v);
      } else if (s.conv === null) {
        out[s.key] = v;
      } else if (s.shape === 'single') {
        out[s.key] = s.conv(v);
      } else if (s.shape === 'list') {
        out[s.key] = (v as unknown[]).map(s.conv);
      } else {
        out[s.key] = convertMapValues(v as Obj, s.conv);
      }
    }
    return out;
  };
  // Registered before the steps are built, so a type that contains itself terminates.
  toPlainPlans.set(desc, fn);
  for (const f of desc.fields) steps.push(toPlainStep(f));
  return fn;
}

// ---- plain value → protobuf-es message (requests)

const toMessagePlans = new WeakMap<DescMessage, (v: Obj) => Obj>();

function enumToNumber(e: DescEnum): Conv {
  const numbers = new Map<string, number>();
  for (const v of e.values) numbers.set(v.name, v.number);
  return (v) => (typeof v === 'number' ? v : (numbers.get(v as string) ?? 0));
}

function scalarToMessage(t: ScalarType): Conv | null {
  if (is64(t)) return (v) => BigInt(Math.trunc(v as number));
  return null;
}

function toMessageStep(f: DescField): Step {
  switch (f.fieldKind) {
    case 'scalar':
      return {
        key: f.localName,
        conv: scalarToMessage(f.scalar),
        shape: 'single',
        zero: scalarZero(f.scalar),
      };
    case 'enum':
      return { key: f.localName, conv: enumToNumber(f.enum), shape: 'single', zero: () => 0 };
    case 'message':
      return {
        key: f.localName,
        conv: toMessageOf(f.message) as Conv,
        shape: 'message',
        zero: () => undefined,
      };
    case 'list': {
      const conv =
        f.listKind === 'message'
          ? (toMessageOf(f.message) as Conv)
          : f.listKind === 'enum'
            ? enumToNumber(f.enum)
            : scalarToMessage(f.scalar);
      return { key: f.localName, conv, shape: 'list', zero: () => [] };
    }
    case 'map': {
      const conv =
        f.mapKind === 'message'
          ? (toMessageOf(f.message) as Conv)
          : f.mapKind === 'enum'
            ? enumToNumber(f.enum)
            : scalarToMessage(f.scalar);
      return { key: f.localName, conv, shape: 'map', zero: () => ({}) };
    }
  }
}

/**
 * The converter from a plain value to a complete protobuf-es message of one type: every field
 * present (absent ones take the proto3 zero value), so the runtime's `create()` is skipped.
 */
export function toMessageOf(desc: DescMessage): (v: Obj) => Obj {
  const cached = toMessagePlans.get(desc);
  if (cached) return cached;
  const steps: Step[] = [];
  const typeName = desc.typeName;
  const fn = (v: Obj): Obj => {
    const out: Obj = { $typeName: typeName };
    for (const s of steps) {
      const x = v[s.key];
      if (x === undefined || x === null) out[s.key] = s.zero();
      else if (s.conv === null) out[s.key] = x;
      else if (s.shape === 'single' || s.shape === 'message') out[s.key] = s.conv(x);
      else if (s.shape === 'list') out[s.key] = (x as unknown[]).map(s.conv);
      else out[s.key] = convertMapValues(x as Obj, s.conv);
    }
    return out;
  };
  toMessagePlans.set(desc, fn);
  for (const f of desc.fields) steps.push(toMessageStep(f));
  return fn;
}
