/**
 * Fuzzed surface `kubelet-flags`: `tskubelet run` command lines through the real parser
 * (src/cli/flags.ts parseRunArgs: commander with the field table's options and pflag-style value
 * parsers, then compileConfig). A command line is a few flags at valid values (their defaults, in
 * flag syntax: `--name=value`, `--name value`, the alias), then one thing wrong: a value the flag's
 * parser must refuse, an odd value it may take (empty, huge, `__proto__` keys, negative numbers),
 * an unknown flag, a missing value, an alias that contradicts its flag, a stray argument.
 *
 * Anything thrown that is not a KubeletError is a crash; a refusal must name the flag.
 */
import fc from 'fast-check';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseRunArgs } from '../../../src/cli/flags.ts';
import { ALL_FIELDS, NOT_IMPLEMENTED, formatGoDuration, type FieldKind } from '../../../src/config/index.ts';
import { isKubeletError } from '../../../src/util/errors.ts';
import type { FuzzSurface } from '../scenario.ts';
import { runSurface, thrown, type Expectation, type FuzzInput, type Verdict } from './harness.ts';

interface FlagsInput extends FuzzInput {
  argv: string[];
}

interface FlagRow {
  name: string;
  alias?: string;
  kind: FieldKind;
  choices?: readonly string[];
  /** A valid value in flag syntax (from the row's default), when there is one. */
  valid?: string;
}

function flagText(kind: FieldKind, d: unknown): string | undefined {
  if (d === undefined) return undefined;
  switch (kind) {
    case 'duration':
      return formatGoDuration(d as number);
    case 'stringList':
      return (d as string[]).join(',');
    case 'headerMap':
      return Object.entries(d as Record<string, string[]>)
        .flatMap(([k, vs]) => vs.map((v) => `${k}:${v}`))
        .join(',');
    case 'taints':
      return (d as { key: string; value?: string; effect: string }[])
        .map((t) => `${t.key}${t.value !== undefined ? `=${t.value}` : ''}:${t.effect}`)
        .join(',');
    case 'labels':
    case 'stringMap':
      return Object.entries(d as Record<string, string>)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
    case 'thresholdMap':
      return Object.entries(d as Record<string, string>)
        .map(([k, v]) => `${k}<${v}`)
        .join(',');
    case 'boolMap':
      return Object.entries(d as Record<string, boolean>)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
    default:
      // string, bool, int32, int64: scalars.
      return typeof d === 'string' || typeof d === 'number' || typeof d === 'boolean' ? String(d) : undefined;
  }
}

const ROWS: FlagRow[] = ALL_FIELDS.flatMap(({ spec }) => {
  if (!spec.flag) return [];
  const valid = flagText(spec.kind, spec.default);
  return [
    {
      name: spec.flag.name,
      kind: spec.kind,
      ...(spec.flag.alias ? { alias: spec.flag.alias } : {}),
      ...(spec.flag.choices ? { choices: spec.flag.choices } : {}),
      ...(valid !== undefined ? { valid } : {}),
    },
  ];
});

/** Values the flag's parser (or its check) must refuse. */
const INVALID: Partial<Record<FieldKind, string[]>> = {
  int32: ['abc', '1.5', '99999999999', '0x10', '1e3'],
  int64: ['abc', '1.5', '99999999999999999999'],
  bool: ['maybe', 'yes', '2'],
  duration: ['abc', '1d', '5', '1h-2m'],
  headerMap: ['novalue', 'a:b,c'],
  taints: ['a:b:c', 'k=v=w:NoSchedule', 'k:NoSchedule-', 'k=v'],
  thresholdMap: ['memory.available', 'a<b,c'],
  stringMap: ['noequals'],
  boolMap: ['noequals', 'AllAlpha=maybe', 'Bogus=true', 'NodeLease=false'],
};

/** Odd values of the right syntax: either outcome, but a refusal names the flag. */
const ODD: Record<FieldKind, string[]> = {
  string: ['', ' ', 'x'.repeat(100_000), '\u0000', '__proto__', 'http://[', '../..', '-'],
  bool: ['false', 'true', 'T', '0'],
  int32: ['-1', '0', '2147483647', '-2147483648', '+5', ' 7 '],
  int64: ['-1', '0', '9007199254740991'],
  duration: ['0s', '-1s', '9999999999h', '1.5ms', '1h2m3s4ms5us6ns', '.5s'],
  stringList: [
    '',
    ',',
    'a,,b',
    'x'.repeat(10_000),
    Array.from({ length: 1000 }, (_, i) => `v${i}`).join(','),
  ],
  headerMap: ['__proto__:x', 'constructor:y', ':', 'a:', ' a : b '],
  taints: ['', '__proto__:NoSchedule', 'k=:NoSchedule', ':NoSchedule', 'k:Sometimes'],
  labels: [
    '__proto__=x',
    'constructor=y',
    '=',
    'a',
    'kubernetes.io/hostname=x',
    'node-role.kubernetes.io/master=',
  ],
  stringMap: ['__proto__=x', 'constructor=y', '=', 'a=b=c'],
  thresholdMap: [
    '__proto__<1',
    'memory.available<',
    'memory.available<200%',
    'bogus<1',
    'nodefs.available<-5Gi',
  ],
  boolMap: ['', ',', '__proto__=true', 'AllBeta=false,RunAsGroup=true', ' AppArmor = T '],
};

function syntax(name: string, value: string, style: number): string[] {
  return style % 2 === 0 ? [`--${name}=${value}`] : [`--${name}`, value];
}

/** One flag at a valid value, or a bool flag by itself. */
function validFlag(row: FlagRow, style: number): string[] {
  const name = row.alias && style % 3 === 2 ? row.alias : row.name;
  if (row.kind === 'bool') return style % 2 === 0 ? [`--${name}`] : [`--${name}=${row.valid ?? 'true'}`];
  if (row.valid === undefined || row.valid === '') return [];
  // A value starting with "-" would read as a flag in the two-word form.
  return syntax(name, row.valid, row.valid.startsWith('-') ? 0 : style);
}

const names = (row: FlagRow): string[] => [`--${row.name}`, ...(row.alias ? [`--${row.alias}`] : [])];

const base: fc.Arbitrary<string[]> = fc
  .subarray(ROWS, { maxLength: 12 })
  .chain((rows) => fc.tuple(...rows.map((r) => fc.nat().map((s) => validFlag(r, s)))))
  .map((parts) => parts.flat());

interface Broken {
  add: string[];
  expect: Expectation;
  /** The flag it is about: other uses of it are taken out (the last use of a flag wins). */
  row?: FlagRow;
  /** Goes last (a flag without its value; anywhere else it would take the next word as value). */
  last?: boolean;
}

const row = fc.constantFrom(...ROWS);

const broken: fc.Arbitrary<Broken> = fc.oneof(
  {
    arbitrary: fc.constant<Broken>({
      add: [],
      expect: { what: 'valid flags', mustReject: false, names: [] },
    }),
    weight: 1,
  },
  {
    arbitrary: row
      .filter((r) => INVALID[r.kind] !== undefined || r.choices !== undefined)
      .chain((r) =>
        fc
          .tuple(fc.constantFrom(...(r.choices ? ['bogus-choice'] : (INVALID[r.kind] ?? []))), fc.nat())
          .map(([v, s]) => ({
            add: s % 2 === 0 || v.startsWith('-') ? [`--${r.name}=${v}`] : [`--${r.name}`, v],
            expect: { what: `--${r.name}=${v}`, mustReject: true, names: names(r) },
            row: r,
          })),
      ),
    weight: 4,
  },
  {
    arbitrary: row.chain((r) =>
      fc.constantFrom(...ODD[r.kind]).map((v) => ({
        add: [`--${r.name}=${v}`],
        expect: { what: `--${r.name}=${JSON.stringify(v).slice(0, 60)}`, mustReject: false, names: names(r) },
        row: r,
      })),
    ),
    weight: 4,
  },
  {
    arbitrary: fc
      .constantFrom('--bogus-flag', '--SyncFrequency', '-x', '---max-pods=3', '--max_pods=3', '--=3', '-')
      .map((f) => ({
        add: [f],
        expect: {
          what: `unknown ${f}`,
          mustReject: true,
          names: [f.replace(/=.*$/, ''), /unknown|argument/],
        },
      })),
    weight: 1,
  },
  {
    arbitrary: row
      .filter((r) => r.kind !== 'bool')
      .map((r) => ({
        add: [`--${r.name}`],
        expect: { what: `--${r.name} without a value`, mustReject: true, names: names(r) },
        row: r,
        last: true,
      })),
    weight: 1,
  },
  {
    arbitrary: row
      .filter((r) => r.alias !== undefined && r.kind !== 'bool')
      .chain((r) =>
        fc.constantFrom(...ODD[r.kind].filter((v) => v !== r.valid && v !== '')).map((v) => ({
          add: [`--${r.name}=${r.valid ?? 'a'}`, `--${r.alias ?? ''}=${v}`],
          expect: {
            what: `--${r.alias ?? ''} contradicting --${r.name}`,
            mustReject: false,
            names: names(r),
          },
          row: r,
        })),
      ),
    weight: 1,
  },
  {
    arbitrary: fc.constantFrom('stray', 'run', '--', '-- --max-pods=3').map((a) => ({
      add: a.split(' '),
      expect: { what: `stray argument ${JSON.stringify(a)}`, mustReject: a !== '--', names: [/argument/] },
    })),
    weight: 1,
  },
  {
    arbitrary: fc.constantFrom(...NOT_IMPLEMENTED.filter((n) => n.flag !== undefined)).map((n) => ({
      add: n.bool ? [`--${n.flag ?? ''}`] : [`--${n.flag ?? ''}=x`],
      expect: {
        what: `--${n.flag ?? ''} (not implemented)`,
        mustReject: false,
        names: [`--${n.flag ?? ''}`],
      },
    })),
    weight: 1,
  },
);

export const kubeletFlagsArbitrary: fc.Arbitrary<FlagsInput> = fc
  .tuple(base, broken, fc.nat())
  .map(([flags, b, at]) => {
    // The broken part goes anywhere among whole flags (a stray "--" ends the flags wherever it is).
    const groups: string[][] = [];
    for (let i = 0; i < flags.length; i++) {
      const f = flags[i] ?? '';
      const next = flags[i + 1];
      if (f.startsWith('--') && !f.includes('=') && next !== undefined && !next.startsWith('--')) {
        groups.push([f, next]);
        i++;
      } else groups.push([f]);
    }
    const mine = b.row ? names(b.row) : [];
    const kept = groups.filter((g) => !mine.some((n) => g[0] === n || g[0]?.startsWith(`${n}=`)));
    if (b.last) kept.push(b.add);
    else kept.splice(at % (kept.length + 1), 0, b.add);
    return { argv: kept.flat(), expect: b.expect };
  });

export const kubeletFlagsSurface: FuzzSurface = {
  id: 'kubelet-flags',
  title:
    'tskubelet run command lines (every flag of the field table: bad values, odd values, unknown and repeated flags)',
  async run(opts) {
    const dir = await mkdtemp(join(tmpdir(), 'tskubelet-fuzz-flags-'));
    try {
      return await runSurface<FlagsInput>(
        {
          id: 'kubelet-flags',
          arbitrary: kubeletFlagsArbitrary,
          caseTimeoutMs: 2_000,
          show: (input) =>
            `${input.expect.what} in: ${input.argv.map((a) => (a.length > 40 ? `${a.slice(0, 40)}…` : a)).join(' ')}`,
          async exec(input): Promise<Verdict> {
            try {
              await parseRunArgs(input.argv, { hostname: () => 'fuzz-node', cwd: dir });
              return { kind: 'accepted' };
            } catch (err) {
              if (isKubeletError(err) && (err.code === 'InvalidArgument' || err.code === 'NotFound')) {
                return { kind: 'rejected', message: err.message };
              }
              return { kind: 'crash', detail: thrown(err) };
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
