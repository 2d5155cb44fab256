/**
 * Splits a byte stream into newline-terminated records. The bytes after the last newline are kept
 * until more arrive (a record the runtime is still writing); a record longer than the bound
 * without a newline is dropped up to its newline, so a corrupt file cannot grow memory.
 */
import { MAX_RECORD_BYTES } from './constants.ts';

const NEWLINE = 0x0a;

export class RecordSplitter {
  private carry: Buffer[] = [];
  private carrySize = 0;
  private discarding = false;
  /** Records dropped for being too long. */
  dropped = 0;

  private readonly maxRecordBytes: number;

  constructor(maxRecordBytes = MAX_RECORD_BYTES) {
    this.maxRecordBytes = maxRecordBytes;
  }

  /** The complete records in `chunk` (with what was carried before), each with its newline. */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, start)) {
      if (this.discarding) {
        this.discarding = false;
      } else if (this.carrySize > 0) {
        this.carry.push(chunk.subarray(start, nl + 1));
        out.push(Buffer.concat(this.carry));
      } else {
        out.push(chunk.subarray(start, nl + 1));
      }
      this.carry = [];
      this.carrySize = 0;
      start = nl + 1;
    }
    if (start < chunk.length && !this.discarding) {
      // Copy: the caller reuses its read buffer.
      this.carry.push(Buffer.from(chunk.subarray(start)));
      this.carrySize += chunk.length - start;
      if (this.carrySize > this.maxRecordBytes) {
        this.carry = [];
        this.carrySize = 0;
        this.discarding = true;
        this.dropped++;
      }
    }
    return out;
  }

  /** Takes the unfinished record (bytes after the last newline), leaving nothing carried. */
  takeRest(): Buffer | undefined {
    const rest = this.carrySize > 0 ? Buffer.concat(this.carry) : undefined;
    this.reset();
    return rest;
  }

  reset(): void {
    this.carry = [];
    this.carrySize = 0;
    this.discarding = false;
  }
}
