import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineSplitter, parseKmsgRecord } from './kmsg-record.ts';

describe('parseKmsgRecord', () => {
  it('reads priority, sequence, timestamp and message of a /dev/kmsg record', () => {
    assert.deepEqual(parseKmsgRecord('6,32875,19877107177,-;memory: usage 32768kB, limit 32768kB'), {
      priority: 6,
      sequence: 32875,
      timestampUs: 19877107177,
      message: 'memory: usage 32768kB, limit 32768kB',
    });
  });

  it('keeps semicolons inside the message and ignores extra prefix fields', () => {
    assert.equal(parseKmsgRecord('4,1,2,c,caller=T1;a;b')?.message, 'a;b');
  });

  it('rejects a line without a prefix, with too few fields or with a non-number', () => {
    assert.equal(parseKmsgRecord('no prefix at all'), undefined);
    assert.equal(parseKmsgRecord('6,1;x'), undefined);
    assert.equal(parseKmsgRecord('6,x,3,-;x'), undefined);
    assert.equal(parseKmsgRecord('-6,1,3,-;x'), undefined);
  });
});

describe('LineSplitter', () => {
  const bytes = (s: string) => new TextEncoder().encode(s);

  it('returns whole lines whatever the chunk boundaries, multi-byte characters included', () => {
    const text = 'first line\nzweite Zeile mit Ümlaut\n\nlast\n';
    for (const size of [1, 2, 3, 7, 100]) {
      const s = new LineSplitter(1024);
      const out: string[] = [];
      const all = bytes(text);
      for (let i = 0; i < all.length; i += size) out.push(...s.push(all.subarray(i, i + size)));
      assert.deepEqual(out, ['first line', 'zweite Zeile mit Ümlaut', '', 'last'], `chunks of ${size}`);
      assert.equal(s.pendingBytes, 0);
    }
  });

  it('holds an unfinished line until its newline arrives, copying it out of the reused buffer', () => {
    const s = new LineSplitter(1024);
    const buf = bytes('abc');
    assert.deepEqual(s.push(buf), []);
    buf.fill(0x7a); // the reader reuses its buffer
    assert.equal(s.pendingBytes, 3);
    assert.deepEqual(s.push(bytes('def\ng')), ['abcdef']);
    assert.equal(s.pendingBytes, 1);
  });

  it('drops a line longer than the bound, all of it, and carries on with the next', () => {
    const s = new LineSplitter(8);
    assert.deepEqual(s.push(bytes('0123456')), []);
    assert.deepEqual(s.push(bytes('789abc')), [], 'over the bound: the partial line is dropped');
    assert.equal(s.pendingBytes, 0);
    assert.deepEqual(s.push(bytes('def\nok\n')), ['ok'], 'the rest of the long line is skipped');
    assert.deepEqual(s.push(bytes('waytoolongline\nfine\n')), ['fine']);
    assert.equal(s.droppedLines, 2);
  });
});
