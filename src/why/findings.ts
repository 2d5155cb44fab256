/**
 * One builder per kind of finding, each pure: from the snapshot (and a container's status) to the
 * finding, its rank (lower blocks more) and the sentence the summary uses when it comes first.
 */
import type { Container, ContainerStatus } from '../api/types.ts';
import {
  bytes,
  clockTime,
  firstLine,
  iso,
  list,
  lowerFirst,
  parseTime,
  seconds,
  secondsUntil,
  sentence,
} from './format.ts';
import type { WhyEvidence, WhyFinding, WhyProbe, WhySnapshot } from './types.ts';

export interface Found {
  rank: number;
  finding: WhyFinding;
  summary: string;
}

/** The order the issue asks for: admission > volume > sandbox > image > init > crash loop > probe > terminating. */
export const RANK = {
  admission: 0,
  stopped: 1,
  volume: 2,
  sandbox: 3,
  sync: 4,
  image: 5,
  init: 6,
  crashLoop: 7,
  exited: 8,
  probe: 9,
  creating: 10,
  terminating: 11,
  notSynced: 12,
} as const;

const INSUFFICIENT =
  /^Node didn't have enough resource: (\w+), requested: (\d+), used: (\d+), capacity: (\d+)/;

/** Upstream's GeneralPredicates message parsed back into its numbers, in the resource's own unit. */
export function admissionFinding(a: { reason: string; message: string }): Found {
  const m = INSUFFICIENT.exec(a.message);
  if (!m) {
    const message = sentence(`The ${a.reason} admission check refused it: ${a.message}`);
    return {
      rank: RANK.admission,
      finding: {
        reason: 'AdmissionRejected',
        message,
        evidence: { predicate: a.reason, admissionMessage: a.message },
      },
      summary: sentence(`Rejected at admission (${a.reason}): ${lowerFirst(a.message)}`),
    };
  }
  const [, resource = '', req = '0', used = '0', cap = '0'] = m;
  const scale = resource === 'cpu' ? 1 / 1000 : 1;
  const requested = Number(req) * scale;
  const inUse = Number(used) * scale;
  const allocatable = Number(cap) * scale;
  const left = Math.max(0, allocatable - inUse);
  const show = (n: number): string =>
    resource === 'cpu'
      ? `${Math.round(n * 1000) / 1000} CPU`
      : resource === 'memory'
        ? bytes(n)
        : `${n} pods`;
  const what =
    resource === 'pods'
      ? `the node already runs ${inUse} of its ${allocatable} allowed pods`
      : `it requests ${show(requested)}, ${show(left)} allocatable left (${show(inUse)} of ${show(allocatable)} in use by other pods)`;
  return {
    rank: RANK.admission,
    finding: {
      reason: 'AdmissionRejected',
      message: sentence(`The ${a.reason} admission check refused it: ${what}`),
      evidence: {
        predicate: a.reason,
        resource,
        unit: resource === 'cpu' ? 'cores' : resource === 'memory' ? 'bytes' : 'pods',
        requested,
        used: inUse,
        allocatable,
        allocatableLeft: left,
      },
    },
    summary: sentence(`Rejected at admission (${a.reason}): ${what}`),
  };
}

export function stoppedFinding(s: { reason: string; message: string }): Found {
  const evicted = s.reason === 'Evicted';
  return {
    rank: RANK.stopped,
    finding: {
      reason: s.reason,
      message: sentence(`${evicted ? 'The kubelet evicted it' : 'The kubelet stopped it'}: ${s.message}`),
      evidence: { statusReason: s.reason, statusMessage: s.message },
    },
    summary: sentence(`${evicted ? 'Evicted' : `Stopped by the kubelet (${s.reason})`}: ${s.message}`),
  };
}

export function syncErrorFinding(e: NonNullable<WhySnapshot['syncError']>): Found {
  const since = iso(e.at);
  switch (e.step) {
    case 'volumes':
      return {
        rank: RANK.volume,
        finding: {
          reason: 'VolumeNotReady',
          message: sentence(`Its volumes are not set up, so no container starts: ${e.message}`),
          evidence: { error: e.message },
          since,
        },
        summary: sentence(`A volume does not mount: ${e.message}`),
      };
    case 'sandbox': {
      const network = /\bcni\b|network/i.test(e.message);
      return {
        rank: RANK.sandbox,
        finding: {
          reason: 'SandboxFailed',
          message: sentence(
            `Its sandbox could not be created${network ? ' (the network plugin failed)' : ''}: ${e.message}`,
          ),
          evidence: { error: e.message, network },
          since,
        },
        summary: sentence(`Its sandbox cannot be created: ${e.message}`),
      };
    }
    case 'sync':
      return {
        rank: RANK.sync,
        finding: {
          reason: 'SyncFailed',
          message: sentence(`The kubelet's last sync of it failed and is retried: ${e.message}`),
          evidence: { error: e.message },
          since,
        },
        summary: sentence(`The kubelet cannot sync it: ${e.message}`),
      };
  }
}

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
        `${f.exit} and is not restarted (restartPolicy ${snap.pod.spec.restartPolicy ?? 'Always'}).`,
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

export function terminatingFinding(snap: WhySnapshot): Found {
  const t = snap.termination;
  const grace = t?.gracePeriodSeconds ?? snap.pod.spec.terminationGracePeriodSeconds ?? 30;
  const deadline =
    t?.startedAt !== undefined ? t.startedAt + grace * 1000 : parseTime(snap.pod.metadata.deletionTimestamp);
  const evidence: WhyEvidence = { gracePeriodSeconds: grace };
  let left = '';
  if (deadline !== undefined) {
    const s = secondsUntil(deadline, snap.now);
    evidence.graceLeftSeconds = s;
    left = s > 0 ? `${s} s of its ${grace} s grace period are left` : `its ${grace} s grace period is over`;
  } else {
    left = `it has a ${grace} s grace period`;
  }
  const hooks = t?.preStopRunning ?? [];
  evidence.preStopRunning = hooks.map((h) => h.container);
  const pre =
    hooks.length > 0
      ? `; the preStop hook of ${list(hooks.map((h) => h.container))} is running (for ${seconds(snap.now - Math.min(...hooks.map((h) => h.since)))})`
      : '';
  return {
    rank: RANK.terminating,
    finding: {
      reason: 'Terminating',
      message: sentence(`It is being stopped: ${left}${pre}`),
      evidence,
      ...(t?.startedAt !== undefined ? { since: iso(t.startedAt) } : {}),
    },
    summary: sentence(`Terminating: ${left}${pre}`),
  };
}

export function notSyncedFinding(snap: WhySnapshot): Found {
  const message =
    snap.worker === undefined
      ? 'The kubelet has the pod but has not started syncing it yet (waiting for its turn or for the pod sources).'
      : 'Its first sync is still in progress.';
  return {
    rank: RANK.notSynced,
    finding: { reason: 'NotYetSynced', message, evidence: { worker: snap.worker ?? 'none' } },
    summary: `Not yet synced: ${lowerFirst(message)}`,
  };
}

export function creatingFinding(name: string, reason: string): Found {
  const init = reason === 'PodInitializing';
  return {
    rank: RANK.creating,
    finding: {
      reason,
      container: name,
      message: init ? 'It waits for the init containers to complete.' : 'It is being created.',
      evidence: {},
    },
    summary: init
      ? `Container ${name} waits for the init containers.`
      : `Container ${name} is being created.`,
  };
}
