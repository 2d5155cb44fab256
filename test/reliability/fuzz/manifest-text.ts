/**
 * Manifest texts for the file and HTTP sources: a (corrupted) pod rendered as JSON or YAML, then
 * possibly broken as text — syntax errors, duplicate keys, tabs, truncation, several documents, an
 * alias bomb, YAML 1.1 oddities (`.nan`, octal, tags), binary garbage — and documents that are not
 * a pod object at all.
 */
import fc from 'fast-check';
import { stringify } from 'yaml';
import type { Corrupted } from './corrupt.ts';
import type { Expectation } from './harness.ts';

export interface ManifestText {
  text: string;
  expect: Expectation;
}

/** A syntax problem is named by its position; a decoded one by its field. */
export const POSITION = /line \d+/;
export const FIELDISH = /\b(metadata|spec|status|kind|apiVersion|items)\b/;

/** Replaces the deep-nesting sentinels left by corrupt.ts with the nested lists themselves. */
function expandDeep(text: string): string {
  return text.replace(/"?__DEEP_(\d+)__"?/g, (_m, n: string) => {
    const depth = Number(n);
    return '['.repeat(depth) + ']'.repeat(depth);
  });
}

function render(c: Corrupted, format: 'json' | 'yaml' | 'json-pretty'): string {
  const text =
    format === 'yaml'
      ? stringify(c.doc, { lineWidth: 0, version: '1.1' })
      : JSON.stringify(c.doc, null, format === 'json-pretty' ? 2 : undefined);
  return expandDeep(text);
}

type TextMutation = (text: string, format: string) => { text: string; expect: Expectation | undefined };

function lines(text: string): string[] {
  return text.split('\n');
}

/**
 * A YAML text with its `at`-th keyed line (modulo their count) repeated just below itself — a
 * duplicate key, which upstream's YAML parser refuses, naming the line. Undefined: no keyed line.
 */
export function duplicateKeyLine(
  text: string,
  at: number,
): { text: string; expect: { what: string; mustReject: true; names: RegExp[] } } | undefined {
  const ls = lines(text);
  const keyed = ls.map((l, i) => [l, i] as const).filter(([l]) => /^\s*[A-Za-z][\w.-]*:/.test(l));
  const pick = keyed[at % Math.max(1, keyed.length)];
  if (!pick) return undefined;
  ls.splice(pick[1] + 1, 0, pick[0]);
  return {
    text: ls.join('\n'),
    expect: { what: `duplicate key ${JSON.stringify(pick[0].trim())}`, mustReject: true, names: [POSITION] },
  };
}

const textMutations: fc.Arbitrary<TextMutation>[] = [
  // A broken line somewhere (YAML syntax error).
  fc
    .tuple(
      fc.nat(),
      fc.constantFrom('  : : :', '- [unclosed', '"unterminated', 'key: value: other', '\t- tab'),
    )
    .map(([at, bad]) => (text: string) => {
      const ls = lines(text);
      ls.splice(at % (ls.length + 1), 0, bad);
      return {
        text: ls.join('\n'),
        expect: {
          what: `syntax error ${JSON.stringify(bad)}`,
          mustReject: false,
          names: [POSITION, FIELDISH],
        },
      };
    }),
  // A key repeated (upstream's YAML parser refuses duplicate keys; JSON's last one wins).
  fc.nat().map((at) => (text: string, format: string) => {
    if (format !== 'yaml') {
      return {
        text: text.replace(/^\{/, '{"kind":"Pod",'),
        expect: { what: 'JSON with a repeated key', mustReject: false, names: [FIELDISH] },
      };
    }
    return duplicateKeyLine(text, at) ?? { text, expect: undefined };
  }),
  // Cut short.
  fc.double({ min: 0, max: 1, noNaN: true }).map((f) => (text: string) => ({
    text: text.slice(0, Math.floor(text.length * f)),
    expect: {
      what: `truncated at ${Math.round(f * 100)}%`,
      mustReject: false,
      names: [POSITION, FIELDISH, /empty/, /manifest/],
    },
  })),
  // Several documents.
  fc.constant((text: string) => ({
    text: `${text}\n---\n${text}`,
    expect: { what: 'two documents', mustReject: false, names: [/documents/, POSITION] },
  })),
  // Indentation by tabs.
  fc.constant((text: string, format: string) =>
    format === 'yaml'
      ? {
          text: text.replace(/^( {2})+/gm, (m) => '\t'.repeat(m.length / 2)),
          expect: { what: 'tab indentation', mustReject: false, names: [POSITION, FIELDISH] },
        }
      : { text, expect: undefined },
  ),
  // A byte-order mark, CRLF line ends.
  fc.constantFrom('bom', 'crlf').map((k) => (text: string) => ({
    text: k === 'bom' ? `\uFEFF${text}` : text.replace(/\n/g, '\r\n'),
    expect: undefined,
  })),
  // YAML 1.1 scalars and tags in place of a value.
  fc
    .tuple(
      fc.nat(),
      fc.constantFrom(
        '.nan',
        '.inf',
        '-.inf',
        '0x1F',
        '0o17',
        '017',
        '~',
        '!!binary aGk=',
        '!!set {a, b}',
        '!custom x',
        '1e400',
        '2001-12-14t21:59:43.10-05:00',
        '<<: {}',
        '&a x',
        '*nope',
      ),
    )
    .map(([at, v]) => (text: string, format: string) => {
      if (format !== 'yaml') return { text, expect: undefined };
      const ls = lines(text);
      const keyed = ls.map((l, i) => [l, i] as const).filter(([l]) => /^\s*[A-Za-z][\w.-]*: \S/.test(l));
      const pick = keyed[at % Math.max(1, keyed.length)];
      if (!pick) return { text, expect: undefined };
      ls[pick[1]] = pick[0].replace(/: .*$/, `: ${v}`);
      return {
        text: ls.join('\n'),
        expect: {
          what: `${pick[0].trim().split(':')[0] ?? ''}: ${v}`,
          mustReject: false,
          names: [POSITION, FIELDISH, /alias/],
        },
      };
    }),
];

/** Inputs that are not a pod object: empty, scalars, lists, alias bombs, garbage. */
const notAPod: fc.Arbitrary<ManifestText> = fc.oneof(
  fc.constantFrom('', '   \n\t\n', '# only a comment\n', '---\n', 'null', '~').map((text) => ({
    text,
    expect: { what: `empty ${JSON.stringify(text)}`, mustReject: true, names: [/empty|object/] },
  })),
  fc.constantFrom('42', '"a string"', 'true', '[1, 2, 3]', '- a\n- b\n', '[]', '{}').map((text) => ({
    text,
    expect: { what: `not an object: ${text.trim()}`, mustReject: true, names: [/object|kind/] },
  })),
  fc.integer({ min: 3, max: 12 }).map((levels) => {
    const ls = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < levels; i++)
      ls.push(
        `a${i}: &a${i} [${Array(10)
          .fill(`*a${i - 1}`)
          .join(', ')}]`,
      );
    return {
      text: `${ls.join('\n')}\n`,
      expect: { what: `alias bomb of ${levels} levels`, mustReject: true, names: [/alias|kind/i] },
    };
  }),
  fc.uint8Array({ minLength: 1, maxLength: 4096 }).map((bytes) => ({
    text: Buffer.from(bytes).toString('latin1'),
    expect: {
      what: `${bytes.length} random bytes`,
      mustReject: true,
      names: [POSITION, /object|kind|empty|YAML/],
    },
  })),
  fc.constantFrom(10_000, 100_000).map((depth) => ({
    text: `${'['.repeat(depth)}${']'.repeat(depth)}`,
    expect: { what: `${depth} nested lists`, mustReject: true, names: [/object|kind|nest|deep/i] },
  })),
  fc.constantFrom(10_000, 100_000).map((depth) => ({
    text: `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`,
    expect: { what: `${depth} nested objects`, mustReject: true, names: [/object|kind|nest|deep/i] },
  })),
);

/**
 * A manifest text: mostly a rendered (possibly corrupted) pod, sometimes also broken as text,
 * sometimes not a pod at all. A text mutation replaces the pod's expectation when it changes what
 * must happen.
 */
export function manifestText(pods: fc.Arbitrary<Corrupted>): fc.Arbitrary<ManifestText> {
  const rendered = fc
    .tuple(
      pods,
      fc.constantFrom('json', 'yaml', 'json-pretty'),
      fc.option(fc.oneof(...textMutations), { freq: 5 }),
    )
    .map(([c, format, mutate]) => {
      const text = render(c, format);
      if (!mutate) return { text, expect: { ...c.expect, what: `${format}: ${c.expect.what}` } };
      const m = mutate(text, format);
      if (!m.expect) return { text: m.text, expect: { ...c.expect, what: `${format}: ${c.expect.what}` } };
      // The text's problem may hide the pod's (truncation can even cut it away), so the text
      // decides whether a refusal is due; either one may be what the refusal names.
      return {
        text: m.text,
        expect: {
          what: `${format}: ${c.expect.what}; ${m.expect.what}`,
          mustReject: m.expect.mustReject,
          names: m.expect.names.length > 0 ? [...m.expect.names, ...c.expect.names] : [],
        },
      };
    });
  return fc.oneof({ arbitrary: rendered, weight: 12 }, { arbitrary: notAPod, weight: 1 });
}
