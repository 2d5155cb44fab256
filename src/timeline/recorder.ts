/**
 * The in-memory timeline recorder: per pod UID a few attempts, each a ring of its latest steps.
 * Memory is bounded three ways: steps per attempt, attempts per pod, and pods (live and recently
 * forgotten). Nothing here waits, reads a file or starts a timer.
 */
import { monotonicNow, wallNow } from '../util/clock.ts';
import type {
  PodTimeline,
  StepFields,
  TimelineAttempt,
  TimelineRecorder,
  TimelineStep,
  TimelineStepView,
} from './types.ts';

/** Steps kept per attempt (a ring: the newest win). */
export const STEPS_PER_ATTEMPT = 64;
/** Attempts kept per pod (the newest win). */
export const ATTEMPTS_PER_POD = 4;
/** Live timelines kept; beyond it the oldest is forgotten (a safety net: forget() normally runs). */
export const MAX_LIVE_PODS = 4096;
/** Forgotten timelines still served (a deleted pod's termination steps stay readable for a while). */
export const RECENTLY_FORGOTTEN = 32;

export interface TimelineRecorderOptions {
  /**
   * Told for every step after the first of its attempt: the seconds since the previous step of
   * the same attempt (the step-duration histogram). Must be cheap and must not throw.
   */
  observe?: (step: TimelineStep, seconds: number) => void;
  /** Wall ms (the `at` of each step); default Date.now. */
  now?: () => number;
  /** Monotonic ms (offsets and durations); default performance.now. */
  monotonic?: () => number;
  stepsPerAttempt?: number;
  attemptsPerPod?: number;
  maxLivePods?: number;
  recentlyForgotten?: number;
}

interface Entry {
  step: TimelineStep;
  wall: number;
  mono: number;
  fields: StepFields | undefined;
}

interface Attempt {
  attempt: number;
  /** Up to the ring size; once full, `head` is the oldest entry and is overwritten next. */
  ring: Entry[];
  head: number;
  lastMono: number;
  sandboxRequested: boolean;
}

interface PodRecord {
  uid: string;
  namespace: string;
  name: string;
  firstMono: number;
  attempts: Attempt[];
  dropped: number;
}

export function createTimelineRecorder(opts: TimelineRecorderOptions = {}): TimelineRecorder {
  const now = opts.now ?? wallNow;
  const monotonic = opts.monotonic ?? monotonicNow;
  const observe = opts.observe;
  const ringSize = opts.stepsPerAttempt ?? STEPS_PER_ATTEMPT;
  const maxAttempts = opts.attemptsPerPod ?? ATTEMPTS_PER_POD;
  const maxLive = opts.maxLivePods ?? MAX_LIVE_PODS;
  const maxForgotten = opts.recentlyForgotten ?? RECENTLY_FORGOTTEN;
  const live = new Map<string, PodRecord>();
  const forgotten = new Map<string, PodRecord>();

  function newAttempt(rec: PodRecord, mono: number): Attempt {
    const last = rec.attempts.at(-1);
    const a: Attempt = {
      attempt: last ? last.attempt + 1 : 1,
      ring: [],
      head: 0,
      lastMono: mono,
      sandboxRequested: false,
    };
    rec.attempts.push(a);
    if (rec.attempts.length > maxAttempts) {
      const old = rec.attempts.shift();
      if (old) rec.dropped += old.ring.length;
    }
    return a;
  }

  function append(
    rec: PodRecord,
    step: TimelineStep,
    fields: StepFields | undefined,
    mono = monotonic(),
  ): void {
    let a = rec.attempts.at(-1) ?? newAttempt(rec, mono);
    if (step === 'sandbox-requested') {
      if (a.sandboxRequested) a = newAttempt(rec, mono);
      a.sandboxRequested = true;
    }
    const entry: Entry = { step, wall: now(), mono, fields };
    if (a.ring.length > 0 && observe) observe(step, Math.max(0, mono - a.lastMono) / 1000);
    a.lastMono = mono;
    if (a.ring.length < ringSize) {
      a.ring.push(entry);
    } else {
      a.ring[a.head] = entry;
      a.head = (a.head + 1) % ringSize;
      rec.dropped++;
    }
  }

  function holds(a: Attempt, step: TimelineStep, fields: StepFields | undefined): boolean {
    for (const e of a.ring) {
      if (e.step !== step) continue;
      if (e.fields?.container === fields?.container && e.fields?.volume === fields?.volume) return true;
    }
    return false;
  }

  function view(rec: PodRecord): PodTimeline {
    const attempts: TimelineAttempt[] = rec.attempts.map((a) => {
      const ordered =
        a.ring.length < ringSize ? a.ring : [...a.ring.slice(a.head), ...a.ring.slice(0, a.head)];
      return {
        attempt: a.attempt,
        steps: ordered.map((e): TimelineStepView => ({
          step: e.step,
          at: new Date(e.wall).toISOString(),
          offsetMs: Math.round((e.mono - rec.firstMono) * 10) / 10,
          ...e.fields,
        })),
      };
    });
    return {
      apiVersion: 'tskubelet.io/v1alpha1',
      kind: 'PodTimeline',
      namespace: rec.namespace,
      name: rec.name,
      uid: rec.uid,
      attempts,
      droppedSteps: rec.dropped,
    };
  }

  function bury(rec: PodRecord): void {
    forgotten.delete(rec.uid);
    forgotten.set(rec.uid, rec);
    if (forgotten.size > maxForgotten) {
      const oldest = forgotten.keys().next();
      if (!oldest.done) forgotten.delete(oldest.value);
    }
  }

  function newest(map: Map<string, PodRecord>, namespace: string, name: string): PodRecord | undefined {
    let found: PodRecord | undefined;
    // Insertion order: the last match is the newest.
    for (const rec of map.values()) if (rec.namespace === namespace && rec.name === name) found = rec;
    return found;
  }

  return {
    begin(podUID, namespace, name, source) {
      // One reading for the record's origin and its first step: the first offset is exactly 0.
      const mono = monotonic();
      let rec = live.get(podUID);
      if (!rec) {
        rec = { uid: podUID, namespace, name, firstMono: mono, attempts: [], dropped: 0 };
        forgotten.delete(podUID);
        live.set(podUID, rec);
        if (live.size > maxLive) {
          const oldest = live.values().next();
          if (!oldest.done) {
            live.delete(oldest.value.uid);
            bury(oldest.value);
          }
        }
      }
      append(rec, 'seen', { source }, mono);
    },
    record(podUID, step, fields) {
      const rec = live.get(podUID);
      if (rec) append(rec, step, fields);
    },
    recordFirst(podUID, step, fields) {
      const rec = live.get(podUID);
      if (!rec) return;
      const a = rec.attempts.at(-1);
      if (a && holds(a, step, fields)) return;
      append(rec, step, fields);
    },
    forget(podUID) {
      const rec = live.get(podUID);
      if (!rec) return;
      live.delete(podUID);
      bury(rec);
    },
    get(podUID) {
      const rec = live.get(podUID) ?? forgotten.get(podUID);
      return rec ? view(rec) : undefined;
    },
    findByName(namespace, name) {
      const rec = newest(live, namespace, name) ?? newest(forgotten, namespace, name);
      return rec ? view(rec) : undefined;
    },
  };
}

/** Records nothing (tests, and wherever no timeline is wanted). */
export const noopTimeline: TimelineRecorder = {
  begin: () => undefined,
  record: () => undefined,
  recordFirst: () => undefined,
  forget: () => undefined,
  get: () => undefined,
  findByName: () => undefined,
};
