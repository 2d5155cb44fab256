import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isQualifiedName,
  isDNS1123Label,
  isDNS1123Subdomain,
  isDNSDomainName,
  isLabelValue,
  isQualifiedNamePart,
  labelValueProblems,
  qualifiedNameProblems,
} from './names.ts';

describe('DNS-1123 names', () => {
  it('accepts lowercase labels of at most 63 characters, alphanumeric at both ends', () => {
    assert.ok(isDNS1123Label('a'));
    assert.ok(isDNS1123Label('kube-system'));
    assert.ok(isDNS1123Label('a'.repeat(63)));
    for (const bad of ['', 'A', '-a', 'a-', 'a.b', 'a_b', 'a'.repeat(64)]) {
      assert.equal(isDNS1123Label(bad), false, bad);
    }
  });

  it('accepts subdomains of at most 253 characters without a per-label limit, as upstream', () => {
    assert.ok(isDNS1123Subdomain('example.com'));
    assert.ok(isDNS1123Subdomain(`${'a'.repeat(64)}.com`));
    for (const bad of ['', 'Example.com', 'a..b', '.a', 'a.', 'a'.repeat(254)]) {
      assert.equal(isDNS1123Subdomain(bad), false, bad);
    }
  });

  it('also limits each label to 63 characters for a domain name', () => {
    assert.ok(isDNSDomainName('cluster.local'));
    assert.equal(isDNSDomainName(`${'a'.repeat(64)}.com`), false);
    assert.equal(isDNSDomainName('cluster.local.'), false);
  });
});

describe('qualified names and label values', () => {
  it('accepts name parts with mixed case, "-", "_" and "." inside', () => {
    assert.ok(isQualifiedNamePart('My_Name.v-1'));
    for (const bad of ['', '_a', 'a.', 'a b', 'a'.repeat(64)]) {
      assert.equal(isQualifiedNamePart(bad), false, bad);
    }
  });

  it('accepts an empty label value', () => {
    assert.ok(isLabelValue(''));
    assert.ok(isLabelValue('blue'));
    assert.equal(isLabelValue('b c'), false);
  });

  it('explains each problem of a qualified name', () => {
    assert.deepEqual(qualifiedNameProblems('example.com/team'), []);
    assert.deepEqual(qualifiedNameProblems('a/b/c'), ['"a/b/c" has more than one "/" (want [prefix/]name)']);
    assert.deepEqual(qualifiedNameProblems('/x'), ['"/x" has an empty prefix before "/"']);
    assert.deepEqual(qualifiedNameProblems('Example.com/'), [
      'prefix "Example.com" is not a lowercase DNS-1123 subdomain',
      '"Example.com/" has an empty name',
    ]);
    assert.match(qualifiedNameProblems('a'.repeat(64))[0] ?? '', /longer than 63 characters/);
    assert.match(qualifiedNameProblems('bad key')[0] ?? '', /may only hold letters/);
  });

  it('explains what is wrong with a label value', () => {
    assert.deepEqual(labelValueProblems(''), []);
    assert.deepEqual(labelValueProblems('x'.repeat(64)), ['is longer than 63 characters']);
    assert.match(labelValueProblems('-x')[0] ?? '', /must begin and end with a letter or digit/);
  });
});

describe('isQualifiedName (upstream IsQualifiedName)', () => {
  it('takes a name with an optional DNS-1123 subdomain prefix, and nothing else', () => {
    for (const ok of ['app', 'a.b_c-d', 'example.com/app', `${'a'.repeat(63)}`, `${'p'.repeat(253)}/n`]) {
      assert.equal(isQualifiedName(ok), true, ok);
    }
    for (const bad of ['', '/app', 'a/b/c', 'Example.com/app', '-app', `${'a'.repeat(64)}`, 'app-', 'x/']) {
      assert.equal(isQualifiedName(bad), false, bad);
    }
  });
});
