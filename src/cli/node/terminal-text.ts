/**
 * Text that came from pods (log lines, messages, names, annotations, env values) made safe to
 * print on the user's terminal: a container must not be able to drive root's terminal (move the
 * cursor, rewrite lines, set the title, answer back through OSC/DCS sequences).
 *
 * Upstream counterpart: k8s.io/cli-runtime/pkg/printers/terminal.go (`EscapeTerminal`, used by
 * kubectl describe and get), which replaces ESC with `^[` and CR with `\r` only. Here every C0
 * control but TAB and LF, DEL and every C1 control (U+0080–U+009F: 8-bit CSI, OSC, DCS, NEL) is
 * shown as an escape: ESC `^[` and CR `\r` as kubectl writes them, the others `\xNN` (C0, DEL) or
 * `\u00NN` (C1). Human-readable, not reversible.
 */
import { StringDecoder } from 'node:string_decoder';
import { Transform } from 'node:stream';

/** What a terminal may act on: C0 but TAB and LF, DEL, C1. */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** DEL and C1: what JSON.stringify and the YAML printer leave as they are. */
const HIGH_CONTROLS = /[\u007f-\u009f]/g;

function hex2(c: string): string {
  return c.charCodeAt(0).toString(16).padStart(2, '0');
}

function shown(c: string): string {
  if (c === '\u001b') return '^[';
  if (c === '\r') return '\\r';
  return c.charCodeAt(0) < 0x80 ? `\\x${hex2(c)}` : `\\u00${hex2(c)}`;
}

/** `s` with every control a terminal acts on shown as an escape; TAB and LF kept. */
export function escapeTerminal(s: string): string {
  return s.replace(CONTROLS, shown);
}

/**
 * JSON text for a terminal: JSON.stringify already writes C0 as `\u00NN`; DEL and C1 are written
 * the same way, which JSON parsers read back as the same characters.
 */
export function jsonForTerminal(value: unknown, indent: number): string {
  return JSON.stringify(value, null, indent).replace(HIGH_CONTROLS, (c) => `\\u00${hex2(c)}`);
}

/**
 * YAML text for a terminal: the printer escapes C0 itself and double-quotes such strings; DEL and
 * C1 are written as `\xNN`, the same character again in a double-quoted scalar.
 */
export function yamlForTerminal(yaml: string): string {
  return yaml.replace(HIGH_CONTROLS, (c) => `\\x${hex2(c)}`);
}

/**
 * A stream of bytes (a container's log) in, the same text escaped for a terminal out. Bytes are
 * read as UTF-8 (a character split across chunks is kept whole; invalid bytes, a raw 0x9B among
 * them, become U+FFFD).
 */
export function terminalEscaper(): Transform {
  const decoder = new StringDecoder('utf8');
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      done(null, escapeTerminal(decoder.write(chunk)));
    },
    flush(done) {
      done(null, escapeTerminal(decoder.end()));
    },
  });
}
