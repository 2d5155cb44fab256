/**
 * Snapshots and container statuses for the tests of explainPod, and a canned PodWhy document for
 * the route and the CLI printer.
 */
import assert from 'node:assert/strict';
import type { Container, ContainerStatus, KubeletPod, PodStatus } from '../api/types.ts';
import { explainPod } from './explain.ts';
import type { PodWhy, WhyFinding, WhySnapshot } from './types.ts';
import { buildPod } from '../../test/kit/pod.ts';

export const NOW = Date.parse('2026-11-24T20:01:30.000Z');
export const iso = (ms: number) => new Date(ms).toISOString();

export function pod(
  containers: Partial<Container>[] = [{}],
  extra: Partial<KubeletPod['spec']> = {},
): KubeletPod {
  return buildPod('web', {
    uid: 'uid-1',
    containers: containers.map((c, i) => ({ name: i === 0 ? 'main' : `c${i}`, ...c })),
    spec: extra,
  });
}

export function running(name = 'main', ready = true, startedAt = NOW - 60_000): ContainerStatus {
  return {
    name,
    state: { running: { startedAt: iso(startedAt) } },
    lastState: {},
    ready,
    restartCount: 0,
    image: 'busybox:1.29',
    imageID: '',
    started: true,
  };
}

export function waiting(name: string, reason: string, message = '', restartCount = 0): ContainerStatus {
  return {
    name,
    state: { waiting: { reason, message } },
    lastState: {},
    ready: false,
    restartCount,
    image: 'busybox:1.29',
    imageID: '',
  };
}

export function status(
  phase: PodStatus['phase'],
  ready: boolean,
  containers: ContainerStatus[],
  inits?: ContainerStatus[],
) {
  return {
    phase,
    conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    containerStatuses: containers,
    ...(inits ? { initContainerStatuses: inits } : {}),
  } as PodStatus;
}

export function snap(over: Partial<WhySnapshot> = {}): WhySnapshot {
  return {
    now: NOW,
    pod: pod(),
    status: status('Running', true, [running()]),
    synced: true,
    worker: 'syncing',
    waiting: {},
    crashLoop: {},
    imagePulls: [],
    probes: [],
    logTails: {},
    ...over,
  };
}

export function only(s: WhySnapshot): WhyFinding {
  const why = explainPod(s);
  assert.equal(why.findings.length, 1, JSON.stringify(why.findings, null, 1));
  const f = why.findings[0];
  assert.ok(f);
  return f;
}

/** A canned PodWhy (the tskubelet.io/v1alpha1 contract), as the kubelet API serves it: one crash-loop finding. */
export const CANNED_WHY: PodWhy = {
  apiVersion: 'tskubelet.io/v1alpha1',
  kind: 'PodWhy',
  namespace: 'default',
  name: 'web',
  uid: 'u1',
  phase: 'Running',
  ready: false,
  summary: 'Container main is in crash-loop back-off: it exited with code 1 and is restarted in 37 s.',
  findings: [
    {
      reason: 'CrashLoopBackOff',
      container: 'main',
      message: 'It exited with code 1 at 20:01:02 after running 0.4 s; restart 3 is in 37 s.',
      evidence: { exitCode: 1, restartCount: 3, nextRetryInSeconds: 37, lastLogLines: ['boom', 'bang'] },
      since: '2026-11-24T20:01:02.000Z',
    },
  ],
};
