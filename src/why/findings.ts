/**
 * One builder per kind of finding, each pure: from the snapshot to the finding, its rank (lower
 * blocks more) and the sentence the summary uses when it comes first. This file: the pod-level
 * findings; container-findings.ts: the per-container ones.
 */
import { bytes, iso, list, lowerFirst, parseTime, seconds, secondsUntil, sentence } from './format.ts';
import type { WhyEvidence, WhyFinding, WhySnapshot } from './types.ts';

export interface Found {
  rank: number;
  finding: WhyFinding;
  summary: string;
}

/** Most blocking first (what must clear before the next can matter): admission > volume > sandbox > image > init > crash loop > probe > terminating. */
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
