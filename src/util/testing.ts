/**
 * Test helpers shared by every folder (not exported from any index, not part of the build): a logger
 * that records what it was told, a way to let pending callbacks run, and mocked time for back-off.
 */
import type { TestContext } from 'node:test';
import type { Logger, LogFields } from './logger.ts';

export interface LogLine {
  level: 'error' | 'warn' | 'info' | 'debug' | 'trace';
  msg: string;
  /** The child loggers' fields merged with the line's own. */
  fields: LogFields;
}

/** A Logger that records every line, trace included, in `lines` (child fields merged in; debug enabled). */
export function recordingLogger(lines: LogLine[] = [], base: LogFields = {}): Logger & { lines: LogLine[] } {
  const at =
    (level: LogLine['level']) =>
    (msg: string, fields?: LogFields): void => {
      lines.push({ level, msg, fields: { ...base, ...fields } });
    };
  return {
    lines,
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    trace: at('trace'),
    child: (f) => recordingLogger(lines, { ...base, ...f }),
    isDebugEnabled: () => true,
  };
}

/**
 * Lets pending promise callbacks and immediates run, `rounds` turns of the event loop. Uses
 * setImmediate only, so it still works while a test mocks setTimeout/setInterval.
 */
export async function flush(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/**
 * Mocks setTimeout and fixes the jitter (Math.random 0.5 → exactly the base delay), for back-off
 * tests; returns `advance(ms)`, which ticks the mock clock and then flushes.
 */
export function fakeTime(t: TestContext): (ms: number) => Promise<void> {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  t.mock.method(Math, 'random', () => 0.5);
  return async (ms: number) => {
    t.mock.timers.tick(ms);
    await flush();
  };
}
