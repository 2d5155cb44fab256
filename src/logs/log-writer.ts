/**
 * Turns parsed CRI records into output (upstream kuberuntime/logs logWriter): skips lines older
 * than `since`, joins a line split into `P` records back into one write (so stdout and stderr
 * sharing one response never interleave mid-line), prefixes the timestamp when asked, cuts at
 * `limitBytes`, and writes with backpressure.
 */
import type { Writable } from 'node:stream';
import { abortReason } from '../util/abort.ts';
import { KubeletError } from '../util/errors.ts';
import { formatLogTime, isBefore, type CriRecord, type LogStream } from './cri-format.ts';
import { MAX_JOINED_LINE_BYTES } from './constants.ts';

export interface LogWriterOptions {
  stdout: Writable;
  stderr: Writable;
  timestamps: boolean;
  /** Lines whose (first record's) timestamp is before this are skipped. */
  since?: { sec: number; nsec: number };
  limitBytes?: number;
  /** Held `P` records are written out once a line grows past this (bounded memory). */
  maxJoinedBytes?: number;
}

interface OpenLine {
  /** Whether the line passed the since filter (decided by its first record). */
  include: boolean;
  parts: Buffer[];
  size: number;
}

const SPACE = Buffer.from(' ');

export class LogWriter {
  private readonly opts: LogWriterOptions;
  private readonly maxJoined: number;
  private remaining: number;
  private readonly open: Record<LogStream, OpenLine | undefined> = { stdout: undefined, stderr: undefined };
  private queue: { to: Writable; data: Buffer }[] = [];
  private written = 0;

  constructor(opts: LogWriterOptions) {
    this.opts = opts;
    this.maxJoined = opts.maxJoinedBytes ?? MAX_JOINED_LINE_BYTES;
    this.remaining = opts.limitBytes ?? Number.POSITIVE_INFINITY;
  }

  /** Bytes handed to the writables so far. */
  get bytesWritten(): number {
    return this.written;
  }

  /** True once `limitBytes` is used up: nothing more will be written. */
  get limitReached(): boolean {
    return this.remaining <= 0;
  }

  /** Queues one record's output; call `flush()` to write it. */
  add(rec: CriRecord): void {
    if (this.limitReached) return;
    let line = this.open[rec.stream];
    if (!line) {
      line = { include: !(this.opts.since && isBefore(rec.time, this.opts.since)), parts: [], size: 0 };
      if (line.include && this.opts.timestamps) this.push(line, Buffer.from(formatLogTime(rec.time)), SPACE);
      this.open[rec.stream] = line;
    }
    if (line.include) this.push(line, rec.content);
    if (!rec.partial) {
      this.emit(rec.stream, line);
      this.open[rec.stream] = undefined;
    } else if (line.size > this.maxJoined) {
      // A runaway line: let out what we hold and keep streaming the rest of it as it comes.
      this.emit(rec.stream, line);
    }
  }

  /** Queues the unfinished lines (only `P` records so far), e.g. at the end of the file. */
  endOpenLines(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      const line = this.open[stream];
      if (line) this.emit(stream, line);
      this.open[stream] = undefined;
    }
  }

  private push(line: OpenLine, ...bufs: Buffer[]): void {
    for (const b of bufs) {
      line.parts.push(b);
      line.size += b.length;
    }
  }

  private emit(stream: LogStream, line: OpenLine): void {
    if (line.size === 0 || this.limitReached) return;
    let data = line.parts.length === 1 ? line.parts[0]! : Buffer.concat(line.parts, line.size);
    line.parts = [];
    line.size = 0;
    if (data.length > this.remaining) data = data.subarray(0, this.remaining);
    this.remaining -= data.length;
    const to = stream === 'stdout' ? this.opts.stdout : this.opts.stderr;
    this.queue.push({ to, data });
  }

  /** Writes what is queued, in order, waiting for 'drain' whenever a writable asks for it. */
  async flush(signal: AbortSignal): Promise<void> {
    const queue = this.queue;
    this.queue = [];
    for (let i = 0; i < queue.length;) {
      // Coalesce consecutive writes to the same writable into one chunk.
      const to = queue[i]!.to;
      let j = i;
      while (j < queue.length && queue[j]!.to === to) j++;
      const data = j - i === 1 ? queue[i]!.data : Buffer.concat(queue.slice(i, j).map((q) => q.data));
      i = j;
      await writeWithBackpressure(to, data, signal);
      this.written += data.length;
    }
  }
}

/** Writes `data`; when the writable's buffer is full, waits for 'drain' (or close, error, abort). */
export async function writeWithBackpressure(w: Writable, data: Buffer, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw abortReason(signal);
  if (w.destroyed || w.writableEnded) {
    throw new KubeletError('Canceled', 'write container log', 'the output stream is closed');
  }
  if (w.write(data)) return;
  await new Promise<void>((resolve, reject) => {
    const done = (err?: Error) => {
      w.off('drain', onDrain);
      w.off('close', onClose);
      w.off('error', onError);
      signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = () => done();
    const onClose = () =>
      done(new KubeletError('Canceled', 'write container log', 'the output stream closed while writing'));
    const onError = (err: Error) =>
      done(new KubeletError('Unavailable', 'write container log', err.message, { cause: err }));
    const onAbort = () => done(abortReason(signal));
    w.on('drain', onDrain);
    w.on('close', onClose);
    w.on('error', onError);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
