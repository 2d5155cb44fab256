import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RecordSplitter } from './record-splitter.ts';

const str = (bufs: Buffer[]) => bufs.map((b) => b.toString());

describe('RecordSplitter', () => {
  it('returns complete records and carries a record split across chunks', () => {
    const s = new RecordSplitter();
    assert.deepEqual(str(s.push(Buffer.from('a\nbb\ncc'))), ['a\n', 'bb\n']);
    assert.deepEqual(str(s.push(Buffer.from('c'))), []);
    assert.deepEqual(str(s.push(Buffer.from('c\nd'))), ['cccc\n']);
    assert.equal(s.takeRest()?.toString(), 'd');
    assert.equal(s.takeRest(), undefined);
  });

  it('copies the carried bytes, so the caller may reuse its buffer', () => {
    const s = new RecordSplitter();
    const buf = Buffer.from('xy');
    s.push(buf);
    buf.write('zz');
    assert.deepEqual(str(s.push(Buffer.from('\n'))), ['xy\n']);
  });

  it('drops a record longer than the bound up to its newline', () => {
    const s = new RecordSplitter(8);
    assert.deepEqual(str(s.push(Buffer.from('ok\n12345'))), ['ok\n']);
    assert.deepEqual(str(s.push(Buffer.from('6789'))), []);
    assert.deepEqual(str(s.push(Buffer.from('more\nnext\n'))), ['next\n']);
    assert.equal(s.dropped, 1);
  });
});
