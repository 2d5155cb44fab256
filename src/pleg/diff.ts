import type { RuntimePodSummary, RuntimePodStatus } from '../runtime/index.ts';
import type { PodLifecycleEvent, State } from './types.ts';

export function generateEvents(
  uid: string,
  id: string,
  oldState: State,
  newState: State,
): PodLifecycleEvent[] {
  if (oldState === newState) return [];
  switch (newState) {
    case 'running':
      return [{ uid, type: 'ContainerStarted', id }];
    case 'exited':
      return [{ uid, type: 'ContainerDied', id }];
    case 'unknown':
      return [{ uid, type: 'ContainerChanged', id }];
    case 'created':
      return [];
    case 'non-existent':
      if (oldState === 'exited') return [{ uid, type: 'ContainerRemoved', id }];
      return [
        { uid, type: 'ContainerDied', id },
        { uid, type: 'ContainerRemoved', id },
      ];
  }
}

/** Every event between two records of one pod (container or sandbox ID → state). */
export function diffPod(
  uid: string,
  before: ReadonlyMap<string, State>,
  after: ReadonlyMap<string, State>,
): PodLifecycleEvent[] {
  const events: PodLifecycleEvent[] = [];
  for (const id of new Set([...before.keys(), ...after.keys()])) {
    events.push(
      ...generateEvents(uid, id, before.get(id) ?? 'non-existent', after.get(id) ?? 'non-existent'),
    );
  }
  return events;
}

/**
 * Whether a cached status already shows what a relist saw for its pod: the same sandboxes and
 * containers in the same states. Re-reading it would return the same content (a container's
 * details do not change while its state does not), so the relist keeps it instead.
 */
export function statusMatches(status: RuntimePodStatus, seen: ReadonlyMap<string, State>): boolean {
  if (status.sandboxes.length + status.containers.length !== seen.size) return false;
  for (const s of status.sandboxes) if (seen.get(s.id) !== (s.ready ? 'running' : 'exited')) return false;
  for (const c of status.containers) if (seen.get(c.id) !== c.state) return false;
  return true;
}

/** The record of a pod as a relist lists it. */
export function statesOfSummary(pod: RuntimePodSummary): Map<string, State> {
  const m = new Map<string, State>();
  for (const s of pod.sandboxes) m.set(s.id, s.state === 'ready' ? 'running' : 'exited');
  for (const c of pod.containers) m.set(c.id, c.state);
  return m;
}

/** The record of a pod as its full status shows it (the same mapping as a relist's). */
export function statesOfStatus(status: RuntimePodStatus): Map<string, State> {
  const m = new Map<string, State>();
  for (const s of status.sandboxes) m.set(s.id, s.ready ? 'running' : 'exited');
  for (const c of status.containers) m.set(c.id, c.state);
  return m;
}

/** The relist summary of a pod rebuilt from its full status (for runtimePods() between relists). */
export function summaryOfStatus(status: RuntimePodStatus): RuntimePodSummary {
  return {
    uid: status.uid,
    name: status.name,
    namespace: status.namespace,
    sandboxes: status.sandboxes.map((s) => ({
      id: s.id,
      state: s.ready ? ('ready' as const) : ('notready' as const),
      createdAt: s.createdAt,
    })),
    containers: status.containers.map((c) => ({
      id: c.id,
      name: c.name,
      state: c.state,
      createdAt: c.createdAt,
      podSandboxId: c.podSandboxId,
    })),
  };
}
