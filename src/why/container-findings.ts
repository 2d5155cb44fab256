/**
 * The findings about one container, each pure: an image that cannot be had or is being pulled, a
 * container that cannot be created or started, a crash loop, an exit without restart, an init
 * container that runs or fails, a failing probe.
 */
import type { Container, ContainerStatus } from '../api/types.ts';
import { restartPolicy } from '../api/pod-util.ts';
import {
  bytes,
  clockTime,
  firstLine,
  iso,
  lowerFirst,
  parseTime,
  seconds,
  secondsUntil,
  sentence,
} from './format.ts';
import { RANK, type Found } from './findings.ts';
import type { WhyEvidence, WhyProbe, WhySnapshot } from './types.ts';

const IMAGE_REASONS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'ErrImageNeverPull',
  'InvalidImageName',
  'ImageInspectError',
]);
const START_REASONS = new Set([
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
  'PostStartHookError',
]);

/** The waiting reason of a container: the status's, else the kubelet's reason cache. */
export function waitingOf(snap: WhySnapshot, cs: ContainerStatus | undefined, name: string) {
  const w = cs?.state.waiting;
  if (w?.reason && w.reason !== 'ContainerCreating' && w.reason !== 'PodInitializing') {
    return { reason: w.reason, message: w.message ?? '' };
  }
  return snap.waiting[name] ?? (w?.reason ? { reason: w.reason, message: w.message ?? '' } : undefined);
}

/** An image that cannot be had (ErrImagePull, ImagePullBackOff, …) or a pull in flight. */
export function imageFinding(
  snap: WhySnapshot,
  c: Container,
  cs: ContainerStatus | undefined,
): Found | undefined {
  const image = c.image ?? '';
  const pull = snap.imagePulls.find((p) => p.image === image);
  const w = waitingOf(snap, cs, c.name);
  if (w && IMAGE_REASONS.has(w.reason)) {
    const evidence: WhyEvidence = { image };
    const error = w.reason === 'ImagePullBackOff' ? pull?.lastError : w.message;
    if (error) evidence.error = error;
    let next = '';
    if (pull?.backOffLeftMs !== undefined) {
      const left = Math.ceil(pull.backOffLeftMs / 1000);
      evidence.backOffLeftSeconds = left;
      if (pull.backOffMs !== undefined) evidence.backOffSeconds = Math.round(pull.backOffMs / 1000);
      next = `; the next pull is in ${left} s`;
    }
    const failed = w.reason === 'ImagePullBackOff' || w.reason === 'ErrImagePull';
    const what = failed
      ? `Pulling image "${image}" failed${error ? `: ${error}` : ''}${next}`
      : `${w.message || `It cannot get image "${image}"`}${next}`;
    return {
      rank: RANK.image,
      finding: { reason: w.reason, container: c.name, message: sentence(what), evidence },
      summary: sentence(
        failed
          ? `Container ${c.name} is waiting for image "${image}": the last pull failed${next ? `, ${next.slice(2)}` : ''}`
          : `Container ${c.name} cannot get its image: ${lowerFirst(w.message || image)}`,
      ),
    };
  }
  if (w && START_REASONS.has(w.reason)) {
    const verb =
      w.reason === 'CreateContainerConfigError' || w.reason === 'CreateContainerError'
        ? 'created'
        : 'started';
    return {
      rank: RANK.image,
      finding: {
        reason: w.reason,
        container: c.name,
        message: sentence(`It could not be ${verb}: ${w.message}`),
        evidence: { error: w.message },
      },
      summary: sentence(`Container ${c.name} could not be ${verb}: ${w.message}`),
    };
  }
  if (pull?.pullingSince !== undefined && !cs?.state.running) {
    const forMs = snap.now - pull.pullingSince;
    const evidence: WhyEvidence = { image, pullingForSeconds: Math.round(forMs / 1000) };
    if (pull.bytes !== undefined) evidence.bytes = pull.bytes;
    const progress =
      pull.bytes !== undefined
        ? `${bytes(pull.bytes)} so far`
        : 'the runtime reports no progress, so the bytes so far are not known';
    return {
      rank: RANK.image,
      finding: {
        reason: 'PullingImage',
        container: c.name,
        message: sentence(`Image "${image}" has been pulling for ${seconds(forMs)} (${progress})`),
        evidence,
        since: iso(pull.pullingSince),
      },
      summary: sentence(`Container ${c.name} is waiting for image "${image}", pulling for ${seconds(forMs)}`),
    };
  }
  return undefined;
}

/** The last run's exit, restarts, next try and log lines of a container that keeps failing. */
function failureEvidence(snap: WhySnapshot, name: string, cs: ContainerStatus | undefined) {
  const term = cs?.state.terminated ?? cs?.lastState.terminated;
  const evidence: WhyEvidence = {};
  if (term) {
    evidence.exitCode = term.exitCode;
    if (term.reason) evidence.terminationReason = term.reason;
    if (term.finishedAt) evidence.finishedAt = term.finishedAt;
  }
  evidence.restartCount = cs?.restartCount ?? 0;
  const loop = snap.crashLoop[name];
  const waitingMsg = snap.waiting[name]?.message ?? cs?.state.waiting?.message ?? '';
  const delay = /back-off (\S+) restarting/.exec(waitingMsg)?.[1];
  let nextIn: number | undefined;
  if (loop) {
    evidence.backOffSeconds = Math.round(loop.delayMs / 1000);
    if (loop.nextRetryAt !== undefined) nextIn = secondsUntil(loop.nextRetryAt, snap.now);
  }
  if (nextIn !== undefined) evidence.nextRetryInSeconds = nextIn;
  const lines = snap.logTails[name];
  if (lines && lines.length > 0) evidence.lastLogLines = lines;
  const finished = parseTime(term?.finishedAt);
  const started = parseTime(term?.startedAt);
  const exit = term
    ? `It exited with code ${term.exitCode}${term.reason && term.reason !== 'Error' ? ` (${term.reason})` : ''}` +
      `${finished !== undefined ? ` at ${clockTime(finished)}` : ''}` +
      `${finished !== undefined && started !== undefined ? ` after running ${seconds(finished - started)}` : ''}`
    : 'It exited';
  const next =
    nextIn !== undefined
      ? `in ${nextIn} s`
      : delay !== undefined
        ? `after its ${delay} back-off`
        : 'after its back-off';
  return { evidence, exit, next, term, since: finished };
}

function withLog(text: string, lines: string[] | undefined): string {
  const last = lines?.at(-1);
  return last ? `${text} Its last log line: "${firstLine(last)}".` : text;
}

export function crashLoopFinding(snap: WhySnapshot, name: string, cs: ContainerStatus | undefined): Found {
  const f = failureEvidence(snap, name, cs);
  const restarts = cs?.restartCount ?? 0;
  const message = `${f.exit}; it has been restarted ${restarts} time${restarts === 1 ? '' : 's'} and the next restart is ${f.next}.`;
  return {
    rank: RANK.crashLoop,
    finding: {
      reason: 'CrashLoopBackOff',
      container: name,
      message: withLog(message, snap.logTails[name]),
      evidence: f.evidence,
      ...(f.since !== undefined ? { since: iso(f.since) } : {}),
    },
    summary: `Container ${name} is in crash-loop back-off: it exited with code ${f.term?.exitCode ?? '?'} and is restarted ${f.next}.`,
  };
}

/** A container that exited unsuccessfully and is not restarted (restartPolicy, or the pod failed). */
export function exitedFinding(snap: WhySnapshot, name: string, cs: ContainerStatus): Found | undefined {
  const term = cs.state.terminated;
  if (!term || term.exitCode === 0) return undefined;
  const f = failureEvidence(snap, name, cs);
  return {
    rank: RANK.exited,
    finding: {
      reason: term.reason ?? 'Error',
      container: name,
      message: withLog(
        `${f.exit} and is not restarted (restartPolicy ${restartPolicy(snap.pod)}).`,
        snap.logTails[name],
      ),
      evidence: f.evidence,
      ...(f.since !== undefined ? { since: iso(f.since) } : {}),
    },
    summary: `Container ${name} exited with code ${term.exitCode} and is not restarted.`,
  };
}

/** The first init container that has not completed: still running, or failing. */
export function initFinding(
  snap: WhySnapshot,
  c: Container,
  cs: ContainerStatus | undefined,
): Found | undefined {
  const name = c.name;
  if (cs?.state.running) {
    const started = parseTime(cs.state.running.startedAt);
    const evidence: WhyEvidence = { restartCount: cs.restartCount };
    if (started !== undefined) evidence.runningForSeconds = Math.round((snap.now - started) / 1000);
    const lines = snap.logTails[name];
    if (lines && lines.length > 0) evidence.lastLogLines = lines;
    const forText = started !== undefined ? ` for ${seconds(snap.now - started)}` : '';
    return {
      rank: RANK.init,
      finding: {
        reason: 'InitContainerRunning',
        container: name,
        message: withLog(
          `Init container ${name} has been running${forText}; the app containers start once it exits with code 0.`,
          lines,
        ),
        evidence,
        ...(started !== undefined ? { since: iso(started) } : {}),
      },
      summary: `Init container ${name} is still running${forText}.`,
    };
  }
  const waiting = waitingOf(snap, cs, name)?.reason;
  const failed =
    (cs?.state.terminated && cs.state.terminated.exitCode !== 0) || waiting === 'CrashLoopBackOff';
  if (!failed) return undefined;
  const f = failureEvidence(snap, name, cs);
  const restarts = snap.pod.spec.restartPolicy !== 'Never';
  const message = restarts
    ? `${f.exit}; it has been restarted ${cs?.restartCount ?? 0} times and the next restart is ${f.next}.`
    : `${f.exit}; restartPolicy Never: the pod fails.`;
  return {
    rank: RANK.init,
    finding: {
      reason: 'InitContainerFailing',
      container: name,
      message: withLog(message, snap.logTails[name]),
      evidence: f.evidence,
      ...(f.since !== undefined ? { since: iso(f.since) } : {}),
    },
    summary: `Init container ${name} fails: it exited with code ${f.term?.exitCode ?? '?'}${restarts ? ` and is restarted ${f.next}` : ''}.`,
  };
}

const PROBE_TITLE = { liveness: 'liveness', readiness: 'readiness', startup: 'startup' } as const;

/** A probe that fails now, or failed on its last tries without reaching its threshold yet. */
export function probeFinding(p: WhyProbe): Found | undefined {
  const failing = p.result === 'failure' || p.consecutiveFailures > 0 || p.lastResult === 'error';
  if (!failing || (p.probe !== 'readiness' && p.result === 'success' && p.consecutiveFailures === 0))
    return undefined;
  const output = p.lastOutput !== undefined ? firstLine(p.lastOutput) : '';
  const evidence: WhyEvidence = {
    probe: p.probe,
    consecutiveFailures: p.consecutiveFailures,
    failureThreshold: p.failureThreshold,
  };
  if (p.lastResult) evidence.lastResult = p.lastResult;
  if (p.lastOutput !== undefined) evidence.lastOutput = p.lastOutput;
  if (p.lastAt !== undefined) evidence.lastProbeAt = iso(p.lastAt);
  const said = output ? `: ${output}` : p.lastResult === 'error' ? '' : ' (no output)';
  const count = `${p.consecutiveFailures} in a row, threshold ${p.failureThreshold}`;
  let consequence: string;
  switch (p.probe) {
    case 'readiness':
      consequence = 'it is not Ready, so it gets no traffic';
      break;
    case 'liveness':
      consequence =
        p.result === 'failure'
          ? 'the container is killed and restarted'
          : `at ${p.failureThreshold} failures in a row the container is restarted`;
      break;
    case 'startup':
      consequence = 'it has not started: readiness and liveness wait, and at the threshold it is restarted';
      break;
  }
  const verb = p.lastResult === 'error' ? 'could not run' : 'fails';
  return {
    rank: RANK.probe,
    finding: {
      reason: 'ProbeFailing',
      container: p.container,
      message: sentence(`Its ${PROBE_TITLE[p.probe]} probe ${verb} (${count})${said}; ${consequence}`),
      evidence,
    },
    summary: sentence(`Container ${p.container}'s ${PROBE_TITLE[p.probe]} probe ${verb}${said}`),
  };
}
