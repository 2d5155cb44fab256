/**
 * `why` (tskubelet's own, no upstream counterpart): why a pod is not running or not ready, from the kubelet's own state, in plain
 * language with the evidence. `explainPod` is the pure core; `createWhyGatherer` reads the
 * managers into its snapshot.
 */
export { explainPod, NOTHING_HOLDS } from './explain.ts';
export {
  createWhyGatherer,
  tailLines,
  LOG_TAIL_BYTES,
  LOG_TAIL_LINES,
  type WhyGatherer,
  type WhySources,
} from './gather.ts';
export type { PodWhy, WhyEvidence, WhyFinding, WhyImagePull, WhyProbe, WhySnapshot } from './types.ts';
