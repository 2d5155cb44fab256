/**
 * What the in-memory CRI services (fake-runtime.ts, fake-image.ts; import them from testing.ts) share:
 * the call log, injected errors and latencies, and deadlines and cancellation as the real client
 * reports them.
 */
import { GrpcStatus } from '../../util/grpc-wire.ts';
import { sleep } from '../../util/abort.ts';
import { describeError } from '../../util/errors.ts';
import { CriError } from './errors.ts';
import type { CallOptions } from './types.ts';

/** A gRPC status code by name, e.g. `'UNAVAILABLE'`, `'NOT_FOUND'`, `'DEADLINE_EXCEEDED'`. */
export type GrpcCodeName = keyof typeof GrpcStatus;

/** Where the fakes take time from. CRI timestamps are `now() × 1e6` (nanoseconds). */
export interface FakeClock {
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when it aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export interface FakeServiceOptions {
  /** Default: `Date.now()` and `setTimeout`, looked up at each call (node:test mock timers work). */
  clock?: FakeClock;
  /** Deadline of a call that gives no `timeoutMs`; default none. */
  timeoutMs?: number;
}

export interface FakeCall<M extends string> {
  method: M;
  /** The arguments as passed, without the trailing CallOptions. */
  args: unknown[];
  opts: CallOptions | undefined;
}

const realClock: FakeClock = { now: () => Date.now(), sleep };

export const criError = (op: string, code: GrpcCodeName, details: string) =>
  new CriError(op, GrpcStatus[code], details);

/** The machinery both fakes share: the call log, injected errors and latencies, deadlines, cancellation. */
export abstract class FakeCriService<M extends string> {
  readonly calls: FakeCall<M>[] = [];
  protected readonly clock: FakeClock;
  private readonly timeoutMs: number | undefined;
  private readonly failures = new Map<M, { err: Error | GrpcCodeName; message: string; once: boolean }[]>();
  private readonly latencies = new Map<M, number>();

  constructor(opts: FakeServiceOptions = {}) {
    this.clock = opts.clock ?? realClock;
    this.timeoutMs = opts.timeoutMs;
  }

  /**
   * Makes calls of `method` fail, before they change anything: with this error, or a CriError of
   * this gRPC code. Injected errors are used in order; a `once` error is used up by one call, any
   * other stays until `clearErrors`.
   */
  injectError(method: M, err: Error | GrpcCodeName, opts: { once?: boolean; message?: string } = {}): void {
    const list = this.failures.get(method) ?? [];
    list.push({ err, message: opts.message ?? `injected ${String(err)}`, once: opts.once ?? false });
    this.failures.set(method, list);
  }

  clearErrors(method?: M): void {
    if (method === undefined) this.failures.clear();
    else this.failures.delete(method);
  }

  /** Every later call of `method` takes `ms` first (Infinity: until canceled or past its deadline). */
  setLatency(method: M, ms: number): void {
    if (ms > 0) this.latencies.set(method, ms);
    else this.latencies.delete(method);
  }

  /** The method names called, in order (upstream GetCalls). */
  called(): M[] {
    return this.calls.map((c) => c.method);
  }

  /** The arguments of every call of `method`, in order. */
  callsTo(method: M): unknown[][] {
    return this.calls.filter((c) => c.method === method).map((c) => c.args);
  }

  /** Runs one call: logged, then its latency and injected error, then `body`, all within its deadline. */
  protected async call<T>(
    method: M,
    args: unknown[],
    opts: CallOptions | undefined,
    body: (signal: AbortSignal) => T | Promise<T>,
  ): Promise<T> {
    this.calls.push({ method, args, opts });
    const op = `CRI ${method.charAt(0).toUpperCase()}${method.slice(1)}`;
    const caller = opts?.signal;
    if (caller?.aborted) {
      throw criError(op, 'CANCELLED', `canceled before start: ${describeError(caller.reason)}`);
    }
    const ctl = new AbortController();
    const onAbort = () => ctl.abort(criError(op, 'CANCELLED', `canceled: ${describeError(caller?.reason)}`));
    caller?.addEventListener('abort', onAbort, { once: true });
    const timer = new AbortController();
    const timeoutMs = opts?.timeoutMs ?? this.timeoutMs;
    if (timeoutMs !== undefined) {
      const expired = criError(
        op,
        'DEADLINE_EXCEEDED',
        `context deadline exceeded (deadline ${timeoutMs} ms)`,
      );
      // A rejection only means the call ended first and cleared its timer.
      this.clock.sleep(timeoutMs, timer.signal).then(
        () => ctl.abort(expired),
        () => undefined,
      );
    }
    try {
      const latency = this.latencies.get(method) ?? 0;
      if (latency > 0) await this.wait(latency, ctl.signal);
      this.failNow(method, op);
      return await body(ctl.signal);
    } catch (err) {
      throw ctl.signal.aborted ? (ctl.signal.reason as Error) : err;
    } finally {
      caller?.removeEventListener('abort', onAbort);
      timer.abort();
    }
  }

  private wait(ms: number, signal: AbortSignal): Promise<void> {
    if (ms !== Infinity) return this.clock.sleep(ms, signal);
    return new Promise((_resolve, reject) => {
      if (signal.aborted) reject(signal.reason as Error);
      else signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
  }

  private failNow(method: M, op: string): void {
    const list = this.failures.get(method);
    const next = list?.[0];
    if (!list || !next) return;
    if (next.once) list.shift();
    throw typeof next.err === 'string' ? criError(op, next.err, next.message) : next.err;
  }
}
