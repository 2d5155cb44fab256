/**
 * tskubelet_pod_startup_step_duration_seconds{step}: the recorder's durations as a histogram in
 * the kubelet's /metrics registry (prom-client, as the rest of src/metrics).
 */
import { Histogram, type Registry } from 'prom-client';
import { exponentialBuckets } from '../metrics/buckets.ts';
import type { TimelineStep } from './types.ts';

export const STEP_DURATION_METRIC = 'tskubelet_pod_startup_step_duration_seconds';

/** 1 ms doubling to ~524 s (20 buckets): a cached image check to a slow pull. */
export const STEP_DURATION_BUCKETS: readonly number[] = exponentialBuckets(0.001, 2, 20);

/**
 * Registers the histogram and returns the recorder's `observe`. One labelled child per step is
 * made once and kept, so an observation allocates no label object.
 */
export function registerStepDurationHistogram(
  registry: Registry,
): (step: TimelineStep, seconds: number) => void {
  const histogram = new Histogram({
    name: STEP_DURATION_METRIC,
    help:
      '[ALPHA] Seconds from the previous step of the same pod startup attempt to this step, by step ' +
      '(the steps of GET /debug/pods/{namespace}/{name}/timeline; the first step of an attempt is ' +
      'not observed). kill-requested measures how long the pod ran since its previous step.',
    labelNames: ['step'],
    buckets: [...STEP_DURATION_BUCKETS],
    registers: [registry],
  });
  const children = new Map<TimelineStep, { observe(v: number): void }>();
  return (step, seconds) => {
    let child = children.get(step);
    if (!child) {
      child = histogram.labels(step);
      children.set(step, child);
    }
    child.observe(seconds);
  };
}
