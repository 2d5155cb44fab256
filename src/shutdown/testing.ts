/**
 * Fakes for the shutdown tests (not part of the build): a `Logind` whose every answer the test
 * controls and whose every call is recorded, and a pod fixture.
 */
import type { KubeletPod } from '../api/types.ts';
import { KubeletError } from '../util/errors.ts';
import type {
  InhibitLock,
  InhibitOptions,
  Logind,
  LogindReachability,
  ShutdownSignalHandlers,
  ShutdownWatch,
} from './logind.ts';
import { buildPod } from '../../test/kit/pod.ts';

export interface FakeLogind extends Logind {
  /** Every call and lock event in order: `delay`, `inhibit`, `release`, `watch`, `override <ms>`, `reload`, … */
  readonly calls: string[];
  /** InhibitDelayMaxUSec in ms as logind reports it now. */
  delayMs: number;
  /** When set, every call fails as if the system bus were missing, with this reason. */
  unreachable: string | undefined;
  /** What a reload sets the delay to (default: the value last written by overrideInhibitDelay). */
  delayAfterReload: number | undefined;
  /** Makes the next `inhibitShutdown` / `watchShutdown` calls fail. */
  failInhibit: Error | undefined;
  failWatch: Error | undefined;
  /** Locks granted and not released or lost. */
  heldLocks(): number;
  /** Sends PrepareForShutdown(active) to the current watch. */
  emit(active: boolean): void;
  /** Kills the current watch (its onError fires). */
  breakWatch(err?: Error): void;
  /** Makes the newest held lock go away as if its holder died (its onLost fires). */
  loseLock(): void;
  /** Active watches (started and not stopped or broken). */
  watches(): number;
}

export function createFakeLogind(init: { delayMs?: number; unreachable?: string } = {}): FakeLogind {
  const calls: string[] = [];
  const locks: { held: boolean; onLost?: (err: Error) => void }[] = [];
  const watches: { handlers: ShutdownSignalHandlers; active: boolean }[] = [];
  let overridden: number | undefined;

  const fake: FakeLogind = {
    calls,
    delayMs: init.delayMs ?? 30_000,
    unreachable: init.unreachable,
    delayAfterReload: undefined,
    failInhibit: undefined,
    failWatch: undefined,
    reachable(): Promise<LogindReachability> {
      calls.push('reachable');
      return Promise.resolve(
        fake.unreachable === undefined ? { reachable: true } : { reachable: false, reason: fake.unreachable },
      );
    },
    inhibitDelayMaxMs(): Promise<number> {
      calls.push('delay');
      return fake.unreachable === undefined
        ? Promise.resolve(fake.delayMs)
        : Promise.reject(unavailable('read InhibitDelayMaxUSec', fake.unreachable));
    },
    inhibitShutdown(options: InhibitOptions = {}): Promise<InhibitLock> {
      calls.push('inhibit');
      if (fake.unreachable !== undefined) {
        return Promise.reject(unavailable('take inhibitor lock', fake.unreachable));
      }
      if (fake.failInhibit) {
        const err = fake.failInhibit;
        fake.failInhibit = undefined;
        return Promise.reject(err);
      }
      const lock: { held: boolean; onLost?: (err: Error) => void } = { held: true };
      if (options.onLost) lock.onLost = options.onLost;
      locks.push(lock);
      return Promise.resolve({
        held: () => lock.held,
        release: () => {
          if (lock.held) {
            lock.held = false;
            calls.push('release');
          }
          return Promise.resolve();
        },
      });
    },
    watchShutdown(handlers: ShutdownSignalHandlers): Promise<ShutdownWatch> {
      calls.push('watch');
      if (fake.unreachable !== undefined) {
        return Promise.reject(unavailable('watch PrepareForShutdown', fake.unreachable));
      }
      if (fake.failWatch) {
        const err = fake.failWatch;
        fake.failWatch = undefined;
        return Promise.reject(err);
      }
      const w = { handlers, active: true };
      watches.push(w);
      return Promise.resolve({
        stop: () => {
          if (w.active) calls.push('unwatch');
          w.active = false;
          return Promise.resolve();
        },
      });
    },
    overrideInhibitDelay(ms: number): Promise<void> {
      calls.push(`override ${ms}`);
      overridden = ms;
      return Promise.resolve();
    },
    reloadLogindConf(): Promise<void> {
      calls.push('reload');
      const next = fake.delayAfterReload ?? overridden;
      if (next !== undefined) fake.delayMs = next;
      return Promise.resolve();
    },
    heldLocks: () => locks.filter((l) => l.held).length,
    emit(active: boolean) {
      for (const w of watches) if (w.active) w.handlers.onPrepareForShutdown(active);
    },
    breakWatch(err = new KubeletError('Unavailable', 'watch PrepareForShutdown', 'monitor exited')) {
      for (const w of watches) {
        if (!w.active) continue;
        w.active = false;
        w.handlers.onError(err);
      }
    },
    loseLock() {
      const lock = locks.findLast((l) => l.held);
      if (!lock) return;
      lock.held = false;
      calls.push('lost');
      lock.onLost?.(new KubeletError('Unavailable', 'inhibitor lock', 'holder exited'));
    },
    watches: () => watches.filter((w) => w.active).length,
  };
  return fake;
}

function unavailable(op: string, reason: string): KubeletError {
  return new KubeletError('Unavailable', op, reason);
}

/** A pod for the shutdown tests; `critical` gives it system-critical priority. */
export function shutdownPod(
  name: string,
  over: {
    critical?: boolean;
    terminationGracePeriodSeconds?: number;
    annotations?: Record<string, string>;
  } = {},
): KubeletPod {
  return buildPod(name, {
    typeMeta: true,
    annotations: { 'kubernetes.io/config.source': 'api', ...over.annotations },
    priority: over.critical ? 2_000_000_000 : 0,
    ...(over.terminationGracePeriodSeconds !== undefined
      ? { terminationGracePeriodSeconds: over.terminationGracePeriodSeconds }
      : {}),
  });
}
