/**
 * Pacing of the runtime-bound steps of starting pods (RunPodSandbox, CreateContainer,
 * StartContainer): an adaptive concurrency limit that follows the runtime's observed latency.
 *
 * Why: on a small node the runtime is CPU-bound. Thirty sandboxes asked for at once all finish
 * together at the end of the batch; the same thirty asked for four at a time finish one after
 * another in the same overall time, so the median pod starts in about half the time (the
 * benchmark's floor, bench/README.md). The pacer admits every pod at once (admission, volumes,
 * image pulls and probes never wait here) and paces only these three calls.
 *
 * The algorithm (delay-based, in the manner of TCP Vegas): each step kind keeps a baseline, the
 * lowest latency seen (allowed to drift up 1 % per second so a runtime that became slower for good
 * is relearnt). Every completed call compares its latency with its baseline: below
 * `INCREASE_BELOW` × baseline the runtime is not queueing and the limit grows by one; above
 * `DECREASE_ABOVE` × baseline it is, and the limit shrinks by a tenth; in between it holds. The
 * limit stays within [floor, max]. Calls wait in pod arrival order — a pod's later steps go before
 * the first step of a pod that arrived after it, so pods finish in the order they came and none
 * starves — and a pod alone with the runtime is never held back.
 *
 * Failure modes, and what bounds them: a runtime slow for reasons the kubelet does not cause (a
 * disk stall) lowers the limit to the floor, never below (2 calls still flow); one pathological
 * slow call inflates nothing but its own sample; the waiting list holds at most the calls of the
 * pods being started (bounded by maxPods × containers), each wait ends with its pod's AbortSignal.
 */
import { KubeletError } from '../../util/errors.ts';
import { monotonicNow } from '../../util/clock.ts';

export type PacedStep = 'RunPodSandbox' | 'CreateContainer' | 'StartContainer';

export interface RuntimePacer {
  /**
   * Runs `fn` when a slot is free for pod `podUID` (at once for a pod alone with the runtime).
   * Rejects with Canceled if `signal` aborts while waiting; `fn`'s own result or error otherwise.
   */
  run<T>(podUID: string, step: PacedStep, fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** The current limit, calls running and calls waiting (for logs, metrics and the benchmark). */
  stats(): { limit: number; inFlight: number; waiting: number };
}

export interface PacerOptions {
  /** Starting limit (the benchmark's floor is best at about 4 on 2 cores). */
  initial?: number;
  floor?: number;
  max?: number;
  /** Monotonic ms; default util/clock's. */
  monotonic?: () => number;
}

const DEFAULT_INITIAL = 4;
const DEFAULT_FLOOR = 2;
const DEFAULT_MAX = 32;
const INCREASE_BELOW = 1.5;
const DECREASE_ABOVE = 3;
const DECREASE_FACTOR = 0.9;
/** Baseline drift per second without a lower sample. */
const BASELINE_DRIFT_PER_S = 0.01;
/** Pods whose arrival order is remembered (oldest forgotten first). */
const MAX_REMEMBERED_PODS = 4096;

interface Waiter {
  podSeq: number;
  callSeq: number;
  podUID: string;
  admit(): void;
}

/** Passes every call straight through: the `--runtime-pacing=false` pacer. */
export const unpacedRuntime: RuntimePacer = {
  run: (_podUID, _step, fn) => fn(),
  stats: () => ({ limit: Infinity, inFlight: 0, waiting: 0 }),
};

export function createRuntimePacer(opts: PacerOptions = {}): RuntimePacer {
  const floor = opts.floor ?? DEFAULT_FLOOR;
  const max = opts.max ?? DEFAULT_MAX;
  const monotonic = opts.monotonic ?? monotonicNow;
  let limit = Math.min(max, Math.max(floor, opts.initial ?? DEFAULT_INITIAL));
  let inFlight = 0;
  let callSeq = 0;
  let nextPodSeq = 0;
  const podSeq = new Map<string, number>();
  /** Calls running or waiting, per pod: a pod alone with the runtime is not held back. */
  const busyPods = new Map<string, number>();
  const waiters: Waiter[] = [];
  const baselines = new Map<PacedStep, { ms: number; at: number }>();

  function seqOf(uid: string): number {
    let s = podSeq.get(uid);
    if (s === undefined) {
      s = nextPodSeq++;
      podSeq.set(uid, s);
      if (podSeq.size > MAX_REMEMBERED_PODS) podSeq.delete(podSeq.keys().next().value!);
    }
    return s;
  }

  function busy(uid: string, delta: number): void {
    const n = (busyPods.get(uid) ?? 0) + delta;
    if (n <= 0) busyPods.delete(uid);
    else busyPods.set(uid, n);
  }

  function alone(uid: string): boolean {
    return busyPods.size === 1 && busyPods.has(uid);
  }

  function mayStart(uid: string): boolean {
    return inFlight < Math.floor(limit) || alone(uid);
  }

  function dispatch(): void {
    while (waiters.length > 0 && mayStart(waiters[0]!.podUID)) waiters.shift()!.admit();
  }

  function insert(w: Waiter): void {
    // Ordered by pod arrival, then call order; new calls usually belong at the end.
    let i = waiters.length;
    while (i > 0) {
      const prev = waiters[i - 1]!;
      if (prev.podSeq < w.podSeq || (prev.podSeq === w.podSeq && prev.callSeq < w.callSeq)) break;
      i--;
    }
    waiters.splice(i, 0, w);
  }

  function sample(step: PacedStep, ms: number, now: number): void {
    const b = baselines.get(step);
    const drifted = b === undefined ? Infinity : b.ms * (1 + (BASELINE_DRIFT_PER_S * (now - b.at)) / 1000);
    if (ms <= drifted) {
      baselines.set(step, { ms: Math.max(ms, 0.1), at: now });
      limit = Math.min(max, limit + 1);
      return;
    }
    const ratio = ms / drifted;
    if (ratio < INCREASE_BELOW) limit = Math.min(max, limit + 1);
    else if (ratio > DECREASE_ABOVE) limit = Math.max(floor, limit * DECREASE_FACTOR);
  }

  function acquire(uid: string, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(canceled(signal));
    if (waiters.length === 0 && mayStart(uid)) {
      inFlight++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        const i = waiters.indexOf(w);
        if (i >= 0) waiters.splice(i, 1);
        reject(canceled(signal!));
        dispatch();
      };
      const w: Waiter = {
        podSeq: seqOf(uid),
        callSeq: callSeq++,
        podUID: uid,
        admit: () => {
          signal?.removeEventListener('abort', onAbort);
          inFlight++;
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      insert(w);
      dispatch();
    });
  }

  return {
    async run(uid, step, fn, signal) {
      seqOf(uid);
      busy(uid, 1);
      try {
        await acquire(uid, signal);
      } catch (err) {
        busy(uid, -1);
        throw err;
      }
      const started = monotonic();
      let ok = false;
      try {
        const r = await fn();
        ok = true;
        return r;
      } finally {
        inFlight--;
        busy(uid, -1);
        const now = monotonic();
        if (ok) sample(step, now - started, now);
        dispatch();
      }
    },
    stats: () => ({ limit: Math.floor(limit), inFlight, waiting: waiters.length }),
  };
}

function canceled(signal: AbortSignal): KubeletError {
  return new KubeletError('Canceled', 'wait for a runtime slot', String(signal.reason ?? 'aborted'), {
    cause: signal.reason,
  });
}
