/**
 * Reading a KubeletConfiguration file: YAML/JSON parsing, then a schema check driven by the field
 * table (`fields.ts`): known fields and their kinds, nested objects, upstream fields accepted with
 * a warning, unknown fields refused, relative paths resolved against the file's directory.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { MAX_YAML_TEXT_DEPTH, yamlTooDeepAt } from '../api/nesting.ts';
import { KubeletError, describeError, type ErrorCode } from '../util/errors.ts';
import { ALL_FIELDS, type FieldKind, type KindValues } from './fields.ts';
import { NOT_IMPLEMENTED } from './not-implemented.ts';
import {
  KUBELET_CONFIG_API_VERSION,
  KUBELET_CONFIG_KIND,
  type DecodedConfigFile,
  type RawKubeletConfiguration,
  type RawTaint,
} from './raw.ts';

/**
 * Reads a KubeletConfiguration file (YAML 1.2 or JSON). Throws `KubeletError` with op
 * `load config <path>`: `NotFound` when the file is missing, `InvalidArgument` for a syntax error
 * (with file:line:column), a wrong apiVersion/kind, an unknown field or a field of the wrong type
 * (every field problem is listed, each naming its field).
 */
export async function loadConfigFile(filePath: string): Promise<DecodedConfigFile> {
  const op = `load config ${filePath}`;
  let text: string;
  try {
    text = await readFile(filePath, 'utf8');
  } catch (err) {
    const code: ErrorCode = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'NotFound' : 'InvalidArgument';
    throw new KubeletError(code, op, describeError(err), { cause: err });
  }
  // The YAML parser recurses per level and runs out of stack somewhere past 1,000 levels (a
  // RangeError, or "Maximum call stack size exceeded" at whichever node it was in).
  const deep = yamlTooDeepAt(text);
  if (deep) {
    throw new KubeletError(
      'InvalidArgument',
      op,
      `line ${deep.line}, column ${deep.col}: nested more than ${MAX_YAML_TEXT_DEPTH} levels deep; no KubeletConfiguration field is`,
    );
  }
  const lineCounter = new LineCounter();
  let doc: ReturnType<typeof parseDocument>;
  try {
    doc = parseDocument(text, { strict: true, uniqueKeys: true, prettyErrors: false, lineCounter });
  } catch (err) {
    throw new KubeletError('InvalidArgument', op, `cannot parse the file: ${describeError(err)}`, {
      cause: err,
    });
  }
  const [firstError] = doc.errors;
  if (firstError) {
    const { line, col } = lineCounter.linePos(firstError.pos[0]);
    throw new KubeletError('InvalidArgument', op, `line ${line}, column ${col}: ${firstError.message}`, {
      cause: firstError,
    });
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new KubeletError('InvalidArgument', op, describeError(err), { cause: err });
  }
  const decoded = decodeKubeletConfiguration(value, filePath);
  const yamlWarnings = doc.warnings.map((w) => {
    const { line, col } = lineCounter.linePos(w.pos[0]);
    return `${filePath}:${line}:${col}: ${w.message}`;
  });
  return { ...decoded, warnings: [...yamlWarnings, ...decoded.warnings] };
}

/** Top-level fields and nested objects (`logging`, `authentication.webhook`, …) by dotted path. */
const KNOWN_CHILDREN = childrenByParent([
  ...ALL_FIELDS.flatMap(({ spec }) => (spec.file ? [spec.file] : [])),
]);
const NOT_IMPLEMENTED_CHILDREN = childrenByParent(NOT_IMPLEMENTED.flatMap((n) => (n.field ? [n.field] : [])));

function childrenByParent(paths: readonly string[]): ReadonlyMap<string, ReadonlySet<string>> {
  const out = new Map<string, Set<string>>();
  for (const p of paths) {
    const segments = p.split('.');
    segments.forEach((segment, i) => {
      const parent = segments.slice(0, i).join('.');
      let children = out.get(parent);
      if (!children) out.set(parent, (children = new Set()));
      children.add(segment);
    });
  }
  return out;
}

/**
 * Checks a parsed document against the schema and returns the fields we implement. `filePath`
 * names the source in errors and is the base for relative paths in the file.
 */
export function decodeKubeletConfiguration(doc: unknown, filePath: string): DecodedConfigFile {
  const op = `load config ${filePath}`;
  if (!isPlainObject(doc)) {
    throw new KubeletError(
      'InvalidArgument',
      op,
      `expected a ${KUBELET_CONFIG_KIND} object, got ${typeName(doc)}`,
    );
  }
  const errors: string[] = [];
  const warnings: string[] = [];

  const { apiVersion, kind } = doc;
  if (apiVersion === undefined) {
    errors.push(`missing field "apiVersion" (want "${KUBELET_CONFIG_API_VERSION}")`);
  } else if (apiVersion !== KUBELET_CONFIG_API_VERSION) {
    errors.push(
      `apiVersion ${JSON.stringify(apiVersion)} is not supported (want "${KUBELET_CONFIG_API_VERSION}")`,
    );
  }
  if (kind === undefined) {
    errors.push(`missing field "kind" (want "${KUBELET_CONFIG_KIND}")`);
  } else if (kind !== KUBELET_CONFIG_KIND) {
    errors.push(`kind ${JSON.stringify(kind)} is not supported (want "${KUBELET_CONFIG_KIND}")`);
  }

  const raw: Record<string, unknown> = {};
  /** Each nested object by path: where it is in the document and in `raw`; undefined when absent. */
  const objects = new Map<string, { doc: Record<string, unknown>; raw: Record<string, unknown> } | undefined>(
    [['', { doc, raw }]],
  );
  checkKeys(doc, '', errors, warnings, filePath);
  const open = (
    objectPath: string,
  ): { doc: Record<string, unknown>; raw: Record<string, unknown> } | undefined => {
    if (objects.has(objectPath)) return objects.get(objectPath);
    const dot = objectPath.lastIndexOf('.');
    const parent = open(dot < 0 ? '' : objectPath.slice(0, dot));
    const key = objectPath.slice(dot + 1);
    const value = parent?.doc[key];
    let opened: { doc: Record<string, unknown>; raw: Record<string, unknown> } | undefined;
    if (parent && value !== undefined && value !== null) {
      if (isPlainObject(value)) {
        checkKeys(value, `${objectPath}.`, errors, warnings, filePath);
        opened = { doc: value, raw: {} };
        parent.raw[key] = opened.raw;
      } else {
        errors.push(`field "${objectPath}": expected an object, got ${objectTypeName(objectPath, value)}`);
      }
    }
    objects.set(objectPath, opened);
    return opened;
  };

  for (const { spec } of ALL_FIELDS) {
    if (!spec.file) continue;
    const dot = spec.file.lastIndexOf('.');
    const parentPath = dot < 0 ? '' : spec.file.slice(0, dot);
    const parent = open(parentPath);
    if (!parent) continue;
    const key = spec.file.slice(dot + 1);
    const value = new FieldReader(parent.doc, errors, parentPath ? `${parentPath}.` : '').read(
      spec.kind,
      key,
    );
    if (value !== undefined) parent.raw[key] = value;
  }
  if (errors.length > 0) throw new KubeletError('InvalidArgument', op, errors.join('; '));

  // Upstream resolves relative paths in the file against the file's directory.
  const baseDir = path.dirname(path.resolve(filePath));
  for (const { spec } of ALL_FIELDS) {
    if (!spec.file || !spec.relativeToFile) continue;
    const dot = spec.file.lastIndexOf('.');
    const parent = objects.get(dot < 0 ? '' : spec.file.slice(0, dot))?.raw;
    const key = spec.file.slice(dot + 1);
    const value = parent?.[key];
    if (parent && typeof value === 'string' && value !== '' && !path.isAbsolute(value)) {
      parent[key] = path.resolve(baseDir, value);
    }
  }
  // Every value was read by the reader of its row's kind; the rows' paths are RawKubeletConfiguration's.
  const decoded: RawKubeletConfiguration = raw;
  return { path: filePath, raw: decoded, warnings };
}

/** Fields of one object: known, upstream-but-not-implemented (a warning), or unknown (an error). */
function checkKeys(
  obj: Record<string, unknown>,
  prefix: string,
  errors: string[],
  warnings: string[],
  filePath: string,
): void {
  const parent = prefix.slice(0, -1);
  const known = KNOWN_CHILDREN.get(parent);
  const ignored = NOT_IMPLEMENTED_CHILDREN.get(parent);
  for (const key of Object.keys(obj)) {
    if (prefix === '' && (key === 'apiVersion' || key === 'kind')) continue;
    if (known?.has(key)) continue;
    if (ignored?.has(key)) {
      warnings.push(
        `${filePath}: field "${prefix}${key}" is not implemented by tskubelet yet and is ignored`,
      );
    } else {
      errors.push(`unknown field "${prefix}${key}"`);
    }
  }
}

/** Reads typed fields of one object, recording a message naming the field for each wrong type. */
class FieldReader {
  readonly #obj: Record<string, unknown>;
  readonly #errors: string[];
  readonly #prefix: string;

  constructor(obj: Record<string, unknown>, errors: string[], prefix = '') {
    this.#obj = obj;
    this.#errors = errors;
    this.#prefix = prefix;
  }

  read<K extends FieldKind>(kind: K, key: string): KindValues[K] | undefined;
  read(kind: FieldKind, key: string): KindValues[FieldKind] | undefined {
    switch (kind) {
      case 'string':
        return this.#take(key, 'a string', (v): v is string => typeof v === 'string');
      case 'bool':
        return this.#take(key, 'a boolean', (v): v is boolean => typeof v === 'boolean');
      case 'int32':
        return this.#take(
          key,
          'an integer',
          (v): v is number => typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31,
        );
      case 'int64':
        return this.#take(
          key,
          'an integer',
          (v): v is number => typeof v === 'number' && Number.isSafeInteger(v),
        );
      case 'duration':
        // metav1.Duration: a Go duration string, never a number. Syntax is checked when compiling.
        return this.#take(
          key,
          'a duration string such as "1m30s"',
          (v): v is string => typeof v === 'string',
        );
      case 'stringList':
        return this.#stringList(key);
      case 'headerMap':
        return this.#headerMap(key);
      case 'taints':
        return this.#taints(key);
      case 'labels':
        throw new Error(`field ${this.#prefix}${key}: labels are a flag-only kind`);
      case 'stringMap':
      case 'thresholdMap':
        return this.#stringMap(key);
      case 'boolMap':
        return this.#boolMap(key);
    }
  }

  #boolMap(key: string): Record<string, boolean> | undefined {
    const value = this.#obj[key];
    if (value === undefined || value === null) return undefined;
    if (!isPlainObject(value) || !Object.values(value).every((v) => typeof v === 'boolean')) {
      this.#wrong(key, 'a map of string to boolean', value);
      return undefined;
    }
    const out: Record<string, boolean> = {};
    for (const [name, on] of Object.entries(value)) {
      // defineProperty: a gate named `__proto__` must stay a key (and then fail as unknown).
      Object.defineProperty(out, name, { value: on, enumerable: true, writable: true, configurable: true });
    }
    return out;
  }

  #stringList(key: string): string[] | undefined {
    const value = this.#obj[key];
    if (value === undefined || value === null) return undefined;
    if (Array.isArray(value) && value.every((v): v is string => typeof v === 'string')) return [...value];
    this.#wrong(key, 'a list of strings', value);
    return undefined;
  }

  #stringMap(key: string): Record<string, string> | undefined {
    const value = this.#obj[key];
    if (value === undefined || value === null) return undefined;
    if (!isPlainObject(value) || !Object.values(value).every((v) => typeof v === 'string')) {
      this.#wrong(key, 'a map of string to string', value);
      return undefined;
    }
    return { ...(value as Record<string, string>) };
  }

  #headerMap(key: string): Record<string, string[]> | undefined {
    const value = this.#obj[key];
    if (value === undefined || value === null) return undefined;
    if (!isPlainObject(value)) {
      this.#wrong(key, 'a map of header name to a list of strings', value);
      return undefined;
    }
    const out: Record<string, string[]> = {};
    let ok = true;
    for (const [name, values] of Object.entries(value)) {
      if (Array.isArray(values) && values.every((v) => typeof v === 'string')) {
        // defineProperty: a header named `__proto__` must stay a key, not become the prototype.
        Object.defineProperty(out, name, {
          value: [...values],
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else {
        this.#wrong(`${key}.${name}`, 'a list of strings', values);
        ok = false;
      }
    }
    return ok ? out : undefined;
  }

  /** []core/v1.Taint; `timeAdded` is refused (upstream validation does the same). */
  #taints(key: string): RawTaint[] | undefined {
    const value = this.#obj[key];
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) {
      this.#wrong(key, 'a list of taints ({key, value, effect})', value);
      return undefined;
    }
    const out: RawTaint[] = [];
    let ok = true;
    value.forEach((item: unknown, i) => {
      const at = `${key}[${i}]`;
      if (!isPlainObject(item)) {
        this.#wrong(at, 'a taint ({key, value, effect})', item);
        ok = false;
        return;
      }
      const before = this.#errors.length;
      for (const sub of Object.keys(item)) {
        if (sub === 'timeAdded') {
          this.#errors.push(`field "${this.#prefix}${at}.timeAdded": must not be set`);
        } else if (sub !== 'key' && sub !== 'value' && sub !== 'effect') {
          this.#errors.push(`unknown field "${this.#prefix}${at}.${sub}"`);
        }
      }
      const r = new FieldReader(item, this.#errors, `${this.#prefix}${at}.`);
      const taint: RawTaint = {
        key: r.read('string', 'key') ?? '',
        effect: r.read('string', 'effect') ?? '',
      };
      const taintValue = r.read('string', 'value');
      if (taintValue !== undefined) taint.value = taintValue;
      if (this.#errors.length > before) ok = false;
      else out.push(taint);
    });
    return ok ? out : undefined;
  }

  #take<T>(key: string, want: string, is: (v: unknown) => v is T): T | undefined {
    const value = this.#obj[key];
    // As in Go's JSON decoding, an explicit null leaves the field unset.
    if (value === undefined || value === null) return undefined;
    if (is(value)) return value;
    this.#wrong(key, want, value);
    return undefined;
  }

  #wrong(key: string, want: string, got: unknown): void {
    this.#errors.push(
      `field "${this.#prefix}${key}": expected ${want}, got ${typeName(got)} ${preview(got)}`,
    );
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'object') return 'map';
  if (typeof v === 'number' && !Number.isInteger(v)) return 'number';
  return typeof v;
}

/** Word for word what the two decoders this replaced said (`logging` had its own). */
function objectTypeName(objectPath: string, v: unknown): string {
  if (objectPath === 'logging') return typeName(v);
  return Array.isArray(v) ? 'a list' : typeof v;
}

function preview(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}
