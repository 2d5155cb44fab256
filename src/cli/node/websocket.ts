/**
 * The client side of RFC 6455 framing, just what exec needs: masked binary frames out, frames in
 * (fragmented messages reassembled, ping answered with pong, close answered and reported), over a
 * socket some HTTP client already upgraded. Bounded: a message larger than `maxMessageBytes` is a
 * protocol error.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';

export const OP_CONTINUATION = 0x0;
export const OP_TEXT = 0x1;
export const OP_BINARY = 0x2;
export const OP_CLOSE = 0x8;
export const OP_PING = 0x9;
export const OP_PONG = 0xa;

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** A fresh `Sec-WebSocket-Key`. */
export function websocketKey(): string {
  return randomBytes(16).toString('base64');
}

/** The `Sec-WebSocket-Accept` a server must answer to `key`. */
export function acceptFor(key: string): string {
  return createHash('sha1')
    .update(key + GUID)
    .digest('base64');
}

/** One frame, FIN set, masked (a client must mask). */
export function encodeFrame(opcode: number, payload: Buffer, mask: Buffer = randomBytes(4)): Buffer {
  const len = payload.length;
  const headerLen = 2 + (len < 126 ? 0 : len < 65536 ? 2 : 8) + 4;
  const out = Buffer.allocUnsafe(headerLen + len);
  out[0] = 0x80 | (opcode & 0x0f);
  let o = 2;
  if (len < 126) out[1] = 0x80 | len;
  else if (len < 65536) {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(len, 2);
    o = 4;
  } else {
    out[1] = 0x80 | 127;
    out.writeBigUInt64BE(BigInt(len), 2);
    o = 10;
  }
  mask.copy(out, o, 0, 4);
  o += 4;
  for (let i = 0; i < len; i++) out[o + i] = (payload[i] ?? 0) ^ (mask[i & 3] ?? 0);
  return out;
}

export interface Message {
  opcode: number;
  data: Buffer;
}

/**
 * Parses incoming frames. `push` bytes as they arrive; complete messages (data frames reassembled,
 * control frames as they come) are returned in order. Throws on a protocol error.
 */
export class FrameParser {
  private buf: Buffer = Buffer.alloc(0);
  private fragments: Buffer[] = [];
  private fragmentBytes = 0;
  private fragmentOpcode = 0;
  private readonly maxMessageBytes: number;
  constructor(maxMessageBytes = 16 * 1024 * 1024) {
    this.maxMessageBytes = maxMessageBytes;
  }

  push(chunk: Buffer): Message[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: Message[] = [];
    for (;;) {
      if (this.buf.length < 2) return out;
      const b0 = this.buf[0] ?? 0;
      const b1 = this.buf[1] ?? 0;
      const fin = (b0 & 0x80) !== 0;
      const opcode = b0 & 0x0f;
      const masked = (b1 & 0x80) !== 0;
      let len = b1 & 0x7f;
      let o = 2;
      if (len === 126) {
        if (this.buf.length < 4) return out;
        len = this.buf.readUInt16BE(2);
        o = 4;
      } else if (len === 127) {
        if (this.buf.length < 10) return out;
        const big = this.buf.readBigUInt64BE(2);
        if (big > BigInt(this.maxMessageBytes))
          throw new Error(`websocket frame of ${big} bytes is too large`);
        len = Number(big);
        o = 10;
      }
      if (len > this.maxMessageBytes) throw new Error(`websocket frame of ${len} bytes is too large`);
      const maskLen = masked ? 4 : 0;
      if (this.buf.length < o + maskLen + len) return out;
      const mask = masked ? this.buf.subarray(o, o + 4) : undefined;
      o += maskLen;
      const payload = Buffer.from(this.buf.subarray(o, o + len));
      if (mask) for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] ?? 0) ^ (mask[i & 3] ?? 0);
      this.buf = this.buf.subarray(o + len);
      if (opcode >= 0x8) {
        if (!fin || len > 125) throw new Error('websocket control frame is fragmented or too long');
        out.push({ opcode, data: payload });
        continue;
      }
      if (opcode !== OP_CONTINUATION) {
        if (this.fragments.length > 0) throw new Error('websocket data frame inside a fragmented message');
        this.fragmentOpcode = opcode;
      } else if (this.fragments.length === 0) {
        throw new Error('websocket continuation frame without a message');
      }
      this.fragments.push(payload);
      this.fragmentBytes += payload.length;
      if (this.fragmentBytes > this.maxMessageBytes) throw new Error('websocket message is too large');
      if (fin) {
        out.push({ opcode: this.fragmentOpcode, data: Buffer.concat(this.fragments) });
        this.fragments = [];
        this.fragmentBytes = 0;
      }
    }
  }
}

/** Writes a frame unless the socket is gone. */
export function sendFrame(socket: Duplex, opcode: number, payload: Buffer): boolean {
  if (socket.destroyed || socket.writableEnded) return false;
  return socket.write(encodeFrame(opcode, payload));
}
