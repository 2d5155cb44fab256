/**
 * Go's `%q` of a string (strconv.Quote): double quotes, Go's escapes, printable Unicode kept, the
 * rest as \xNN, \uNNNN or \UNNNNNNNN. Upstream: strconv/quote.go.
 */
const ESCAPES: Record<string, string> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '"': '\\"',
  '\\': '\\\\',
};
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** What needs more than the quotes around it: escapes, and characters outside printable ASCII. */
// eslint-disable-next-line no-control-regex
const NEEDS_WORK = /[\x00-\x1f\x7f-\uffff"\\]/;

/**
 * A double-quoted string with Go's `%q` escaping: what upstream's label/annotation files contain,
 * and how klog quotes a log message and its string fields. Printable ASCII (nearly every log line)
 * takes the fast path.
 */
export function goQuote(s: string): string {
  if (!NEEDS_WORK.test(s)) return `"${s}"`;
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    const esc = ESCAPES[ch];
    if (esc !== undefined) out += esc;
    else if (PRINTABLE.test(ch)) out += ch;
    else if (cp < 0x80) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (cp >= 0xd800 && cp <= 0xdfff)
      out += '\\ufffd'; // a lone surrogate is not valid UTF-8
    else if (cp <= 0xffff) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return out + '"';
}
