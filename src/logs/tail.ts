/**
 * Where the last N lines of a CRI log file start (upstream pkg/util/tail FindTailLineStartIndex),
 * found by reading backwards from the end in fixed-size blocks, so memory stays bounded whatever
 * the file's size.
 *
 * Unlike upstream, a line is a *logical* line: records tagged `P` continue into the next record,
 * so only a newline ending a non-partial record ends a line. `tailLines=3` then returns three
 * whole lines even when the runtime split long ones into several records. As upstream, an
 * unfinished line at the end of the file (no newline, or only `P` records so far) is not counted
 * and is always part of the result.
 */
import type { FileHandle } from 'node:fs/promises';
import { recordIsPartial } from './cri-format.ts';
import { TAIL_BLOCK_BYTES } from './constants.ts';

const NEWLINE = 0x0a;
/** Enough bytes after a newline to see the next record's timestamp, stream and tag. */
const HEADER_PEEK_BYTES = 256;

/** Reads exactly `length` bytes at `position` (fewer only if the file is shorter). */
async function readAt(fh: FileHandle, length: number, position: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  let off = 0;
  while (off < length) {
    const { bytesRead } = await fh.read(buf, off, length - off, position + off);
    if (bytesRead === 0) break;
    off += bytesRead;
  }
  return buf.subarray(0, off);
}

/**
 * The byte offset where the last `n` lines of the first `size` bytes of the file start: 0 when the
 * file has no more than `n` lines, `size` or the start of an unfinished last line when `n` is 0.
 */
export async function findTailStart(
  fh: FileHandle,
  size: number,
  n: number,
  blockBytes = TAIL_BLOCK_BYTES,
): Promise<number> {
  // Lines end at newlines; the start of the n-th line from the end is just after the (n+1)-th
  // line end from the end. Whether a newline ends a line depends on the tag of the record it
  // ends, whose start we only know once the newline before it is found; so `pendingNewline` is
  // the newline whose record has not been classified yet.
  let need = n + 1;
  let pendingNewline = -1;
  let after: Buffer = Buffer.alloc(0); // the first bytes following the current block
  for (let right = size; right > 0;) {
    const left = Math.max(0, right - blockBytes);
    const block = await readAt(fh, right - left, left);
    if (block.length < right - left) {
      // The file shrank under us; what we saw is all there is to tail.
      return 0;
    }
    const view = after.length > 0 ? Buffer.concat([block, after]) : block;
    for (let i = block.lastIndexOf(NEWLINE); i >= 0; i = i > 0 ? block.lastIndexOf(NEWLINE, i - 1) : -1) {
      if (pendingNewline >= 0 && !recordIsPartial(view, i + 1)) {
        need--;
        if (need === 0) return pendingNewline + 1;
      }
      pendingNewline = left + i;
    }
    after = view.subarray(0, HEADER_PEEK_BYTES);
    right = left;
  }
  // The first record of the file starts at offset 0.
  if (pendingNewline >= 0 && !recordIsPartial(after, 0)) {
    need--;
    if (need === 0) return pendingNewline + 1;
  }
  return 0;
}
