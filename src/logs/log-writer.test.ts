import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCriRecord, parseRfc3339 } from './cri-format.ts';
import { LogWriter, writeWithBackpressure } from './log-writer.ts';
import { criLine, Sink, ts } from './testing.ts';

function rec(line: string) {
  const r = parseCriRecord(Buffer.from(line));
  assert.ok(r.ok);
  return r.record;
}

async function run(lines: string[], opts: Partial<ConstructorParameters<typeof LogWriter>[0]> = {}) {
  const stdout = new Sink();
  const stderr = new Sink();
  const w = new LogWriter({ stdout, stderr, timestamps: false, ...opts });
  for (const l of lines) w.add(rec(l));
  w.endOpenLines();
  await w.flush(new AbortController().signal);
  return { out: stdout.text(), err: stderr.text(), w };
}

describe('LogWriter', () => {
  it('separates stdout and stderr lines', async () => {
    const { out, err } = await run([
      criLine(ts(0), 'stdout', 'F', 'o1'),
      criLine(ts(1), 'stderr', 'F', 'e1'),
      criLine(ts(2), 'stdout', 'F', 'o2'),
    ]);
    assert.equal(out, 'o1\no2\n');
    assert.equal(err, 'e1\n');
  });

  it('joins partial records into one line per stream, even when the other stream interleaves', async () => {
    const stdout = new Sink();
    const w = new LogWriter({ stdout, stderr: stdout, timestamps: true });
    for (const l of [
      criLine(ts(0), 'stdout', 'P', 'hel'),
      criLine(ts(1), 'stderr', 'F', 'oops'),
      criLine(ts(2), 'stdout', 'P', 'lo '),
      criLine(ts(3), 'stdout', 'F', 'world'),
    ]) {
      w.add(rec(l));
    }
    await w.flush(new AbortController().signal);
    assert.equal(
      stdout.text(),
      '2024-01-02T03:04:06.000000000Z oops\n2024-01-02T03:04:05.000000000Z hello world\n',
    );
  });

  it('writes out an unfinished line at the end', async () => {
    const { out } = await run([criLine(ts(0), 'stdout', 'F', 'a'), criLine(ts(1), 'stdout', 'P', 'b')]);
    assert.equal(out, 'a\nb');
  });

  it('prefixes each line with its fixed-width timestamp', async () => {
    const { out } = await run([criLine('2024-01-02T03:04:05.123Z', 'stdout', 'F', 'x')], {
      timestamps: true,
    });
    assert.equal(out, '2024-01-02T03:04:05.123000000Z x\n');
  });

  it('skips lines older than since, deciding a split line by its first record', async () => {
    const since = parseRfc3339(ts(2))!;
    const { out } = await run(
      [
        criLine(ts(1), 'stdout', 'P', 'old-'),
        criLine(ts(2), 'stdout', 'F', 'tail'),
        criLine(ts(2), 'stdout', 'F', 'new'),
        criLine(ts(3), 'stdout', 'F', 'newer'),
      ],
      { since },
    );
    assert.equal(out, 'new\nnewer\n');
  });

  it('cuts the output at limitBytes, timestamps counted', async () => {
    const { out, w } = await run(
      [criLine(ts(0), 'stdout', 'F', 'abcdef'), criLine(ts(1), 'stdout', 'F', 'ghi')],
      { limitBytes: 4 },
    );
    assert.equal(out, 'abcd');
    assert.ok(w.limitReached);
    assert.equal(w.bytesWritten, 4);
    const t = await run([criLine(ts(0), 'stdout', 'F', 'abc')], { limitBytes: 10, timestamps: true });
    assert.equal(t.out, '2024-01-02');
  });

  it('lets a runaway split line out once it passes the bound, without repeating the timestamp', async () => {
    const { out } = await run(
      [
        criLine(ts(0), 'stdout', 'P', 'aaaa'),
        criLine(ts(0), 'stdout', 'P', 'bbbb'),
        criLine(ts(0), 'stdout', 'F', 'cc'),
      ],
      { maxJoinedBytes: 3, timestamps: true },
    );
    assert.equal(out, '2024-01-02T03:04:05.000000000Z aaaabbbbcc\n');
  });
});

describe('writeWithBackpressure', () => {
  it('waits for drain when the writable is full', async () => {
    const sink = new Sink({ highWaterMark: 4, delayMs: 20 });
    const ac = new AbortController();
    await writeWithBackpressure(sink, Buffer.from('0123456789'), ac.signal);
    assert.equal(sink.writableLength, 0, 'returned only after the buffered data was written');
  });

  it('rejects when the writable is closed or the signal aborts', async () => {
    const sink = new Sink();
    sink.destroy();
    await assert.rejects(writeWithBackpressure(sink, Buffer.from('x'), new AbortController().signal), {
      name: 'KubeletError',
      code: 'Canceled',
    });
    const slow = new Sink({ highWaterMark: 1, delayMs: 1000 });
    const ac = new AbortController();
    const p = writeWithBackpressure(slow, Buffer.from('xx'), ac.signal);
    ac.abort();
    await assert.rejects(p, { name: 'AbortError' });
    slow.destroy();
  });
});
