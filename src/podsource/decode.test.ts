import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { earlyYamlError, parseManifest } from './decode.ts';

describe('manifest parsing', () => {
  it('reads JSON and YAML to the same value', () => {
    const json = parseManifest('{"kind":"Pod","metadata":{"name":"a"}}', 'x');
    const yaml = parseManifest('kind: Pod\nmetadata:\n  name: a\n', 'x');
    assert.deepEqual(json, yaml);
  });

  it('reads YAML 1.1 octal modes and booleans as upstream does, but keeps dates and 1:20 as strings', () => {
    const v = parseManifest('mode: 0644\nenabled: yes\nwhen: 2001-12-14\nratio: 1:20\nname: "0644"\n', 'x');
    assert.deepEqual(v, { mode: 420, enabled: true, when: '2001-12-14', ratio: '1:20', name: '0644' });
  });

  it('allows a leading or trailing document separator', () => {
    assert.deepEqual(parseManifest('---\na: 1\n---\n', 'x'), { a: 1 });
  });

  it('rejects several documents, empty text and syntax errors, naming the origin', () => {
    const bad = ['a: 1\n---\nb: 2\n', '   \n', '# only a comment\n', 'a: [1, 2\n', 'a: 1\na: 2\n'];
    for (const text of bad) {
      assert.throws(
        () => parseManifest(text, '/m/pod.yaml'),
        (err: unknown) => hasCode(err, 'InvalidArgument') && (err as Error).message.includes('/m/pod.yaml'),
        JSON.stringify(text),
      );
    }
  });
});

describe('manifest parsing of hostile documents', () => {
  const refusal = (text: string): string => {
    try {
      parseManifest(text, '/m/pod.yaml');
    } catch (err) {
      assert.ok(hasCode(err, 'InvalidArgument'), `not a typed refusal: ${String(err)}`);
      return (err as Error).message;
    }
    assert.fail('accepted');
  };

  it('reads a text that starts with { as JSON only, as upstream sniffs it, naming where the JSON breaks', () => {
    assert.match(refusal('{"kind":"Pod",\n "spec": x}'), /JSON: line 2, column 10: invalid JSON near/);
    assert.match(refusal('  {"kind":"Pod"} trailing'), /JSON: line 1, column 1[78]: invalid JSON/);
    // A YAML flow mapping is not JSON: upstream's decoder refuses it too.
    assert.match(refusal('{kind: Pod}'), /JSON: line 1, column 2: invalid JSON/);
    // Fast however long: it was read as YAML, ~2 s per MiB of broken JSON.
    const long = `{"items":[${Array.from({ length: 50_000 }, (_, i) => `{"n":${i}}`).join(',')}, x]}`;
    const t0 = performance.now();
    assert.match(refusal(long), /JSON: line 1, column \d+: invalid JSON near ".*x\]\}"/);
    assert.ok(performance.now() - t0 < 500, `${Math.round(performance.now() - t0)} ms`);
  });

  it('names the line and column of a YAML syntax error, as upstream names the line', () => {
    assert.match(refusal('kind: Pod\nmetadata:\n  name: a\n  : : :\n'), /YAML: line 4, column \d+: /);
    assert.match(refusal('kind: Pod\nkind: Pod\n'), /YAML: line 2, column 1: Map keys must be unique/);
    assert.match(refusal('kind: Pod\nspec:\n\tcontainers: []\n'), /YAML: line 3, column \d+: /);
  });

  it('refuses a JSON document nested thousands of levels deep, naming where, instead of overflowing the stack', () => {
    for (const depth of [101, 20_000, 100_000]) {
      const text = `{"kind":"Pod","spec":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
      assert.match(refusal(text), /spec\.x\[0\]\[0\].*: nested more than 100 levels deep/);
    }
    assert.deepEqual(parseManifest(`{"a":${'['.repeat(98)}${']'.repeat(98)}}`, 'x'), {
      a: JSON.parse('['.repeat(98) + ']'.repeat(98)) as unknown,
    });
  });

  it('refuses YAML nested deeper than the parser can go before parsing, at the line where it happens', () => {
    for (const depth of [600, 20_000]) {
      assert.match(
        refusal(`kind: Pod\nspec:\n  x: ${'['.repeat(depth)}${']'.repeat(depth)}\n`),
        /YAML: line 3, column \d+: nested more than 512 levels deep/,
      );
    }
    let block = 'kind: Pod\n';
    for (let i = 0; i < 600; i++) block += `${' '.repeat(i)}k:\n`;
    assert.match(refusal(block), /YAML: line 515, column \d+: nested more than 512 levels deep/);
    // Parsed, then refused for the depth of the value, naming the path.
    assert.match(
      refusal(`kind: Pod\nspec: ${'['.repeat(150)}${']'.repeat(150)}\n`),
      /spec\[0\]\[0\].*: nested more than 100/,
    );
  });

  it('names the first syntax error of a long broken document on which the YAML parser runs out of stack', () => {
    // A flow sequence left open, then thousands of block lines: the parser recurses per line.
    let text = 'kind: Pod\nspec:\n- [unclosed\n  tolerations:\n';
    for (let i = 0; i < 3000; i++) text += `    - key: k${i}\n      operator: Exists\n`;
    const first = refusal(text);
    assert.match(first, /YAML: line \d+, column \d+: /);
    assert.equal(refusal(text), first, 'the same refusal on every read');
  });

  it('finds the first error of a long text broken early in a prefix, and gives the refusal of the whole parse', () => {
    // A broken first line before 370 KiB of JSON: the YAML parser recovers token by token after
    // the error (one error per token, ~1 s here, 3–12 s for the fuzzer's 1.3 MiB); the probe
    // parses 32 KiB.
    const containers = Array.from({ length: 3000 }, (_, i) => ({
      name: `c${i}`,
      image: 'busybox',
      args: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'],
      ports: [{ containerPort: 80 }, { containerPort: 81 }],
    }));
    const body = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: { containers },
    });
    const text = `  : : :\n${body}\n`;
    const early = earlyYamlError('parse manifest /m/pod.yaml', text);
    assert.match(
      String(early?.message),
      /YAML: line 1, column 5: Nested mappings are not allowed in compact mappings/,
    );
    assert.equal(refusal(text), early?.message);
    assert.equal(
      earlyYamlError('parse manifest x', '  : : :\n{}\n'),
      undefined,
      'short texts are parsed whole',
    );
  });

  it('parses a long valid YAML text whole: an open bracket or string at the probe cut is no error', () => {
    // A flow sequence spanning far past 64 KiB: the probe's prefix ends inside it.
    const items = Array.from({ length: 30_000 }, (_, i) => `"v${i}"`).join(',\n      ');
    const text = `apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: busybox\n    args: [\n      ${items}]\n`;
    assert.ok(text.length > 256 * 1024);
    assert.equal(earlyYamlError('parse manifest big.yaml', text), undefined, 'the cut is not an error');
    const pod = parseManifest(text, 'big.yaml') as { spec: { containers: { args: string[] }[] } };
    assert.equal(pod.spec.containers[0]?.args.length, 30_000);
  });
});
