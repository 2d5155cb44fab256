/**
 * The kernel log as `/dev/kmsg` presents it (kernel Documentation/ABI/testing/dev-kmsg): each
 * record is one line `priority,sequence,timestamp,flags[,…];message`, the timestamp in microseconds
 * since boot, possibly followed by continuation lines that start with a space (the record's
 * `KEY=value` dictionary). A read of `/dev/kmsg` returns exactly one record; other readers (a file,
 * a test's fake) may cut the stream anywhere, so lines are reassembled here from arbitrary chunks.
 */

/** One kernel log record (the parts upstream's kmsgparser keeps). */
export interface KmsgRecord {
  /** syslog facility × 8 + level. */
  priority: number;
  sequence: number;
  /** Microseconds since boot. */
  timestampUs: number;
  message: string;
}

const DIGITS = /^[0-9]+$/;

/**
 * Parses one record line (without its newline), as kmsgparser's parseMessage: undefined when there
 * is no `;`, fewer than three `,`-separated prefix fields, or a prefix field that is not a number.
 */
export function parseKmsgRecord(line: string): KmsgRecord | undefined {
  const semi = line.indexOf(';');
  if (semi < 0) return undefined;
  const [priority, sequence, timestamp] = line.slice(0, semi).split(',');
  if (priority === undefined || sequence === undefined || timestamp === undefined) return undefined;
  if (!DIGITS.test(priority) || !DIGITS.test(sequence) || !DIGITS.test(timestamp)) return undefined;
  return {
    priority: Number(priority),
    sequence: Number(sequence),
    timestampUs: Number(timestamp),
    message: line.slice(semi + 1),
  };
}

/**
 * Splits a byte stream into lines, whatever the chunk boundaries (a line, or a UTF-8 character, may
 * span reads). Bounded: a partial line longer than `maxLineBytes` is dropped whole (its remainder up
 * to the next newline too) and counted in `droppedLines`.
 */
export class LineSplitter {
  readonly #maxLineBytes: number;
  readonly #decoder = new TextDecoder();
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  /** Inside an over-long line: discard until its newline. */
  #skipping = false;
  droppedLines = 0;

  constructor(maxLineBytes: number) {
    this.#maxLineBytes = maxLineBytes;
  }

  /** The lines that `chunk` completes, without their newlines. */
  push(chunk: Uint8Array): string[] {
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (this.#skipping) {
        this.#skipping = false;
        continue;
      }
      if (this.#pendingBytes + piece.length > this.#maxLineBytes) {
        this.#drop();
        continue;
      }
      lines.push(this.#decode(piece));
    }
    const rest = chunk.subarray(start);
    if (rest.length > 0 && !this.#skipping) {
      if (this.#pendingBytes + rest.length > this.#maxLineBytes) {
        this.#drop();
        this.#skipping = true;
      } else {
        // Copied: the caller may reuse its buffer for the next read.
        this.#pending.push(rest.slice());
        this.#pendingBytes += rest.length;
      }
    }
    return lines;
  }

  /** Bytes held for a line not yet complete. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  #decode(last: Uint8Array): string {
    if (this.#pending.length === 0) return this.#decoder.decode(last);
    const whole = Buffer.concat([...this.#pending, last]);
    this.#pending = [];
    this.#pendingBytes = 0;
    return this.#decoder.decode(whole);
  }

  #drop(): void {
    this.#pending = [];
    this.#pendingBytes = 0;
    this.droppedLines++;
  }
}
