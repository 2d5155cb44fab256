import type { Container, Pod } from '../api/types.ts';
import { hashContainer } from './hash.ts';
import { findContainerStatus, type RuntimeContainerStatus, type RuntimePodStatus } from './runtime-pod.ts';

/**
 * What one sync must do to bring the runtime to the pod's spec (upstream podActions). Computed by a pure
 * function from the spec and the runtime's status; `runtime-manager.ts` carries it out against CRI.
 */
export interface PodActions {
  /** Stop every container and the sandbox (the pod is done, or its sandbox must be replaced). */
  killPod: boolean;
  createSandbox: boolean;
  /** The sandbox to start containers in, when not creating one. */
  sandboxId: string;
  /** Sandbox attempt number for a new sandbox. */
  attempt: number;
  /** Index into spec.initContainers of the next init container to start, if any. */
  nextInitContainer: number | undefined;
  /** Indexes into spec.containers to start, in spec order. */
  containersToStart: number[];
  /** Running or unknown containers to kill before starting anything, with the reason. */
  containersToKill: { id: string; name: string; reason: string; gracePeriodSeconds?: number }[];
}

export function restartPolicy(pod: Pod): 'Always' | 'OnFailure' | 'Never' {
  return pod.spec.restartPolicy ?? 'Always';
}

/** Upstream shouldRestartOnFailure: anything but Never restarts a failed container. */
export function shouldRestartOnFailure(pod: Pod): boolean {
  return restartPolicy(pod) !== 'Never';
}

/** Upstream kubecontainer.ShouldContainerBeRestarted. */
export function shouldContainerBeRestarted(
  container: Container,
  pod: Pod,
  status: RuntimePodStatus,
): boolean {
  if (pod.metadata.deletionTimestamp) return false;
  const cs = findContainerStatus(status, container.name);
  if (!cs) return true;
  if (cs.state === 'running') return false;
  if (cs.state === 'unknown' || cs.state === 'created') return true;
  const policy = restartPolicy(pod);
  if (policy === 'Never') return false;
  if (policy === 'OnFailure' && cs.exitCode === 0) return false;
  return true;
}

function containerSucceeded(container: Container, status: RuntimePodStatus): boolean {
  const cs = findContainerStatus(status, container.name);
  return cs !== undefined && cs.state === 'exited' && cs.exitCode === 0;
}

export function isInitContainerFailed(cs: RuntimeContainerStatus): boolean {
  if (cs.reason === 'OOMKilled') return true;
  if (cs.state === 'exited' && cs.exitCode !== 0) return true;
  return cs.state === 'unknown';
}

interface InitProgress {
  /** All init containers completed successfully (or an app container already runs). */
  done: boolean;
  /** The next init container to run (or re-run after a failure). */
  next: number | undefined;
  /** The status of the last failed init container, if one failed. */
  failed: RuntimeContainerStatus | undefined;
}

/** Upstream findNextInitContainerToRun: init containers run strictly in order, one at a time. */
export function findNextInitContainer(pod: Pod, status: RuntimePodStatus): InitProgress {
  const inits = pod.spec.initContainers ?? [];
  if (inits.length === 0) return { done: true, next: undefined, failed: undefined };
  // A running app container means initialization finished earlier (e.g. before a kubelet restart).
  for (const c of pod.spec.containers) {
    if (findContainerStatus(status, c.name)?.state === 'running') {
      return { done: true, next: undefined, failed: undefined };
    }
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const cs = findContainerStatus(status, inits[i]!.name);
    if (cs && isInitContainerFailed(cs)) return { done: false, next: i, failed: cs };
  }
  for (let i = inits.length - 1; i >= 0; i--) {
    const cs = findContainerStatus(status, inits[i]!.name);
    if (!cs) continue;
    if (cs.state === 'running') return { done: false, next: undefined, failed: undefined };
    if (cs.state === 'exited') {
      if (i === inits.length - 1) return { done: true, next: undefined, failed: undefined };
      return { done: false, next: i + 1, failed: undefined };
    }
    // created or unknown: start it again
    return { done: false, next: i, failed: undefined };
  }
  return { done: false, next: 0, failed: undefined };
}

interface SandboxDecision {
  create: boolean;
  attempt: number;
  sandboxId: string;
}

/** Upstream podSandboxChanged: does the pod need a (new) sandbox? */
export function podSandboxChanged(pod: Pod, status: RuntimePodStatus): SandboxDecision {
  const latest = status.sandboxes[0];
  if (!latest) return { create: true, attempt: 0, sandboxId: '' };
  const readyCount = status.sandboxes.filter((s) => s.ready).length;
  const next = { create: true, attempt: latest.attempt + 1, sandboxId: latest.id };
  if (readyCount > 1) return next;
  if (!latest.ready) return next;
  if ((pod.spec.hostNetwork ?? false) !== latest.hostNetwork) return next;
  if (!latest.hostNetwork && latest.ip === '') return next;
  return { create: false, attempt: latest.attempt, sandboxId: latest.id };
}

/** What the prober says about running containers (liveness / startup failures). */
export interface ProbeVerdicts {
  restartReason(
    containerName: string,
  ): { message: string; terminationGracePeriodSeconds?: number } | undefined;
}

export function computePodActions(pod: Pod, status: RuntimePodStatus, probes?: ProbeVerdicts): PodActions {
  const sandbox = podSandboxChanged(pod, status);
  const actions: PodActions = {
    killPod: sandbox.create,
    createSandbox: sandbox.create,
    sandboxId: sandbox.sandboxId,
    attempt: sandbox.attempt,
    nextInitContainer: undefined,
    containersToStart: [],
    containersToKill: [],
  };
  const inits = pod.spec.initContainers ?? [];

  if (sandbox.create) {
    // A Never pod whose containers already ran is not brought back on a new sandbox.
    if (!shouldRestartOnFailure(pod) && sandbox.attempt !== 0 && status.containers.length > 0) {
      actions.createSandbox = false;
      return actions;
    }
    const toStart: number[] = [];
    pod.spec.containers.forEach((c, i) => {
      if (containerSucceeded(c, status) && restartPolicy(pod) === 'OnFailure') return;
      toStart.push(i);
    });
    // Initialization done and nothing left to run (OnFailure, all succeeded): no sandbox needed.
    if (toStart.length === 0 && findNextInitContainer(pod, status).done) {
      actions.createSandbox = false;
      return actions;
    }
    if (inits.length > 0) {
      actions.nextInitContainer = 0;
      return actions;
    }
    actions.containersToStart = toStart;
    return actions;
  }

  const init = findNextInitContainer(pod, status);
  if (!init.done) {
    if (init.next !== undefined) {
      if (init.failed && !shouldRestartOnFailure(pod)) {
        actions.killPod = true;
      } else {
        if (init.failed?.state === 'unknown') {
          actions.containersToKill.push({
            id: init.failed.id,
            name: init.failed.name,
            reason: 'Init container is in unknown state, try killing it before restart',
          });
        }
        actions.nextInitContainer = init.next;
      }
    }
    return actions;
  }

  let keepCount = 0;
  pod.spec.containers.forEach((c, i) => {
    const cs = findContainerStatus(status, c.name);
    if (!cs || cs.state !== 'running') {
      if (shouldContainerBeRestarted(c, pod, status)) {
        actions.containersToStart.push(i);
        if (cs?.state === 'unknown') {
          actions.containersToKill.push({
            id: cs.id,
            name: c.name,
            reason: 'Container is in unknown state, try killing it before restart',
          });
        }
      }
      return;
    }
    if (cs.hash !== '' && cs.hash !== hashContainer(c)) {
      actions.containersToStart.push(i);
      actions.containersToKill.push({
        id: cs.id,
        name: c.name,
        reason: `Container ${c.name} definition changed, will be restarted`,
      });
      return;
    }
    // Upstream: a failed liveness/startup probe kills the container; it is started again only
    // when the restart policy allows it.
    const failed = probes?.restartReason(c.name);
    if (failed) {
      if (shouldRestartOnFailure(pod)) actions.containersToStart.push(i);
      actions.containersToKill.push({
        id: cs.id,
        name: c.name,
        reason: failed.message,
        ...(failed.terminationGracePeriodSeconds !== undefined
          ? { gracePeriodSeconds: failed.terminationGracePeriodSeconds }
          : {}),
      });
      return;
    }
    keepCount++;
  });
  if (keepCount === 0 && actions.containersToStart.length === 0) actions.killPod = true;
  return actions;
}
