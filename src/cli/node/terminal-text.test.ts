import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parse, stringify } from 'yaml';
import { escapeTerminal, jsonForTerminal, terminalEscaper, yamlForTerminal } from './terminal-text.ts';

/** Any control a terminal acts on (everything the escaper must remove). */
// eslint-disable-next-line no-control-regex
const ACTIVE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/** Strings rich in controls: ESC sequences, C1, CR, BEL, plus ordinary text. */
const hostile = fc.string({
  unit: fc.oneof(
    fc.constantFrom(
      '\u001b',
      '\u009b',
      '\u009d',
      '\u0090',
      '\u0085',
      '\r',
      '\u0007',
      '\u007f',
      '\t',
      '\n',
      '\u0000',
    ),
    fc.constantFrom('[31m', ']0;title', 'P$q', 'é', '✓', 'x'),
    fc.string({ minLength: 0, maxLength: 1 }),
    // Every code point but the surrogates: a lone one is no text (Go's JSON and UTF-8 replace it).
    fc
      .integer({ min: 0, max: 0x10ffff })
      .filter((n) => n < 0xd800 || n > 0xdfff)
      .map((n) => String.fromCodePoint(n)),
  ),
  maxLength: 40,
});

describe('escapeTerminal', () => {
  const cases: [string, string, string][] = [
    ['a colour sequence', 'a\u001b[31mred\u001b[0m', 'a^[[31mred^[[0m'],
    ['a title-setting OSC ended by BEL', '\u001b]0;pwned\u0007', '^[]0;pwned\\x07'],
    ['CR, which rewrites the line', 'ok\rFAIL', 'ok\\rFAIL'],
    ['8-bit CSI and OSC (C1)', '\u009b2J\u009d0;t\u009c', '\\u009b2J\\u009d0;t\\u009c'],
    ['NUL, backspace, DEL', 'a\u0000b\bc\u007f', 'a\\x00b\\x08c\\x7f'],
    ['tabs and newlines, kept', 'a\tb\nc', 'a\tb\nc'],
    ['ordinary text and non-Latin letters, kept', 'pod é ✓ 名前 U+00A0:\u00a0', 'pod é ✓ 名前 U+00A0:\u00a0'],
  ];
  for (const [name, input, output] of cases) {
    it(`escapes ${name}`, () => {
      assert.equal(escapeTerminal(input), output);
    });
  }

  it('never leaves a control a terminal acts on, keeps TAB/LF and everything printable', () => {
    fc.assert(
      fc.property(hostile, (s) => {
        const out = escapeTerminal(s);
        assert.doesNotMatch(out, ACTIVE);
        assert.equal(out.split('\n').length, s.split('\n').length);
        assert.equal(out.split('\t').length, s.split('\t').length);
        assert.equal(escapeTerminal(out), out, 'escaping twice changes nothing');
      }),
    );
  });
});

describe('structured output for a terminal', () => {
  it('JSON: no control left, and it parses back to the same value', () => {
    fc.assert(
      fc.property(fc.array(hostile), (values) => {
        const text = jsonForTerminal({ metadata: { annotations: values } }, 4);
        assert.doesNotMatch(text.replace(/\n/g, ''), ACTIVE);
        assert.deepEqual(JSON.parse(text), { metadata: { annotations: values } });
      }),
    );
  });

  it('YAML: no control left, and it parses back to the same value', () => {
    fc.assert(
      fc.property(fc.array(hostile), (values) => {
        const text = yamlForTerminal(stringify({ a: values }, { indentSeq: false, lineWidth: 0 }));
        assert.doesNotMatch(text.replace(/\n/g, ''), ACTIVE);
        assert.deepEqual(parse(text), { a: values });
      }),
    );
  });
});

describe('terminalEscaper (a log stream)', () => {
  it('escapes whatever the chunking, keeping characters split across chunks whole', async () => {
    await fc.assert(
      fc.asyncProperty(hostile, fc.array(fc.nat(), { maxLength: 6 }), async (s, cuts) => {
        const bytes = Buffer.from(s, 'utf8');
        const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const chunks = [0, ...at, bytes.length]
          .slice(1)
          .map((end, i, ends) => bytes.subarray(i === 0 ? 0 : (ends[i - 1] ?? 0), end));
        const out = (await buffer(Readable.from(chunks).pipe(terminalEscaper()))).toString('utf8');
        // The stream sees bytes: a lone surrogate in `s` has no UTF-8 form and reaches it as U+FFFD.
        assert.equal(out, escapeTerminal(bytes.toString('utf8')));
        assert.doesNotMatch(out, ACTIVE);
      }),
    );
  });

  it('turns a raw 8-bit CSI byte (not UTF-8) into U+FFFD', async () => {
    const raw = Buffer.from([0x61, 0x9b, 0x32, 0x4a, 0x1b, 0x5b, 0x48, 0x0a]);
    const out = (await buffer(Readable.from([raw]).pipe(terminalEscaper()))).toString('utf8');
    assert.equal(out, 'a\ufffd2J^[[H\n');
  });
});
