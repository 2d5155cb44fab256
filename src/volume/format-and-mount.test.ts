import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseBlkidExport } from './format-and-mount.ts';

describe('parseBlkidExport (upstream getDiskFormat)', () => {
  it('reads the filesystem and partition table types', () => {
    assert.deepEqual(parseBlkidExport('DEVNAME=/dev/loop3\nTYPE=ext4\n'), { type: 'ext4', ptType: '' });
    assert.deepEqual(parseBlkidExport('DEVNAME=/dev/sdb\nPTTYPE=gpt\n'), { type: '', ptType: 'gpt' });
    assert.deepEqual(parseBlkidExport(''), { type: '', ptType: '' });
  });
});
