import type { Container, KubeletPod } from '../api/types.ts';
import { buildPod } from '../../test/kit/pod.ts';
import type { ProbeTimers } from './types.ts';

/** The probe tests' pod `web` (UID `uid-1`): one container `main` of busybox, given `container`'s fields. */
export function probedPod(
  container: Partial<Container> = {},
  spec: Partial<KubeletPod['spec']> = {},
): KubeletPod {
  return buildPod('web', {
    uid: 'uid-1',
    image: 'busybox',
    containers: [{ name: 'main', ...container }],
    spec,
  });
}

/**
 * A manual clock for probe workers: time moves only when a test calls `advance`; the wall clock
 * (`now`) can also step on its own (`stepWall`), the monotonic one and the timers never do.
 */
export interface FakeClock {
  now(): number;
  monotonic(): number;
  /** Steps the wall clock by `ms` (negative: back); monotonic time and timers do not move. */
  stepWall(ms: number): void;
  timers: ProbeTimers;
  /** Moves time forward, firing due timers in order and letting the work they start settle. */
  advance(ms: number): Promise<void>;
  /** Timers not fired yet. */
  pending(): number;
}

/** Lets promise chains started by fired timers (fake exec, result handling) run to their next wait. */
export async function settle(rounds = 8): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

export function createFakeClock(start = 1_700_000_000_000): FakeClock {
  let t = start;
  let wallOffset = 0;
  let seq = 0;
  const timers = new Map<number, { due: number; fn: () => void }>();
  return {
    now: () => t + wallOffset,
    monotonic: () => t,
    stepWall(ms) {
      wallOffset += ms;
    },
    timers: {
      setTimeout(fn, ms) {
        const id = ++seq;
        timers.set(id, { due: t + Math.max(0, ms), fn });
        return id;
      },
      clearTimeout(handle) {
        timers.delete(handle as number);
      },
    },
    async advance(ms) {
      const target = t + ms;
      for (;;) {
        await settle();
        let next: [number, { due: number; fn: () => void }] | undefined;
        for (const e of timers) if (e[1].due <= target && (!next || e[1].due < next[1].due)) next = e;
        if (!next) break;
        timers.delete(next[0]);
        t = next[1].due;
        next[1].fn();
      }
      t = target;
      await settle();
    },
    pending: () => timers.size,
  };
}
