import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchesNodeSelectorTerms } from './node-selector.ts';

const node = { name: 'n1', labels: { zone: 'a', size: '8' } };

describe('matchesNodeSelectorTerms (upstream MatchNodeSelectorTerms)', () => {
  it('ORs the terms and ANDs the requirements within one', () => {
    const zoneB = { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] };
    const big = {
      matchExpressions: [
        { key: 'zone', operator: 'Exists' },
        { key: 'size', operator: 'Gt', values: ['4'] },
      ],
    };
    assert.equal(matchesNodeSelectorTerms([zoneB], node), false);
    assert.equal(matchesNodeSelectorTerms([zoneB, big], node), true);
  });

  it('matches matchFields against metadata.name', () => {
    const byName = (n: string) => ({ matchFields: [{ key: 'metadata.name', operator: 'In', values: [n] }] });
    assert.equal(matchesNodeSelectorTerms([byName('n1')], node), true);
    assert.equal(matchesNodeSelectorTerms([byName('n2')], node), false);
  });

  it('an empty term, or no term, selects no node', () => {
    assert.equal(matchesNodeSelectorTerms([{}], node), false);
    assert.equal(matchesNodeSelectorTerms([], node), false);
  });
});
