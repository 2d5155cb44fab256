import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { parseManifest } from './decode.ts';

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
