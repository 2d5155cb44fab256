import type { Container, Pod } from '../api/types.ts';
import { hashContainer } from './hash.ts';
import { isRestartableInitContainer, restartPolicy } from '../api/pod-util.ts';
import {
  findContainerStatus,
  shouldContainerBeRestarted,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
} from './runtime-pod.ts';

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
  /**
   * Indexes into spec.initContainers to start, in spec order (upstream InitContainersToStart): the
   * next init container, and sidecar init containers (`restartPolicy: Always`) to (re)start.
   */
  initContainersToStart: number[];
  /** Indexes into spec.containers to start, in spec order. */
  containersToStart: number[];
  /** Running or unknown containers to kill before starting anything, with the reason. */
  containersToKill: { id: string; name: string; reason: string; gracePeriodSeconds?: number }[];
}

/** Upstream shouldRestartOnFailure: anything but Never restarts a failed container. */
function shouldRestartOnFailure(pod: Pod): boolean {
  return restartPolicy(pod) !== 'Never';
}

function containerSucceeded(container: Container, status: RuntimePodStatus): boolean {
  const cs = findContainerStatus(status, container.name);
  return cs !== undefined && cs.state === 'exited' && cs.exitCode === 0;
}

function isInitContainerFailed(cs: RuntimeContainerStatus): boolean {
  if (cs.reason === 'OOMKilled') return true;
  if (cs.state === 'exited' && cs.exitCode !== 0) return true;
  return cs.state === 'unknown';
}

/** Upstream hasAnyRegularContainerCreated: a regular container exists, so initialization finished once. */
function hasAnyRegularContainerCreated(pod: Pod, status: RuntimePodStatus): boolean {
  return pod.spec.containers.some((c) => {
    const state = findContainerStatus(status, c.name)?.state;
    return state === 'created' || state === 'running' || state === 'exited';
  });
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

/** What the prober says about running containers. */
export interface ProbeVerdicts {
  /**
   * Set when the container's liveness or startup probe failed for good: the container is killed
   * (and restarted per restart policy). `probe` names which one.
   */
  restartReason(
    containerName: string,
  ): { message: string; terminationGracePeriodSeconds?: number; probe?: 'liveness' | 'startup' } | undefined;
  /**
   * Whether the running container counts as started: true without a startup probe, else once it
   * succeeded. Absent: every running container counts as started. A sidecar init container must
   * have started before the next init container runs.
   */
  isStarted?(containerName: string): boolean;
}

type KillEntry = PodActions['containersToKill'][number];

function killFor(cs: RuntimeContainerStatus, reason: string, gracePeriodSeconds?: number): KillEntry {
  return {
    id: cs.id,
    name: cs.name,
    reason,
    ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
  };
}

/**
 * Upstream computeInitContainerActions (the SidecarContainers path, the only one since 1.33): walks
 * the init containers from the last one seen backwards. It starts the first init container that
 * has not run (or re-runs a failed one), keeps sidecar init containers running (restart when
 * exited, unknown, changed, or failing liveness/startup), and starts the init container after a
 * sidecar only once that sidecar has started. Returns whether the pod is initialized.
 */
function computeInitContainerActions(
  pod: Pod,
  status: RuntimePodStatus,
  actions: PodActions,
  probes: ProbeVerdicts | undefined,
): boolean {
  const inits = pod.spec.initContainers ?? [];
  if (inits.length === 0) return true;
  // A created or running regular container means initialization finished earlier; init statuses may
  // have been removed since, and regular init containers must then not run again. (An exited one
  // does not count: after a reboot every container has exited and the new sandbox starts afresh.)
  let initialized = pod.spec.containers.some((c) => {
    const state = findContainerStatus(status, c.name)?.state;
    return state === 'created' || state === 'running';
  });
  let previousInitialized = initialized;
  const restartOnFailure = shouldRestartOnFailure(pod);
  const toStart: number[] = [];

  for (let i = inits.length - 1; i >= 0; i--) {
    const c = inits[i]!;
    const sidecar = isRestartableInitContainer(c);
    const cs = findContainerStatus(status, c.name);
    if (!cs) {
      // Status gone (removed): a sidecar that should be running is started again.
      if (previousInitialized && sidecar) toStart.push(i);
      continue;
    }
    if (previousInitialized && !sidecar) continue; // done for good

    switch (cs.state) {
      case 'created':
        // Created and started are one step; a container stuck in created failed to start.
        toStart.push(i);
        break;
      case 'running': {
        if (!sidecar) break; // wait for it to finish
        if (probes?.isStarted?.(c.name) === false) {
          // Upstream: a startup probe not yet concluded means wait; one that failed restarts it.
          const failed = probes.restartReason(c.name);
          if (failed) {
            actions.containersToKill.push(
              killFor(
                cs,
                `Init container ${c.name} failed startup probe`,
                failed.terminationGracePeriodSeconds,
              ),
            );
            toStart.push(i);
          }
          break;
        }
        if (i === inits.length - 1) initialized = true;
        else if (!previousInitialized) toStart.push(i + 1); // started for the first time: next one
        if (cs.hash !== '' && cs.hash !== hashContainer(c)) {
          actions.containersToKill.push(killFor(cs, `Init container ${c.name} definition changed`));
          toStart.push(i);
          break;
        }
        const failed = probes?.restartReason(c.name);
        if (failed) {
          actions.containersToKill.push(
            killFor(
              cs,
              `Init container ${c.name} failed ${failed.probe ?? 'liveness'} probe`,
              failed.terminationGracePeriodSeconds,
            ),
          );
          toStart.push(i);
        }
        break;
      }
      case 'exited':
        if (sidecar) {
          toStart.push(i);
          break;
        }
        if (isInitContainerFailed(cs)) {
          if (!restartOnFailure) {
            actions.killPod = true;
            actions.initContainersToStart = [];
            return false;
          }
          toStart.push(i);
          break;
        }
        if (i === inits.length - 1) initialized = true;
        else toStart.push(i + 1);
        break;
      case 'unknown':
        if (!sidecar && !restartOnFailure) {
          actions.killPod = true;
          actions.initContainersToStart = [];
          return false;
        }
        actions.containersToKill.push(
          killFor(cs, 'Init container is in unknown state, try killing it before restart'),
        );
        toStart.push(i);
        break;
    }
    previousInitialized = true;
  }
  if (!previousInitialized) toStart.push(0); // nothing has run yet: the first one
  actions.initContainersToStart = [...new Set(toStart)].sort((a, b) => a - b);
  return initialized;
}

export function computePodActions(pod: Pod, status: RuntimePodStatus, probes?: ProbeVerdicts): PodActions {
  const sandbox = podSandboxChanged(pod, status);
  const actions: PodActions = {
    killPod: sandbox.create,
    createSandbox: sandbox.create,
    sandboxId: sandbox.sandboxId,
    attempt: sandbox.attempt,
    initContainersToStart: [],
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
    if (toStart.length === 0 && hasAnyRegularContainerCreated(pod, status)) {
      actions.createSandbox = false;
      return actions;
    }
    if (inits.length > 0) {
      actions.initContainersToStart = [0];
      return actions;
    }
    actions.containersToStart = toStart;
    return actions;
  }

  const initialized = computeInitContainerActions(pod, status, actions, probes);
  if (actions.killPod || !initialized) return actions;

  let keepCount = 0;
  pod.spec.containers.forEach((c, i) => {
    const cs = findContainerStatus(status, c.name);
    if (!cs || cs.state !== 'running') {
      if (shouldContainerBeRestarted(c, pod, status)) {
        actions.containersToStart.push(i);
        if (cs?.state === 'unknown') {
          actions.containersToKill.push(
            killFor(cs, 'Container is in unknown state, try killing it before restart'),
          );
        }
      }
      return;
    }
    if (cs.hash !== '' && cs.hash !== hashContainer(c)) {
      actions.containersToStart.push(i);
      actions.containersToKill.push(killFor(cs, `Container ${c.name} definition changed, will be restarted`));
      return;
    }
    // Upstream: a failed liveness/startup probe kills the container; it is started again only
    // when the restart policy allows it.
    const failed = probes?.restartReason(c.name);
    if (failed) {
      if (shouldRestartOnFailure(pod)) actions.containersToStart.push(i);
      actions.containersToKill.push(killFor(cs, failed.message, failed.terminationGracePeriodSeconds));
      return;
    }
    keepCount++;
  });
  if (keepCount === 0 && actions.containersToStart.length === 0) {
    // Every regular container is done: the pod completes, and its sidecars must not keep it alive.
    actions.killPod = true;
    actions.initContainersToStart = [];
  }
  return actions;
}
