/**
 * The kubelet's log lines, in the formats of upstream's klog (k8s.io/klog/v2 and
 * k8s.io/component-base/logs/json as kubelet 1.20 vendors them), so the log pipelines that parse the
 * upstream kubelet parse tskubelet:
 *
 *   text  `I1128 15:12:28.909171     938 event.js:291] "Event occurred" object="node-1" reason="Starting"`
 *         severity (I, W, E), month and day, local time with microseconds, the pid padded to 7,
 *         the calling file and line, then the message quoted as Go's %q and each field as klog's
 *         structured logging writes it (strings and errors quoted, numbers and booleans bare);
 *   json  `{"ts":1764342748909.171,"caller":"event.js:291","msg":"Event occurred","v":0,"object":"node-1"}`
 *         zap's JSON: epoch milliseconds, the message, the verbosity `v`, then the fields.
 *
 * The calling file and line are the TypeScript source's, as klog names the Go file: the tests run the
 * sources, and the bundle bin/tskubelet and the package run carries a line table back to them
 * (source-positions.ts). Verbosity as
 * upstream uses it: info lines at 0 and up, debug at 4 (`--v=4`), trace at 5; warnings and errors
 * always. No buffering: each line is written whole as it is logged (stderr is synchronous for files
 * and pipes on Linux), as klog writes to stderr: upstream's `--log-flush-frequency` flushes only
 * klog's log files (`--log-file`, `--log-dir`, which tskubelet does not write), and kubelet 1.20 reads
 * the flag before parsing it (logs.InitLogs runs ahead of command.Execute). So the setting is checked
 * and kept (config/fields.ts) and every value is met: no line ever waits for a flush.
 */

import { goQuote } from './go-quote.ts';
import { sourcePosition } from './source-positions.ts';

export type LogFields = Record<string, unknown>;

/**
 * The logger every module receives. Child loggers carry identity (`pod`, `podUID`, `container`)
 * so every line about a pod can be found by it. Tests may pass `nullLogger`.
 */
export interface Logger {
  error(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
  trace(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
  isDebugEnabled(): boolean;
}

export type LogFormat = 'json' | 'text';

export interface LoggerOptions {
  /** klog's `-v`: info lines always, debug lines from 4, trace lines from 5. */
  verbosity: number;
  /**
   * klog's `--vmodule` (`pattern=N,...`): the verbosity of the files whose name (without `.js` /
   * `.ts`, or the whole path when the pattern has a `/`) matches a glob pattern. Parse it with
   * `parseVmodule` first: a bad one is the config's error, not the logger's.
   */
  vmodule?: readonly VmoduleRule[];
  format: LogFormat;
  /** Defaults to stderr, as klog does. */
  destination?: { write(line: string): unknown };
  /** The pid in text headers (default: this process's). */
  pid?: number;
  /** Microseconds since the epoch (default: the wall clock with microseconds). */
  nowMicros?: () => number;
  /** The local time zone's offset from UTC in minutes for a time, as Date#getTimezoneOffset (tests). */
  timezoneOffset?: (epochMs: number) => number;
}

/** The klog verbosity a level is written at (`v` in JSON), and from which `-v` it is shown. */
export const LEVEL_VERBOSITY = { error: 0, warn: 0, info: 0, debug: 4, trace: 5 } as const;
type Level = keyof typeof LEVEL_VERBOSITY;
const SEVERITY: Record<Level, string> = { error: 'E', warn: 'W', info: 'I', debug: 'I', trace: 'I' };

/** Whether a line of `level` is written at verbosity `v`. */
export function levelEnabled(level: Level, v: number): boolean {
  return v >= LEVEL_VERBOSITY[level];
}

export interface VmoduleRule {
  pattern: string;
  verbosity: number;
  /** Matches the whole path (the pattern has a `/`) rather than the file's base name. */
  fullPath: boolean;
  match: RegExp;
}

/** klog's glob: `*` any run of characters but `/`, `?` one such character; the rest literal. */
function globRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '[^/]*')
    .replace(/\?/g, '[^/]');
  return new RegExp(`^${body}$`);
}

/**
 * `--vmodule`'s value (`pattern=N,...`, as klog's flag); throws an Error naming the bad entry, with
 * klog's syntax rule.
 */
export function parseVmodule(spec: string): VmoduleRule[] {
  const rules: VmoduleRule[] = [];
  for (const entry of spec.split(',')) {
    if (entry === '') continue; // klog skips empty entries ("a=1,,b=2")
    const eq = entry.indexOf('=');
    const pattern = eq < 0 ? '' : entry.slice(0, eq);
    const v = eq < 0 ? NaN : Number(entry.slice(eq + 1));
    if (pattern === '' || !Number.isInteger(v) || v < 0) {
      throw new Error(`--vmodule: ${JSON.stringify(entry)} is not pattern=N (N a non-negative integer)`);
    }
    rules.push({ pattern, verbosity: v, fullPath: pattern.includes('/'), match: globRegExp(pattern) });
  }
  return rules;
}

/** The verbosity for lines from `file` (a path, with its `.js`/`.ts`): the first matching rule's, or `v`. */
function moduleVerbosity(rules: readonly VmoduleRule[], file: string, v: number): number {
  const noExt = file.replace(/\.[cm]?[jt]s$/, '');
  const base = noExt.slice(noExt.lastIndexOf('/') + 1);
  for (const r of rules) if (r.match.test(r.fullPath ? noExt : base)) return r.verbosity;
  return v;
}

/** The wall clock in microseconds: Date.now() has milliseconds only, so the monotonic clock adds the rest. */
function wallClockMicros(): () => number {
  const originMicros = Date.now() * 1000;
  const originHr = process.hrtime.bigint();
  return () => originMicros + Number((process.hrtime.bigint() - originHr) / 1000n);
}

interface Caller {
  /** The file's path. */
  file: string;
  line: number;
}

/** Reads the first call site's file and line, instead of formatting the whole stack as text. */
function callSiteOf(_err: Error, sites: NodeJS.CallSite[]): Caller {
  const site = sites[0];
  const name = site?.getFileName() ?? '???';
  // An ES module's name is a file:// URL: its path, as klog matches Go's source paths.
  return { file: name.startsWith('file://') ? name.slice(7) : name, line: site?.getLineNumber() ?? 1 };
}

/** `basename:line`, as klog prints the caller. */
function callerText(c: Caller): string {
  return `${c.file.slice(c.file.lastIndexOf('/') + 1)}:${c.line}`;
}

/** The file and line of the code that called the logger method `fn`. */
function callerOf(fn: (...args: never[]) => unknown): Caller {
  const limit = Error.stackTraceLimit;
  // Saved and put back as it was: a hook someone else installed (source maps) keeps working.
  const prepare = Object.getOwnPropertyDescriptor(Error, 'prepareStackTrace');
  Error.stackTraceLimit = 1;
  Error.prepareStackTrace = callSiteOf;
  const holder: { stack?: unknown } = {};
  Error.captureStackTrace(holder, fn);
  const caller = holder.stack;
  if (prepare) Object.defineProperty(Error, 'prepareStackTrace', prepare);
  else Reflect.deleteProperty(Error, 'prepareStackTrace');
  Error.stackTraceLimit = limit;
  if (typeof caller !== 'object' || caller === null) return { file: '???', line: 1 };
  const site = caller as Caller;
  // In the bundle, the source file and line the code came from (its line table).
  return sourcePosition(site.file, site.line) ?? site;
}

/** One field as klog's kvListFormat writes it (objects, which Go prints with %+v, as JSON). */
function textValue(v: unknown): string {
  if (typeof v === 'string') return goQuote(v);
  if (v instanceof Error) return goQuote(v.message);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v === undefined) return '(MISSING)';
  if (v === null) return '<nil>';
  try {
    return JSON.stringify(v) ?? typeof v;
  } catch (err) {
    // A cycle: say so in the value rather than lose the line.
    return goQuote(`<unencodable: ${err instanceof Error ? err.message : typeof v}>`);
  }
}

function jsonValue(v: unknown): unknown {
  if (v instanceof Error) return v.message;
  if (typeof v === 'bigint') return v.toString();
  return v;
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));

interface Sink {
  write(level: Level, caller: string, msg: string, fields: readonly LogFields[]): void;
}

function textSink(opts: LoggerOptions, dest: { write(line: string): unknown }): Sink {
  const now = opts.nowMicros ?? wallClockMicros();
  const pid = String(opts.pid ?? process.pid).padStart(7, ' ');
  const tzOffset = opts.timezoneOffset ?? ((ms: number) => new Date(ms).getTimezoneOffset());
  return {
    write(level, caller, msg, fields) {
      const micros = now();
      const ms = Math.floor(micros / 1000);
      // The local wall clock, as klog's time.Now().Date()/Clock(): shift by the zone, read as UTC.
      const d = new Date(ms - tzOffset(ms) * 60_000);
      const us = String(micros % 1_000_000).padStart(6, '0');
      let line =
        `${SEVERITY[level]}${pad2(d.getUTCMonth() + 1)}${pad2(d.getUTCDate())} ` +
        `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}.${us} ` +
        `${pid} ${caller}] ${goQuote(msg)}`;
      for (const f of fields) {
        for (const k in f) line += ` ${k}=${textValue(f[k])}`;
      }
      dest.write(`${line}\n`);
    },
  };
}

function jsonSink(opts: LoggerOptions, dest: { write(line: string): unknown }): Sink {
  const now = opts.nowMicros ?? wallClockMicros();
  return {
    write(level, caller, msg, fields) {
      const entry: Record<string, unknown> = {
        ts: now() / 1000,
        caller,
        msg,
        v: LEVEL_VERBOSITY[level],
      };
      for (const f of fields) {
        for (const k in f) {
          if (k !== 'ts' && k !== 'caller' && k !== 'msg' && k !== 'v') entry[k] = jsonValue(f[k]);
        }
      }
      let line: string;
      try {
        line = JSON.stringify(entry);
      } catch (err) {
        // A field that JSON cannot hold (a cycle): the line without the fields, and why.
        line = JSON.stringify({ ts: entry.ts, caller, msg, v: entry.v, logError: String(err) });
      }
      dest.write(`${line}\n`);
    },
  };
}

interface Verbosity {
  v: number;
  rules: readonly VmoduleRule[];
  /** Per calling file: its verbosity under the rules (a handful of files, looked up once each). */
  byFile: Map<string, number>;
}

function verbosityOf(vb: Verbosity, file: string): number {
  let v = vb.byFile.get(file);
  if (v === undefined) {
    v = moduleVerbosity(vb.rules, file, vb.v);
    vb.byFile.set(file, v);
  }
  return v;
}

function makeLogger(sink: Sink, vb: Verbosity, fields: readonly LogFields[]): Logger {
  const at = (level: Level) => {
    // Without --vmodule a level below -v costs nothing; with it, the caller decides.
    if (vb.rules.length === 0 && !levelEnabled(level, vb.v)) return () => {};
    const log = (msg: string, f?: LogFields): void => {
      const caller = callerOf(log);
      if (vb.rules.length > 0 && !levelEnabled(level, verbosityOf(vb, caller.file))) return;
      sink.write(level, callerText(caller), msg, f ? [...fields, f] : fields);
    };
    return log;
  };
  const isDebugEnabled = (): boolean =>
    levelEnabled('debug', vb.rules.length === 0 ? vb.v : verbosityOf(vb, callerOf(isDebugEnabled).file));
  return {
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    trace: at('trace'),
    child: (f) => makeLogger(sink, vb, [...fields, f]),
    isDebugEnabled,
  };
}

export function createLogger(opts: LoggerOptions): Logger {
  const dest = opts.destination ?? process.stderr;
  const sink = opts.format === 'json' ? jsonSink(opts, dest) : textSink(opts, dest);
  return makeLogger(sink, { v: opts.verbosity, rules: opts.vmodule ?? [], byFile: new Map() }, []);
}

/** A logger that drops everything; for unit tests. */
export const nullLogger: Logger = {
  error: () => {},
  warn: () => {},
  info: () => {},
  debug: () => {},
  trace: () => {},
  child: () => nullLogger,
  isDebugEnabled: () => false,
};
