/**
 * PodLogOptions (v1) from a `/containerLogs` query, decoded and validated as the upstream kubelet
 * does (server.go getContainerLogs: the legacy `tail` parameter, then the v1 query conversion, then
 * ValidatePodLogOptions): a value that does not decode is a 400, a decoded but invalid set a 422.
 */
import { parseRfc3339 } from './cri-format.ts';

/** What a `kubectl logs` request asks for, decoded. Absent numbers mean "no limit". */
export interface LogOptions {
  /** Keep streaming new lines until the container stops or the client goes away. */
  follow: boolean;
  /** The previous (terminated) instance of the container; the caller picks the log path for it. */
  previous: boolean;
  /** Prefix every line with its RFC3339Nano timestamp and a space. */
  timestamps: boolean;
  /** Only the last N lines (0 = only what is written from now on, with `follow`). */
  tailLines?: number;
  /** Stop after this many bytes of output (at least 1). */
  limitBytes?: number;
  /** Only lines from the last N seconds (at least 1) before the request. */
  sinceSeconds?: number;
  /** Only lines at or after this instant (nanosecond precision). */
  sinceTime?: { sec: number; nsec: number };
}

export type ParseLogOptionsResult =
  { ok: true; options: LogOptions } | { ok: false; status: 400 | 422; message: string };

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** Go's zero time (0001-01-01T00:00:00Z): what an empty or `null` sinceTime decodes to. */
const GO_ZERO_TIME = { sec: -62135596800, nsec: 0 };

type Decoded<T> = { ok: true; value: T } | { ok: false; message: string };

/** runtime.Convert_Slice_string_To_bool: only `0` and (any case) `false` are false. */
function decodeBool(v: string | null): boolean {
  if (v === null) return false;
  return v !== '0' && v.toLowerCase() !== 'false';
}

/** strconv.ParseInt(v, 10, 64), then clamped to what a double holds exactly. */
function decodeInt64(name: string, v: string): Decoded<number> {
  if (!/^[+-]?\d+$/.test(v)) {
    return { ok: false, message: `${name}: invalid syntax ${JSON.stringify(v.slice(0, 64))}` };
  }
  const n = BigInt(v);
  if (n < INT64_MIN || n > INT64_MAX) {
    return { ok: false, message: `${name}: value out of range ${JSON.stringify(v.slice(0, 64))}` };
  }
  // Beyond 2^53 every count or byte limit means "unlimited" anyway.
  const clamped = n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);
  return { ok: true, value: Math.max(clamped, Number.MIN_SAFE_INTEGER) };
}

/** metav1.Time UnmarshalQueryParameter: RFC3339; empty or `null` is Go's zero time. */
function decodeTime(v: string): Decoded<{ sec: number; nsec: number }> {
  if (v === '' || v === 'null') return { ok: true, value: GO_ZERO_TIME };
  const t = parseRfc3339(v);
  if (!t) return { ok: false, message: `sinceTime: not an RFC3339 time ${JSON.stringify(v.slice(0, 64))}` };
  return { ok: true, value: { sec: t.sec, nsec: t.nsec } };
}

/**
 * Decodes and validates the query of a container logs request. Only the first value of a repeated
 * parameter counts, as in upstream's conversion.
 */
export function parseLogOptions(query: URLSearchParams): ParseLogOptionsResult {
  // Backwards compatibility: `tail` replaces tailLines, and `tail=all` means no tail at all.
  const tail = query.get('tail');
  let tailLines = query.get('tailLines');
  if (tail !== null && tail !== '') tailLines = tail === 'all' ? null : tail;

  const options: LogOptions = {
    follow: decodeBool(query.get('follow')),
    previous: decodeBool(query.get('previous')),
    timestamps: decodeBool(query.get('timestamps')),
  };
  const ints = [
    ['tailLines', tailLines],
    ['limitBytes', query.get('limitBytes')],
    ['sinceSeconds', query.get('sinceSeconds')],
  ] as const;
  for (const [name, raw] of ints) {
    if (raw === null) continue;
    const d = decodeInt64(name, raw);
    if (!d.ok) return { ok: false, status: 400, message: `unable to decode query: ${d.message}` };
    options[name] = d.value;
  }
  const sinceTime = query.get('sinceTime');
  if (sinceTime !== null) {
    const d = decodeTime(sinceTime);
    if (!d.ok) return { ok: false, status: 400, message: `unable to decode query: ${d.message}` };
    options.sinceTime = d.value;
  }

  // ValidatePodLogOptions.
  const errs: string[] = [];
  if (options.tailLines !== undefined && options.tailLines < 0) {
    errs.push(`tailLines: Invalid value: ${options.tailLines}: must be greater than or equal to 0`);
  }
  if (options.limitBytes !== undefined && options.limitBytes < 1) {
    errs.push(`limitBytes: Invalid value: ${options.limitBytes}: must be greater than 0`);
  }
  if (options.sinceSeconds !== undefined && options.sinceTime !== undefined) {
    errs.push('Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified');
  } else if (options.sinceSeconds !== undefined && options.sinceSeconds < 1) {
    errs.push(`sinceSeconds: Invalid value: ${options.sinceSeconds}: must be greater than 0`);
  }
  if (errs.length > 0) return { ok: false, status: 422, message: `invalid request: ${errs.join(', ')}` };
  return { ok: true, options };
}
