import { pino, type Logger as PinoLogger, type LevelWithSilent } from 'pino';

export type LogFields = Record<string, unknown>;

/**
 * The logger every module receives. Child loggers carry identity (`pod`, `podUID`, `container`)
 * so every line about a pod can be found by it. pino is behind it; tests may pass `nullLogger`.
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
  /** klog-style verbosity: 0-2 info, 3-4 debug, 5+ trace. */
  verbosity: number;
  format: LogFormat;
  /** Defaults to stderr, as klog does. */
  destination?: NodeJS.WritableStream;
}

export function levelForVerbosity(v: number): LevelWithSilent {
  if (v >= 5) return 'trace';
  if (v >= 3) return 'debug';
  return 'info';
}

function wrap(p: PinoLogger): Logger {
  return {
    error: (msg, f) => (f ? p.error(f, msg) : p.error(msg)),
    warn: (msg, f) => (f ? p.warn(f, msg) : p.warn(msg)),
    info: (msg, f) => (f ? p.info(f, msg) : p.info(msg)),
    debug: (msg, f) => (f ? p.debug(f, msg) : p.debug(msg)),
    trace: (msg, f) => (f ? p.trace(f, msg) : p.trace(msg)),
    child: (f) => wrap(p.child(f)),
    isDebugEnabled: () => p.isLevelEnabled('debug'),
  };
}

/** klog-like single line: `I1122 01:25:43.123456 message key=value ...`. */
function textLine(obj: Record<string, unknown>): string {
  const levelChar: Record<number, string> = { 10: 'T', 20: 'D', 30: 'I', 40: 'W', 50: 'E', 60: 'F' };
  const { level, time, msg, pid: _pid, hostname: _hostname, ...rest } = obj;
  const d = new Date(typeof time === 'number' ? time : Date.now());
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const stamp = `${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}`;
  const kv = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v)}`)
    .join(' ');
  return `${levelChar[Number(level)] ?? 'I'}${stamp} ${typeof msg === 'string' ? msg : ''}${kv ? ' ' + kv : ''}\n`;
}

export function createLogger(opts: LoggerOptions): Logger {
  const dest = opts.destination ?? process.stderr;
  const level = levelForVerbosity(opts.verbosity);
  if (opts.format === 'json') {
    return wrap(pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, dest));
  }
  const textStream = {
    write(chunk: string): void {
      try {
        dest.write(textLine(JSON.parse(chunk) as Record<string, unknown>));
      } catch {
        // A line pino produced but we could not parse: write it raw rather than lose it.
        dest.write(chunk);
      }
    },
  };
  return wrap(pino({ level, base: undefined }, textStream));
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
