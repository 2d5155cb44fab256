/**
 * Test helpers shared by every folder (not exported from any index, not part of the build): a logger
 * that records what it was told, a way to let pending callbacks run, mocked time for back-off, and a
 * clock whose wall time steps.
 */
import type { TestContext } from 'node:test';
import type { Clock } from './clock.ts';
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

/**
 * A clock whose wall time can step while its monotonic time only moves with `advance`: what a
 * machine sees when NTP corrects it, a VM resumes or someone sets the date.
 */
export interface TestClock extends Clock {
  /** Time passes: both clocks move forward by `ms`. */
  readonly advance: (ms: number) => void;
  /** The wall clock steps by `ms` (negative: backwards); the monotonic clock does not move. */
  readonly stepWall: (ms: number) => void;
}

/** Starts at a fixed wall time (2026-11-24T12:00:00Z) and a monotonic reading far from 0. */
export function createTestClock(wallMs = Date.UTC(2026, 10, 24, 12), monotonicMs = 1_000_000): TestClock {
  let wall = wallMs;
  let mono = monotonicMs;
  return {
    now: () => wall,
    monotonic: () => mono,
    advance(ms) {
      if (ms < 0) throw new Error(`time does not go back: advance(${ms})`);
      wall += ms;
      mono += ms;
    },
    stepWall(ms) {
      wall += ms;
    },
  };
}
