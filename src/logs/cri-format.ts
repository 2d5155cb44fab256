/**
 * The CRI container log line format (upstream kuberuntime/logs parseCRILog; containerd writes it):
 *
 *   <RFC3339Nano timestamp> <stdout|stderr> <tag> <content>\n
 *
 * where the tag's first `:`-separated field is `P` for a partial record (the line continues in the
 * next record of the same stream) or `F` for the full/final one. Timestamps keep nanoseconds and
 * the writer's UTC offset, since output re-prints them in upstream's fixed-width form.
 */

export type LogStream = 'stdout' | 'stderr';

/** An instant with nanosecond precision, plus how it was written (for printing it back). */
export interface LogTime {
  /** Seconds since the Unix epoch (may be negative). */
  sec: number;
  /** 0 … 999 999 999. */
  nsec: number;
  /** The wall clock as written, `YYYY-MM-DDTHH:MM:SS`. */
  wall: string;
  /** `Z` for a zero offset, else `+hh:mm` / `-hh:mm`. */
  zone: string;
}

export interface CriRecord {
  time: LogTime;
  stream: LogStream;
  partial: boolean;
  /** The content: for `F` records with its trailing newline, for `P` records without it. */
  content: Buffer;
}

export type ParseResult = { ok: true; record: CriRecord } | { ok: false; reason: string };

const SPACE = 0x20;
const NEWLINE = 0x0a;

// RFC3339 with an optional fraction of any length (upstream RFC3339NanoLenient; Go also accepts
// fractions on plain RFC3339), upper-case T and Z as Go's parser requires.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/;

/** Parses an RFC3339 (optionally fractional) timestamp; undefined when it is not one. */
export function parseRfc3339(text: string): LogTime | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [, ys, mos, ds, hs, mis, ss, frac, zone] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string | undefined,
    string,
  ];
  const year = Number(ys);
  const month = Number(mos);
  const day = Number(ds);
  const hour = Number(hs);
  const minute = Number(mis);
  const second = Number(ss);
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return undefined;
  if (day < 1 || day > daysInMonth(year, month)) return undefined;
  let offsetSec = 0;
  let outZone = 'Z';
  if (zone !== 'Z') {
    const zh = Number(zone.slice(1, 3));
    const zm = Number(zone.slice(4, 6));
    if (zh > 23 || zm > 59) return undefined;
    offsetSec = (zone[0] === '-' ? -1 : 1) * (zh * 3600 + zm * 60);
    if (offsetSec !== 0) outZone = zone;
  }
  // setUTCFullYear, unlike Date.UTC, does not map years 0–99 onto 1900–1999.
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, 0);
  const nsec = frac === undefined ? 0 : Number(frac.slice(0, 9).padEnd(9, '0'));
  return { sec: d.getTime() / 1000 - offsetSec, nsec, wall: text.slice(0, 19), zone: outZone };
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Upstream RFC3339NanoFixed: always nine fraction digits, the writer's own offset. */
export function formatLogTime(t: LogTime): string {
  return `${t.wall}.${String(t.nsec).padStart(9, '0')}${t.zone}`;
}

/** True when `a` is strictly before `b`. */
export function isBefore(a: Pick<LogTime, 'sec' | 'nsec'>, b: Pick<LogTime, 'sec' | 'nsec'>): boolean {
  return a.sec < b.sec || (a.sec === b.sec && a.nsec < b.nsec);
}

/**
 * Parses one record, `line` being everything up to and including its newline (the last record of
 * a file may lack it). Never throws: a malformed record comes back with the reason.
 */
export function parseCriRecord(line: Buffer): ParseResult {
  const s1 = line.indexOf(SPACE);
  if (s1 < 0) return { ok: false, reason: 'timestamp is not found' };
  const tsText = line.toString('latin1', 0, s1);
  const time = parseRfc3339(tsText);
  if (!time) return { ok: false, reason: `unexpected timestamp ${JSON.stringify(tsText.slice(0, 64))}` };
  const s2 = line.indexOf(SPACE, s1 + 1);
  if (s2 < 0) return { ok: false, reason: 'stream type is not found' };
  const stream = line.toString('latin1', s1 + 1, s2);
  if (stream !== 'stdout' && stream !== 'stderr') {
    return { ok: false, reason: `unexpected stream type ${JSON.stringify(stream.slice(0, 64))}` };
  }
  const s3 = line.indexOf(SPACE, s2 + 1);
  if (s3 < 0) return { ok: false, reason: 'log tag is not found' };
  const partial = isPartialTag(line, s2 + 1, s3);
  let end = line.length;
  if (partial && end > s3 + 1 && line[end - 1] === NEWLINE) end--;
  return { ok: true, record: { time, stream, partial, content: line.subarray(s3 + 1, end) } };
}

/** The tag's first `:`-separated field is exactly `P` (later fields are for forward compatibility). */
function isPartialTag(buf: Buffer, start: number, end: number): boolean {
  return buf[start] === 0x50 /* P */ && (end === start + 1 || buf[start + 1] === 0x3a); /* : */
}

/**
 * For tailing backwards: does the record starting at `start` continue on the next record (tag P)?
 * Looks only within `buf` and stops at a newline; anything unreadable counts as a complete line.
 */
export function recordIsPartial(buf: Buffer, start: number): boolean {
  let spaces = 0;
  let tagStart = -1;
  for (let i = start; i < buf.length && i < start + 256; i++) {
    const c = buf[i];
    if (c === NEWLINE) return false;
    if (c !== SPACE) continue;
    spaces++;
    if (spaces === 2) tagStart = i + 1;
    if (spaces === 3) return isPartialTag(buf, tagStart, i);
  }
  return false;
}
