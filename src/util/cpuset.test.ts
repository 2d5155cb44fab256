import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatCPUList, parseCPUList } from './cpuset.ts';

describe('CPU lists', () => {
  it('parses single CPUs and ranges into sorted distinct ids, the empty list as none', () => {
    assert.deepEqual(parseCPUList('0-2,7,5,1'), { ok: true, cpus: [0, 1, 2, 5, 7] });
    assert.deepEqual(parseCPUList(''), { ok: true, cpus: [] });
    assert.deepEqual(parseCPUList('3\n'), { ok: true, cpus: [3] });
  });

  it('refuses garbage, reversed ranges and absurd ids', () => {
    assert.equal(parseCPUList('a').ok, false);
    assert.equal(parseCPUList('1-').ok, false);
    assert.equal(parseCPUList('1,,2').ok, false);
    assert.deepEqual(parseCPUList('3-1'), { ok: false, error: 'invalid range "3-1" (3 > 1)' });
    assert.equal(parseCPUList('0-99999999').ok, false);
  });

  it('formats ids back into the kernel list form', () => {
    assert.equal(formatCPUList([5, 0, 1, 2, 7, 8]), '0-2,5,7-8');
    assert.equal(formatCPUList([]), '');
  });
});
