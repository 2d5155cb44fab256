/**
 * Fuzzed surface `kubelet-config`: KubeletConfiguration files through the real pipeline —
 * loadConfigFile (YAML/JSON, the field table's schema, unknown fields) → compileConfig (defaults,
 * validation, compile) → the /configz rendering of what was accepted. A file is a valid one (a
 * random subset of the implemented fields at their defaults, in file form) with one field broken:
 * a wrong type (always refused), an odd value of the right type (either way), an unknown field
 * (refused), a wrong apiVersion/kind, a nested object of the wrong type; then perhaps broken as
 * text (syntax errors, duplicate keys, truncation, deep nesting).
 *
 * Anything thrown that is not a KubeletError is a crash; a refusal must name the field's file path
 * (`syncFrequency`, `authentication.webhook.cacheTTL`) or, for a syntax error, its line.
 */
import fc from 'fast-check';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import {
  ALL_FIELDS,
  compileConfig,
  formatGoDuration,
  loadConfigFile,
  type FieldKind,
} from '../../../src/config/index.ts';
import { toKubeletConfiguration } from '../../../src/config/configz.ts';
import { isKubeletError } from '../../../src/util/errors.ts';
import type { FuzzSurface } from '../scenario.ts';
import { runSurface, thrown, type Expectation, type FuzzInput, type Verdict } from './harness.ts';
import { POSITION, duplicateKeyLine } from './manifest-text.ts';
import type { Json, JsonObj } from './pod-arbitrary.ts';

interface ConfigInput extends FuzzInput {
  text: string;
}

interface FileField {
  path: string;
  kind: FieldKind;
  /** The default in file form, when the row has one. */
  value?: Json;
}

const FIELDS: FileField[] = ALL_FIELDS.flatMap(({ spec }) => {
  if (!spec.file) return [];
  const d: unknown = spec.default;
  const value: Json | undefined =
    d === undefined
      ? undefined
      : spec.kind === 'duration'
        ? formatGoDuration(d as number)
        : (structuredClone(d) as Json);
  return [{ path: spec.file, kind: spec.kind, ...(value !== undefined ? { value } : {}) }];
});

function setPath(doc: JsonObj, path: string, value: Json | undefined): void {
  const parts = path.split('.');
  let at: JsonObj = doc;
  for (const p of parts.slice(0, -1)) {
    const next = at[p];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) at[p] = {};
    at = at[p] as JsonObj;
  }
  const last = parts.at(-1) as string;
  if (value === undefined) delete at[last];
  else at[last] = value;
}

/** Values of a type the field's kind is not. */
const WRONG: Record<FieldKind, Json[]> = {
  string: [5, true, [], { a: 'b' }],
  bool: ['yes', 'true', 1, []],
  int32: ['5', 1.5, true, [], 2 ** 31, -(2 ** 31) - 1],
  int64: ['5', 1.5, true, [], 2 ** 60],
  duration: [10, 1.5, true, [], { s: 1 }],
  stringList: ['a', 5, { a: 'b' }, [1], [null]],
  headerMap: [[], 'x', { a: 'x' }, { a: [1] }],
  taints: ['x', {}, [{ key: 5 }], [1], [{ key: 'k', effect: 'NoSchedule', bogus: 1 }]],
  labels: [[], 'x'],
  stringMap: [[], 'x', { a: 5 }, { a: ['x'] }],
  thresholdMap: [[], 'x', { a: 5 }],
  boolMap: [[], 'x', { a: 'true' }, { a: 1 }],
};

/** Odd values of the right type: either outcome, but a refusal names the field. */
const ODD: Record<FieldKind, Json[]> = {
  string: [
    '',
    'x'.repeat(100_000),
    '\u0000',
    '../../etc/passwd',
    'http://[',
    'unix://',
    '0.0.0.0',
    '::1',
    'tcp://1.2.3.4:5',
    ' ',
    'Ä',
  ],
  bool: [false, true],
  int32: [-1, 0, 1, 65535, 65536, 2 ** 31 - 1, -(2 ** 31)],
  int64: [-1, 0, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER],
  duration: [
    '0s',
    '-1s',
    '1.5h',
    'abc',
    '1d',
    '9223372036854775807ns',
    '9999999999h',
    '',
    ' 1s',
    '1h2m3s4ms5us6ns',
    '.5s',
    '1e3s',
  ],
  stringList: [[], ['x'.repeat(10_000)], Array.from({ length: 1000 }, (_, i) => `v${i}`), ['']],
  headerMap: [{}, { '': [''] }, { 'bad header': ['x\r\ny'] }, { a: [] }],
  taints: [
    [],
    [{ key: '', effect: '' }],
    Array.from({ length: 1000 }, (_, i) => ({ key: `k${i}`, effect: 'NoSchedule' })),
    [{ key: 'k', effect: 'Sometimes' }],
  ],
  labels: [{}],
  stringMap: [{}, { '': '' }, { 'a b': 'c' }],
  thresholdMap: [
    {},
    { 'memory.available': '' },
    { 'memory.available': '200%' },
    { 'bogus.signal': '1' },
    { 'nodefs.available': '-5Gi' },
  ],
  boolMap: [{}, { AllAlpha: true }, { Bogus: true }, { NodeLease: false }, { __proto__: true }],
};

const baseConfig: fc.Arbitrary<JsonObj> = fc
  .subarray(FIELDS.filter((f) => f.value !== undefined))
  .map((fields) => {
    const doc: JsonObj = { apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration' };
    for (const f of fields) setPath(doc, f.path, structuredClone(f.value));
    return doc;
  });

type Broken = { doc: JsonObj; expect: Expectation };

function broken(doc: JsonObj): fc.Arbitrary<Broken> {
  const withField = (f: FileField, value: Json | undefined) => {
    const out = structuredClone(doc);
    setPath(out, f.path, value);
    return out;
  };
  const field = fc.constantFrom(...FIELDS);
  return fc.oneof(
    {
      arbitrary: fc.constant({ doc, expect: { what: 'a valid file', mustReject: false, names: [] } }),
      weight: 1,
    },
    {
      arbitrary: field.chain((f) =>
        fc.constantFrom(...WRONG[f.kind]).map((v) => ({
          doc: withField(f, v),
          expect: {
            what: `${f.path} = ${JSON.stringify(v)} (wrong type)`,
            mustReject: true,
            names: [f.path],
          },
        })),
      ),
      weight: 4,
    },
    {
      arbitrary: field.chain((f) =>
        fc.constantFrom(...ODD[f.kind]).map((v) => ({
          doc: withField(f, v),
          expect: {
            what: `${f.path} = ${JSON.stringify(v).slice(0, 60)}`,
            mustReject: false,
            names: [f.path],
          },
        })),
      ),
      weight: 4,
    },
    {
      arbitrary: fc
        .constantFrom('', 'authentication.', 'authentication.webhook.', 'logging.', 'authorization.')
        .chain((prefix) =>
          fc.constantFrom('bogusField', 'SyncFrequency', 'sync_frequency', '').map((k) => {
            const path = `${prefix}${k}`;
            return {
              doc: withField({ path, kind: 'string' }, 'x'),
              expect: {
                what: `unknown field ${JSON.stringify(path)}`,
                mustReject: true,
                names: [`"${path}"`],
              },
            };
          }),
        ),
      weight: 1,
    },
    {
      arbitrary: fc
        .constantFrom(
          'authentication',
          'authorization',
          'logging',
          'authentication.webhook',
          'authentication.x509',
        )
        .chain((path) =>
          fc.constantFrom<Json>(5, 'x', [], [{}], true).map((v) => ({
            doc: withField({ path, kind: 'string' }, v),
            expect: {
              what: `${path} = ${JSON.stringify(v)} (not an object)`,
              mustReject: true,
              names: [path],
            },
          })),
        ),
      weight: 1,
    },
    {
      arbitrary: fc
        .tuple(
          fc.constantFrom('apiVersion', 'kind'),
          fc.constantFrom<Json | undefined>(undefined, 'v1', 'Pod', 5, ''),
        )
        .map(([k, v]) => ({
          doc: withField({ path: k, kind: 'string' }, v),
          expect: { what: `${k} = ${JSON.stringify(v) ?? 'removed'}`, mustReject: true, names: [k] },
        })),
      weight: 1,
    },
  );
}

type TextChange = (text: string, format: string) => { text: string; expect?: Expectation };

const textChanges: fc.Arbitrary<TextChange>[] = [
  fc
    .tuple(fc.nat(), fc.constantFrom('  : : :', '- [unclosed', '"unterminated', 'a: b: c', '\t- tab', '{'))
    .map(([at, bad]) => (text: string) => {
      const ls = text.split('\n');
      ls.splice(at % (ls.length + 1), 0, bad);
      return {
        text: ls.join('\n'),
        expect: {
          what: `syntax error ${JSON.stringify(bad)}`,
          mustReject: false,
          names: [POSITION, /field|apiVersion|kind/],
        },
      };
    }),
  fc.nat().map((at) => (text: string, format: string) => {
    if (format !== 'yaml') return { text };
    return duplicateKeyLine(text, at) ?? { text };
  }),
  fc.double({ min: 0, max: 1, noNaN: true }).map((f) => (text: string) => ({
    text: text.slice(0, Math.floor(text.length * f)),
    expect: {
      what: `truncated at ${Math.round(f * 100)}%`,
      mustReject: false,
      names: [POSITION, /field|apiVersion|kind|object/],
    },
  })),
  fc.constantFrom(600, 5_000, 100_000).map((depth) => (text: string, format: string) => ({
    text:
      format === 'yaml'
        ? `${text}nested: ${'['.repeat(depth)}${']'.repeat(depth)}\n`
        : text.replace(/^\{/, `{"nested":${'['.repeat(depth)}${']'.repeat(depth)},`),
    expect: { what: `a field nested ${depth} deep`, mustReject: true, names: [/nested|deep|"nested"/] },
  })),
];

export const kubeletConfigArbitrary: fc.Arbitrary<ConfigInput> = baseConfig
  .chain(broken)
  .chain((b) =>
    fc.tuple(
      fc.constant(b),
      fc.constantFrom('yaml', 'json'),
      fc.option(fc.oneof(...textChanges), { freq: 5 }),
    ),
  )
  .map(([b, format, change]) => {
    const text = format === 'yaml' ? stringify(b.doc, { lineWidth: 0 }) : JSON.stringify(b.doc, null, 1);
    const what = `${format}: ${b.expect.what}`;
    if (!change) return { text, expect: { ...b.expect, what } };
    const c = change(text, format);
    if (!c.expect) return { text: c.text, expect: { ...b.expect, what } };
    return {
      text: c.text,
      expect: {
        what: `${what}; ${c.expect.what}`,
        mustReject: c.expect.mustReject,
        names: c.expect.names.length > 0 ? [...c.expect.names, ...b.expect.names] : [],
      },
    };
  });

export const kubeletConfigSurface: FuzzSurface = {
  id: 'kubelet-config',
  title:
    'KubeletConfiguration files (YAML/JSON, wrong types, odd values, unknown fields, syntax errors, deep nesting)',
  async run(opts) {
    const dir = await mkdtemp(join(tmpdir(), 'tskubelet-fuzz-config-'));
    let n = 0;
    try {
      return await runSurface<ConfigInput>(
        {
          id: 'kubelet-config',
          arbitrary: kubeletConfigArbitrary,
          caseTimeoutMs: 2_000,
          async exec(input): Promise<Verdict> {
            const file = join(dir, `config-${n++}.yaml`);
            await writeFile(file, input.text);
            try {
              const decoded = await loadConfigFile(file);
              const compiled = compileConfig(decoded, {}, { hostname: () => 'fuzz-node', cwd: dir });
              toKubeletConfiguration(compiled.config);
              return { kind: 'accepted' };
            } catch (err) {
              if (isKubeletError(err) && (err.code === 'InvalidArgument' || err.code === 'NotFound')) {
                return { kind: 'rejected', message: err.message };
              }
              return { kind: 'crash', detail: thrown(err) };
            } finally {
              await rm(file, { force: true });
            }
          },
        },
        opts,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
};
