/** Snapshots and container statuses for the tests of explainPod. */
import assert from 'node:assert/strict';
import type { Container, ContainerStatus, KubeletPod, PodStatus } from '../api/types.ts';
import { explainPod } from './explain.ts';
import type { WhyFinding, WhySnapshot } from './types.ts';

export const NOW = Date.parse('2026-11-24T20:01:30.000Z');
export const iso = (ms: number) => new Date(ms).toISOString();

export function pod(
  containers: Partial<Container>[] = [{}],
  extra: Partial<KubeletPod['spec']> = {},
): KubeletPod {
  return {
    metadata: { namespace: 'default', name: 'web', uid: 'uid-1' },
    spec: {
      containers: containers.map((c, i) => ({
        name: i === 0 ? 'main' : `c${i}`,
        image: 'busybox:1.29',
        ...c,
      })),
      ...extra,
    },
  };
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
