import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatLogTime, isBefore, parseCriRecord, parseRfc3339, recordIsPartial } from './cri-format.ts';

function parse(line: string) {
  return parseCriRecord(Buffer.from(line));
}

describe('CRI log records', () => {
  it('parses a full stdout record, keeping the newline in the content', () => {
    const r = parse('2016-10-06T00:17:09.669794202Z stdout F log content 1\n');
    assert.ok(r.ok);
    assert.equal(r.record.stream, 'stdout');
    assert.equal(r.record.partial, false);
    assert.equal(r.record.content.toString(), 'log content 1\n');
    assert.equal(r.record.time.nsec, 669794202);
    assert.equal(r.record.time.sec, Date.UTC(2016, 9, 6, 0, 17, 9) / 1000);
  });

  it('parses a partial stderr record without its newline', () => {
    const r = parse('2016-10-06T00:17:09.669794203Z stderr P log content 2\n');
    assert.ok(r.ok);
    assert.equal(r.record.stream, 'stderr');
    assert.equal(r.record.partial, true);
    assert.equal(r.record.content.toString(), 'log content 2');
  });

  it('reads only the first field of a tag with more fields (forward compatible)', () => {
    const r = parse('2016-10-06T00:17:09Z stdout P:x:y abc\n');
    assert.ok(r.ok);
    assert.equal(r.record.partial, true);
    const f = parse('2016-10-06T00:17:09Z stdout PF abc\n');
    assert.ok(f.ok);
    assert.equal(f.record.partial, false);
  });

  it('keeps spaces and binary bytes of the content untouched', () => {
    const line = Buffer.concat([
      Buffer.from('2016-10-06T00:17:09Z stdout F  a  b '),
      Buffer.from([0xff, 0, 0x0a]),
    ]);
    const r = parseCriRecord(line);
    assert.ok(r.ok);
    assert.deepEqual([...r.record.content], [...Buffer.from(' a  b '), 0xff, 0, 0x0a]);
  });

  it('reports malformed records with a reason instead of throwing', () => {
    for (const [line, reason] of [
      ['', /timestamp is not found/],
      ['garbage\n', /timestamp is not found/],
      ['not-a-time stdout F x\n', /unexpected timestamp/],
      ['2016-10-06T00:17:09Z stdin F x\n', /unexpected stream type/],
      ['2016-10-06T00:17:09Z stdout\n', /stream type is not found/],
      ['2016-10-06T00:17:09Z stdout F\n', /log tag is not found/],
      ['2016-13-06T00:17:09Z stdout F x\n', /unexpected timestamp/],
      ['{"log":"docker json","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}\n', /timestamp/],
    ] as const) {
      const r = parse(line);
      assert.equal(r.ok, false, line);
      if (!r.ok) assert.match(r.reason, reason);
    }
  });
});

describe('timestamps', () => {
  it('prints them fixed-width with nine fraction digits, keeping the writer’s offset', () => {
    assert.equal(
      formatLogTime(parseRfc3339('2016-10-06T00:17:09.6697942Z')!),
      '2016-10-06T00:17:09.669794200Z',
    );
    assert.equal(formatLogTime(parseRfc3339('2016-10-06T00:17:09Z')!), '2016-10-06T00:17:09.000000000Z');
    assert.equal(
      formatLogTime(parseRfc3339('2016-10-06T02:17:09.5+02:00')!),
      '2016-10-06T02:17:09.500000000+02:00',
    );
    assert.equal(formatLogTime(parseRfc3339('2016-10-06T00:17:09+00:00')!), '2016-10-06T00:17:09.000000000Z');
  });

  it('compares instants across offsets with nanosecond precision', () => {
    const a = parseRfc3339('2016-10-06T02:17:09.000000001+02:00')!;
    const b = parseRfc3339('2016-10-06T00:17:09.000000002Z')!;
    assert.equal(a.sec, b.sec);
    assert.ok(isBefore(a, b));
    assert.ok(!isBefore(b, a));
    assert.ok(!isBefore(a, a));
  });

  it('rejects what Go’s RFC3339 parser rejects', () => {
    for (const bad of [
      '2016-10-06 00:17:09Z',
      '2016-10-06T00:17:09',
      '2016-02-30T00:00:00Z',
      '2016-10-06T24:00:00Z',
      '2016-10-06t00:17:09z',
    ]) {
      assert.equal(parseRfc3339(bad), undefined, bad);
    }
    assert.ok(parseRfc3339('2016-02-29T00:00:00Z'));
  });
});

describe('recordIsPartial', () => {
  it('looks at the tag of the record starting at an offset', () => {
    const buf = Buffer.from('xx\n2016-10-06T00:17:09Z stdout P abc\n2016-10-06T00:17:09Z stdout F abc\n');
    assert.equal(recordIsPartial(buf, 3), true);
    assert.equal(recordIsPartial(buf, buf.indexOf('\n', 3) + 1), false);
    assert.equal(recordIsPartial(buf, 0), false, 'malformed counts as a complete line');
    assert.equal(recordIsPartial(buf, buf.length), false);
  });
});
