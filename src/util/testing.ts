/**
 * Test helpers shared by every folder (not exported from any index, not part of the build): a logger
 * that records what it was told, a way to let pending callbacks run, mocked time for back-off, and a
 * clock whose wall time steps (with timers on its monotonic time).
 */
import type { TestContext } from 'node:test';
import { abortReason } from './abort.ts';
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

/**
 * Timers on a TestClock's monotonic time, for code that takes a `sleep` or `setTimeout` dependency:
 * nothing fires until `runFor` moves the clock, and then each timer fires at its due time, in
 * order, with pending promise callbacks run between two timers.
 */
export interface ManualTimers {
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Advances the clock by `ms`, firing every timer that falls due on the way. */
  runFor(ms: number): Promise<void>;
  /** Timers not yet fired. */
  pending(): number;
}

export function createManualTimers(clock: TestClock): ManualTimers {
  let seq = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const add = (fn: () => void, ms: number): number => {
    const id = ++seq;
    timers.set(id, { at: clock.monotonic() + Math.max(0, ms), fn });
    return id;
  };
  const self: ManualTimers = {
    sleep(ms, signal) {
      return new Promise<void>((resolve, reject) => {
        if (signal?.aborted) {
          reject(abortReason(signal));
          return;
        }
        const onAbort = () => {
          timers.delete(id);
          reject(abortReason(signal));
        };
        const id = add(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        }, ms);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
    setTimeout: add,
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    async runFor(ms) {
      const end = clock.monotonic() + ms;
      await flush();
      for (;;) {
        let next: [number, { at: number; fn: () => void }] | undefined;
        for (const entry of timers) if (!next || entry[1].at < next[1].at) next = entry;
        if (!next || next[1].at > end) break;
        timers.delete(next[0]);
        clock.advance(Math.max(0, next[1].at - clock.monotonic()));
        next[1].fn();
        await flush();
      }
      clock.advance(Math.max(0, end - clock.monotonic()));
      await flush();
    },
    pending: () => timers.size,
  };
  return self;
}
