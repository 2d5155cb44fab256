/**
 * The kill path of the runtime manager (upstream killContainer, killPodWithSyncResult,
 * removeContainer, pruneInitContainersBeforeStart): stops containers with their preStop hook and
 * grace period, stops and removes sandboxes, and removes exited containers no status needs.
 * It never starts anything.
 */
import type { Container, KubeletPod } from '../../api/types.ts';
import { podFullName } from '../../api/types.ts';
import type { EventRecorder } from '../../api/events.ts';
import type { Logger } from '../../util/logger.ts';
import { describeError } from '../../util/errors.ts';
import { abortReason, combineSignals } from '../../util/abort.ts';
import {
  DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
  LABEL_POD_NAME,
  LABEL_POD_NAMESPACE,
  LABEL_POD_UID,
  MIN_GRACE_PERIOD_SECONDS,
} from '../../config/defaults.ts';
import type { ContainerStatus, RuntimeService } from '../cri/index.ts';
import { graceAfterPreStop, restoreHookSpec, type HookRunner, hookPodIP } from '../lifecycle/index.ts';
import type { RuntimeContainerStatus, RuntimePodStatus } from './runtime-pod.ts';
import type { TimelineRecorder } from '../../timeline/index.ts';

/** The part of a container's status a kill needs. */
export type KillTarget = Pick<
  RuntimeContainerStatus,
  'id' | 'name' | 'state' | 'podSandboxId' | 'terminationGracePeriodSeconds'
>;

export interface KillContainerRequest {
  /** Undefined for orphans: the spec and grace period come from the container's annotations. */
  pod: KubeletPod | undefined;
  container: KillTarget;
  /** Replaces the pod's grace period (e.g. a deletion or eviction with its own). */
  gracePeriodOverride?: number;
  /** The Killing event's message; '' for the default "Stopping container <name>". */
  reason: string;
  signal?: AbortSignal;
}

export interface PodKiller {
  /**
   * Runs the preStop hook (if any, and if there is a grace period to run it in) within the grace
   * period, then StopContainer with what is left of it. Rejects with the CRI error of a stop that
   * failed or outlived its deadline.
   */
  killContainer(req: KillContainerRequest): Promise<void>;
  /**
   * Stops every running container of the pod concurrently, then its ready sandboxes. A container
   * that could not be stopped does not hold back the others; the call rejects naming all of them.
   */
  killPod(
    pod: KubeletPod | undefined,
    status: RuntimePodStatus,
    gracePeriodOverride?: number,
    signal?: AbortSignal,
  ): Promise<void>;
  /** Removes all containers and sandboxes of a pod that has been killed. */
  removePod(status: RuntimePodStatus, signal?: AbortSignal): Promise<void>;
  /** Removes exited containers no status needs any more: per name, all but the newest two. */
  pruneContainers(pod: KubeletPod, status: RuntimePodStatus, signal?: AbortSignal): Promise<void>;
  /** Read-only, for `why`: the pod's preStop hooks running now (since: monotonic ms). */
  preStopsRunning(podUID: string): { container: string; since: number }[];
}

export interface PodKillerDeps {
  runtime: RuntimeService;
  recorder: EventRecorder;
  logger: Logger;
  hooks: HookRunner;
  /** Monotonic ms: how long the preStop hook took out of the grace period. */
  monotonic: () => number;
  /** Told about every container removed, so what is remembered about it can go. */
  onContainerRemoved?: (id: string) => void;
  /** `pre-stop-done`, `container-stopped`, `sandbox-removed`; absent: nothing. */
  timeline?: Pick<TimelineRecorder, 'record'>;
}

/** Upstream killContainer grace-period rules. */
export function gracePeriodFor(
  pod: KubeletPod | undefined,
  fallback: number | undefined,
  override?: number,
): number {
  if (override !== undefined) return Math.max(0, override);
  let g =
    pod?.metadata.deletionGracePeriodSeconds ??
    pod?.spec.terminationGracePeriodSeconds ??
    fallback ??
    DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
  if (g < MIN_GRACE_PERIOD_SECONDS) g = MIN_GRACE_PERIOD_SECONDS;
  return g;
}

export function createPodKiller(deps: PodKillerDeps): PodKiller {
  const { runtime, hooks, monotonic: now } = deps;
  /** Containers whose preStop hook already ran: a repeated kill (shorter grace) does not run it again. */
  const preStopRan = new Set<string>();
  /** preStop hooks in flight by container ID (read by `preStopsRunning` only). */
  const preStopRunning = new Map<string, { podUID: string; container: string; since: number }>();

  async function removeContainer(id: string, signal?: AbortSignal): Promise<void> {
    await runtime.removeContainer(id, { signal });
    deps.onContainerRemoved?.(id);
    preStopRan.delete(id);
  }

  /** The container spec a kill works from: the pod's, or for orphans what the annotations kept. */
  async function killSpec(
    pod: KubeletPod | undefined,
    c: KillTarget,
    signal?: AbortSignal,
  ): Promise<{ pod: KubeletPod; container: Container } | undefined> {
    const spec = pod
      ? [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((x) => x.name === c.name)
      : undefined;
    if (pod && spec) return { pod, container: spec };
    // Upstream restoreSpecsFromContainerLabels: what was written at creation is what the kill uses.
    let s: ContainerStatus;
    try {
      s = await runtime.containerStatus(c.id, { signal });
    } catch (err) {
      deps.logger.warn('cannot read container annotations; killing without its preStop hook', {
        pod: pod ? podFullName(pod) : undefined,
        podUID: pod?.metadata.uid,
        containerID: c.id,
        err: describeError(err),
      });
      return undefined;
    }
    const restored = restoreHookSpec(c.name, s.annotations ?? {});
    if (restored.problems.length > 0) {
      deps.logger.warn('malformed container annotations; ignored', {
        podUID: s.labels?.[LABEL_POD_UID],
        containerID: c.id,
        problems: restored.problems,
      });
    }
    const labels = s.labels ?? {};
    const stub: KubeletPod = pod ?? {
      metadata: {
        name: labels[LABEL_POD_NAME] ?? '',
        namespace: labels[LABEL_POD_NAMESPACE] ?? '',
        uid: labels[LABEL_POD_UID] ?? '',
      },
      spec: { containers: [restored.container] },
    };
    return { pod: stub, container: restored.container };
  }

  async function killContainer(req: KillContainerRequest): Promise<void> {
    const { pod, container: c, reason, signal } = req;
    let grace = gracePeriodFor(pod, c.terminationGracePeriodSeconds, req.gracePeriodOverride);
    if (pod) {
      deps.recorder.event(pod, 'Normal', 'Killing', reason || `Stopping container ${c.name}`);
    }
    const logFields = {
      pod: pod && podFullName(pod),
      podUID: pod?.metadata.uid,
      container: c.name,
      containerID: c.id,
    };
    // A container that never ran (created/unknown) has nothing a preStop hook could talk to.
    const hookable = grace > 0 && c.state === 'running' && !preStopRan.has(c.id);
    const target = hookable ? await killSpec(pod, c, signal) : undefined;
    const preStop = target?.container.lifecycle?.preStop;
    if (target && preStop) {
      preStopRan.add(c.id);
      deps.logger.debug('running preStop hook', { ...logFields, gracePeriod: grace });
      const started = now();
      const budget = AbortSignal.timeout(grace * 1000);
      preStopRunning.set(c.id, { podUID: target.pod.metadata.uid, container: c.name, since: started });
      const outcome = await hooks
        .run(
          preStop,
          { pod: target.pod, container: target.container, containerId: c.id },
          {
            timeoutSeconds: grace,
            podIP: hookPodIP(runtime, pod, c.podSandboxId, signal),
            signal: combineSignals([signal, budget]),
          },
        )
        .finally(() => preStopRunning.delete(c.id));
      if (signal?.aborted) throw abortReason(signal);
      if (budget.aborted) {
        deps.logger.info('preStop hook not completed in grace period', { ...logFields, gracePeriod: grace });
      } else if (!outcome.ok) {
        deps.logger.warn('preStop hook failed', { ...logFields, message: outcome.message });
        if (pod) {
          deps.recorder.event(pod, 'Warning', 'FailedPreStopHook', outcome.message.replaceAll(c.id, c.name));
        }
      }
      grace = graceAfterPreStop(grace, now() - started);
      if (pod) deps.timeline?.record(pod.metadata.uid, 'pre-stop-done', { container: c.name });
    }
    deps.logger.debug('killing container', { ...logFields, gracePeriod: grace });
    // The call may legitimately take the whole grace period before the runtime SIGKILLs.
    await runtime.stopContainer(c.id, grace, { signal, timeoutMs: 120_000 + grace * 1000 });
    preStopRan.delete(c.id);
    if (pod) deps.timeline?.record(pod.metadata.uid, 'container-stopped', { container: c.name });
  }

  async function killPod(
    pod: KubeletPod | undefined,
    status: RuntimePodStatus,
    gracePeriodOverride?: number,
    signal?: AbortSignal,
  ): Promise<void> {
    const running = status.containers.filter(
      (c) => c.state === 'running' || c.state === 'unknown' || c.state === 'created',
    );
    const results = await Promise.allSettled(
      running.map((c) =>
        killContainer({
          pod,
          container: c,
          gracePeriodOverride,
          reason: `Stopping container ${c.name}`,
          signal,
        }),
      ),
    );
    const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    // Aborted (e.g. a shorter grace period arrived): the caller runs the kill again.
    if (signal?.aborted) throw abortReason(signal);
    for (const sb of status.sandboxes) {
      if (!sb.ready) continue;
      await runtime.stopPodSandbox(sb.id, { signal });
    }
    if (failures.length > 0) {
      throw new Error(
        `failed to kill ${failures.length} container(s): ${failures.map((f) => describeError(f.reason)).join('; ')}`,
        {
          cause: failures[0]?.reason,
        },
      );
    }
  }

  async function removePod(status: RuntimePodStatus, signal?: AbortSignal): Promise<void> {
    for (const c of status.containers) await removeContainer(c.id, signal);
    for (const sb of status.sandboxes) await runtime.removePodSandbox(sb.id, { signal });
    if (status.sandboxes.length > 0) deps.timeline?.record(status.uid, 'sandbox-removed');
  }

  async function pruneContainers(
    pod: KubeletPod,
    status: RuntimePodStatus,
    signal?: AbortSignal,
  ): Promise<void> {
    const seen = new Map<string, number>();
    const initNames = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
    for (const c of status.containers) {
      const n = (seen.get(c.name) ?? 0) + 1;
      seen.set(c.name, n);
      // Init containers keep only their newest run (upstream pruneInitContainersBeforeStart).
      const keep = initNames.has(c.name) ? 1 : 2;
      if (n > keep && c.state === 'exited') {
        await removeContainer(c.id, signal).catch((err: unknown) => {
          deps.logger.warn('failed to prune exited container', {
            pod: podFullName(pod),
            podUID: pod.metadata.uid,
            containerID: c.id,
            err: describeError(err),
          });
        });
      }
    }
  }

  function preStopsRunning(podUID: string): { container: string; since: number }[] {
    const out: { container: string; since: number }[] = [];
    for (const p of preStopRunning.values()) {
      if (p.podUID === podUID) out.push({ container: p.container, since: p.since });
    }
    return out;
  }

  return { killContainer, killPod, removePod, pruneContainers, preStopsRunning };
}
