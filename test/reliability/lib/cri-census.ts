/**
 * What the runtime holds for a set of pods, read straight from CRI (never from the kubelet under
 * test): sandboxes and containers by pod, and the faults a restart must not cause — duplicates,
 * restarted containers, pods that did not converge.
 */
import type { CriClient } from '../../../src/runtime/cri/index.ts';
import type { Container, PodSandbox } from '../../../src/runtime/cri/types.ts';
import { LABEL_CONTAINER_NAME, LABEL_POD_NAME, LABEL_POD_NAMESPACE } from '../../../src/config/defaults.ts';

export interface Census {
  sandboxes: PodSandbox[];
  containers: Container[];
}

/** Pod key as `namespace/name` from CRI labels. */
export const podKey = (labels: Record<string, string>) =>
  `${labels[LABEL_POD_NAMESPACE] ?? ''}/${labels[LABEL_POD_NAME] ?? ''}`;

/** Every sandbox and container of the pods whose `namespace/name` satisfies `mine`. */
export async function census(cri: CriClient, mine: (pod: string) => boolean): Promise<Census> {
  const [sandboxes, containers] = await Promise.all([
    cri.runtime.listPodSandbox(),
    cri.runtime.listContainers(),
  ]);
  return {
    sandboxes: sandboxes.filter((s) => mine(podKey(s.labels))),
    containers: containers.filter((c) => mine(podKey(c.labels))),
  };
}

/** Pods with more than one ready sandbox. */
export function duplicateSandboxes(c: Census): string[] {
  const ready = new Map<string, number>();
  for (const s of c.sandboxes) {
    if (s.state !== 'SANDBOX_READY') continue;
    const k = podKey(s.labels);
    ready.set(k, (ready.get(k) ?? 0) + 1);
  }
  return [...ready].filter(([, n]) => n > 1).map(([k, n]) => `${k} ×${n}`);
}

/** Containers of one name and attempt in one sandbox more than once, or running twice in a pod. */
export function duplicateContainers(c: Census): string[] {
  const seen = new Map<string, number>();
  const running = new Map<string, number>();
  for (const x of c.containers) {
    const name = x.labels[LABEL_CONTAINER_NAME] ?? x.metadata.name;
    const k = `${x.podSandboxId.slice(0, 12)}/${name}#${x.metadata.attempt}`;
    seen.set(k, (seen.get(k) ?? 0) + 1);
    if (x.state === 'CONTAINER_RUNNING') {
      const r = `${podKey(x.labels)}/${name}`;
      running.set(r, (running.get(r) ?? 0) + 1);
    }
  }
  return [
    ...[...seen].filter(([, n]) => n > 1).map(([k, n]) => `${k} ×${n}`),
    ...[...running].filter(([, n]) => n > 1).map(([k, n]) => `${k} running ×${n}`),
  ];
}

/** Ids of the running containers. */
export function runningIds(c: Census): Set<string> {
  return new Set(c.containers.filter((x) => x.state === 'CONTAINER_RUNNING').map((x) => x.id));
}

/** The containers that ran before and do not run now (stopped, or replaced by another). */
export function restarted(before: Census, after: Census): string[] {
  const now = runningIds(after);
  return before.containers
    .filter((x) => x.state === 'CONTAINER_RUNNING' && !now.has(x.id))
    .map((x) => `${podKey(x.labels)}/${x.metadata.name}`);
}

/** Pods (of `expected`) without one ready sandbox and every container in `names` running. */
export function notConverged(c: Census, expected: readonly string[], names: readonly string[]): string[] {
  const out: string[] = [];
  for (const pod of expected) {
    const sb = c.sandboxes.filter((s) => podKey(s.labels) === pod && s.state === 'SANDBOX_READY');
    const ids = new Set(sb.map((s) => s.id));
    const up = new Set(
      c.containers
        .filter((x) => ids.has(x.podSandboxId) && x.state === 'CONTAINER_RUNNING')
        .map((x) => x.metadata.name),
    );
    if (sb.length !== 1 || names.some((n) => !up.has(n))) out.push(pod);
  }
  return out;
}
