/**
 * Timeline fixtures for tests: a recorder for component tests that keeps every call in order, flat,
 * and a canned PodTimeline document for the route and the CLI printer.
 */
import { createTimelineRecorder } from './recorder.ts';
import type { PodTimeline, StepFields, TimelineRecorder, TimelineStep } from './types.ts';

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

/**
 * A canned PodTimeline (the tskubelet.io/v1alpha1 contract), as the kubelet API serves it: two attempts, a
 * step of each kind of detail (source, volume, a pulled image, container) and dropped steps.
 */
export const CANNED_TIMELINE: PodTimeline = {
  apiVersion: 'tskubelet.io/v1alpha1',
  kind: 'PodTimeline',
  namespace: 'default',
  name: 'web',
  uid: 'u1',
  attempts: [
    {
      attempt: 1,
      steps: [
        { step: 'seen', at: '2026-11-24T20:00:00.000Z', offsetMs: 0, source: 'file' },
        { step: 'volume-ready', at: '2026-11-24T20:00:00.004Z', offsetMs: 4.2, volume: 'data' },
        {
          step: 'image-pull-done',
          at: '2026-11-24T20:00:00.812Z',
          offsetMs: 812.4,
          container: 'main',
          image: 'busybox:1.29',
          bytes: 123456,
          cached: false,
        },
        { step: 'container-started', at: '2026-11-24T20:00:00.950Z', offsetMs: 950.1, container: 'main' },
      ],
    },
    { attempt: 2, steps: [{ step: 'sandbox-created', at: '2026-11-24T20:01:05Z', offsetMs: 65_000 }] },
  ],
  droppedSteps: 3,
};
