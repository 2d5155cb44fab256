import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hugePageSizeName, hugePageSizeOfResource, isHugePagesResource } from './hugepages.ts';

const MiB = 2 ** 20;

describe('hugetlb page size names', () => {
  it('names page sizes as the kernel and runc do', () => {
    assert.ok(isHugePagesResource('hugepages-2Mi'));
    assert.ok(!isHugePagesResource('memory'));
    assert.equal(hugePageSizeName(2 * MiB), '2MB');
    assert.equal(hugePageSizeName(2 ** 30), '1GB');
    assert.equal(hugePageSizeName(64 * 1024), '64KB');
    assert.equal(hugePageSizeName(32 * MiB), '32MB');
    assert.equal(hugePageSizeName(3000), undefined);
    assert.equal(hugePageSizeOfResource('hugepages-2Mi'), '2MB');
    assert.equal(hugePageSizeOfResource('hugepages-1Gi'), '1GB');
    assert.equal(hugePageSizeOfResource('hugepages-bogus'), undefined);
    assert.equal(hugePageSizeOfResource('memory'), undefined);
  });
});
