/**
 * `explainPod`: the pure core of `why`. From a snapshot of the kubelet's own state for one pod to
 * the findings that hold it, most blocking first, and a one-sentence summary. No I/O, no clock: the
 * snapshot carries the instant it was read.
 */
import { isRestartableInitContainer, restartPolicy } from '../api/pod-util.ts';
import type { Container, ContainerStatus } from '../api/types.ts';
import {
  admissionFinding,
  creatingFinding,
  notSyncedFinding,
  stoppedFinding,
  syncErrorFinding,
  terminatingFinding,
  RANK,
  type Found,
} from './findings.ts';
import {
  crashLoopFinding,
  exitedFinding,
  imageFinding,
  initFinding,
  probeFinding,
  waitingOf,
} from './container-findings.ts';
import type { PodWhy, WhySnapshot } from './types.ts';

export const NOTHING_HOLDS = 'Running and Ready: nothing is holding it.';

function isReady(snap: WhySnapshot): boolean {
  return snap.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Whether the kubelet restarts this container when it exits with `exitCode`. */
function restarts(snap: WhySnapshot, c: Container, exitCode: number): boolean {
  if (isRestartableInitContainer(c)) return true;
  const policy = restartPolicy(snap.pod);
  return policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0);
}

function containerFindings(snap: WhySnapshot): Found[] {
  const out: Found[] = [];
  const statuses = new Map<string, ContainerStatus>();
  for (const cs of [
    ...(snap.status?.initContainerStatuses ?? []),
    ...(snap.status?.containerStatuses ?? []),
  ]) {
    statuses.set(cs.name, cs);
  }
  const inits = snap.pod.spec.initContainers ?? [];
  // Regular init containers run one after another: only the first that has not completed matters.
  let initsDone = true;
  for (const c of inits) {
    const cs = statuses.get(c.name);
    const image = imageFinding(snap, c, cs);
    if (isRestartableInitContainer(c)) {
      // A sidecar: it runs beside the app containers, as they do.
      if (image) out.push(image);
      else out.push(...appContainerFindings(snap, c, cs));
      continue;
    }
    const completed = cs?.state.terminated?.exitCode === 0;
    if (completed) continue;
    initsDone = false;
    const found = image ?? initFinding(snap, c, cs);
    if (found) out.push(found);
    break;
  }
  if (!initsDone) return out;
  for (const c of snap.pod.spec.containers) {
    const cs = statuses.get(c.name);
    const image = imageFinding(snap, c, cs);
    if (image) out.push(image);
    else out.push(...appContainerFindings(snap, c, cs));
  }
  return out;
}

function appContainerFindings(snap: WhySnapshot, c: Container, cs: ContainerStatus | undefined): Found[] {
  const w = waitingOf(snap, cs, c.name);
  if (w?.reason === 'CrashLoopBackOff') return [crashLoopFinding(snap, c.name, cs)];
  const term = cs?.state.terminated;
  if (cs && term && !restarts(snap, c, term.exitCode)) {
    const f = exitedFinding(snap, c.name, cs);
    return f ? [f] : [];
  }
  if (cs?.state.running) {
    return snap.probes
      .filter((p) => p.container === c.name)
      .map(probeFinding)
      .filter((f): f is Found => f !== undefined);
  }
  if (w && (w.reason === 'ContainerCreating' || w.reason === 'PodInitializing')) {
    return [creatingFinding(c.name, w.reason)];
  }
  return [];
}

/** The most blocking finding first; ties keep the pod spec's container order. */
function ranked(found: Found[]): Found[] {
  return found
    .map((f, i) => ({ f, i }))
    .sort((a, b) => a.f.rank - b.f.rank || a.i - b.i)
    .map((x) => x.f);
}

export function explainPod(snap: WhySnapshot): PodWhy {
  const { pod, status } = snap;
  const found: Found[] = [];
  const terminating =
    snap.worker === 'terminating' ||
    (pod.metadata.deletionTimestamp !== undefined && snap.worker !== 'terminated');
  if (snap.admission) {
    found.push(admissionFinding(snap.admission));
  } else {
    if (snap.stoppedBy) found.push(stoppedFinding(snap.stoppedBy));
    else if (status?.phase === 'Failed' && status.reason) {
      found.push(stoppedFinding({ reason: status.reason, message: status.message ?? '' }));
    }
    if (snap.syncError) found.push(syncErrorFinding(snap.syncError));
    // A container that ran and stopped tells no more while the pod itself is stopping.
    const containers = containerFindings(snap);
    found.push(...(terminating ? containers.filter((f) => f.finding.reason !== 'ProbeFailing') : containers));
    if (terminating) found.push(terminatingFinding(snap));
    if (!snap.synced && status === undefined) found.push(notSyncedFinding(snap));
  }
  // "Being created" only says something when nothing else explains the wait.
  const telling = found.filter((f) => f.rank !== RANK.creating);
  const findings = ranked(telling.length > 0 ? telling : found);
  const ready = isReady(snap);
  const phase = status?.phase ?? 'Pending';
  return {
    apiVersion: 'tskubelet.io/v1alpha1',
    kind: 'PodWhy',
    namespace: pod.metadata.namespace,
    name: pod.metadata.name,
    uid: pod.metadata.uid,
    phase,
    ready,
    summary: findings[0]?.summary ?? quietSummary(phase, ready),
    findings: findings.map((f) => f.finding),
  };
}

function quietSummary(phase: string, ready: boolean): string {
  if (phase === 'Running' && ready) return NOTHING_HOLDS;
  if (phase === 'Succeeded') return 'Succeeded: its containers ran to completion; nothing is holding it.';
  if (phase === 'Running')
    return 'Running, not Ready, and the kubelet knows of nothing holding it: the next status update should settle it.';
  return `${phase}: the kubelet knows of nothing holding it.`;
}
