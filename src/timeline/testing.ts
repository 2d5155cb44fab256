/** A timeline recorder for component tests: keeps every call in order, flat. */
import { createTimelineRecorder } from './recorder.ts';
import type { StepFields, TimelineRecorder, TimelineStep } from './types.ts';

export interface RecordedStep {
  uid: string;
  step: TimelineStep;
  fields: StepFields | undefined;
}

export interface FakeTimeline extends TimelineRecorder {
  /** Every step recorded (recordFirst's skipped ones left out), in call order. */
  readonly steps: RecordedStep[];
  /** The step names recorded for one pod, in order. */
  stepsOf(uid: string): TimelineStep[];
  readonly forgotten: string[];
}

/**
 * A real recorder (so attempts and recordFirst behave as in the kubelet) that also lists the calls.
 * Steps for UIDs never begun are still listed, so a component can be tested without `begin`.
 */
export function fakeTimeline(): FakeTimeline {
  const inner = createTimelineRecorder();
  const steps: RecordedStep[] = [];
  const forgotten: string[] = [];
  const firstSeen = (uid: string, step: TimelineStep, fields: StepFields | undefined): boolean =>
    !steps.some(
      (s) =>
        s.uid === uid &&
        s.step === step &&
        s.fields?.container === fields?.container &&
        s.fields?.volume === fields?.volume,
    );
  return {
    steps,
    forgotten,
    stepsOf: (uid) => steps.filter((s) => s.uid === uid).map((s) => s.step),
    begin(uid, namespace, name, source) {
      steps.push({ uid, step: 'seen', fields: { source } });
      inner.begin(uid, namespace, name, source);
    },
    record(uid, step, fields) {
      steps.push({ uid, step, fields });
      inner.record(uid, step, fields);
    },
    recordFirst(uid, step, fields) {
      if (firstSeen(uid, step, fields)) steps.push({ uid, step, fields });
      inner.recordFirst(uid, step, fields);
    },
    forget(uid) {
      forgotten.push(uid);
      inner.forget(uid);
    },
    get: (uid) => inner.get(uid),
    findByName: (namespace, name) => inner.findByName(namespace, name),
  };
}
