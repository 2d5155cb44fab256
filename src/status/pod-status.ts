import type {
  Container,
  ContainerState,
  ContainerStatus,
  Pod,
  PodCondition,
  PodPhase,
  PodSpec,
  PodStatus,
} from '../api/types.ts';
import { podQOSClass } from '../api/qos.ts';
import { isRestartableInitContainer } from '../api/pod-util.ts';
import {
  generateContainersReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  hasAnyRegularContainerStarted,
  isKubeletOwnedCondition,
  statusesByName,
  type GeneratedCondition,
} from './conditions.ts';
import {
  findContainerStatus,
  podIPs,
  shouldContainerBeRestarted,
  type RuntimeContainerStatus,
  type RuntimePodStatus,
} from '../runtime/runtime-pod.ts';

/** A container that failed to start, keyed by name (upstream ReasonCache entry). */
export interface WaitingReason {
  reason: string;
  message: string;
}

export interface StatusInputs {
  pod: Pod;
  runtime: RuntimePodStatus;
  /** The status computed last time (keeps startTime, transition times, lastState). */
  previous: PodStatus | undefined;
  /** Why containers are waiting after the last sync (CrashLoopBackOff, ErrImagePull, …). */
  waiting: ReadonlyMap<string, WaitingReason>;
  hostIP: string | undefined;
  /** Probe results: readiness and started-ness of running containers (absent: ready = running). */
  probes?: { isReady(containerName: string): boolean; isStarted(containerName: string): boolean };
  now: () => number;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** `containerd://<id>`, the runtime-qualified ID the API carries. */
export function containerID(id: string): string {
  return `containerd://${id}`;
}

function convertState(cs: RuntimeContainerStatus): ContainerState {
  switch (cs.state) {
    case 'running':
      return { running: { startedAt: iso(cs.startedAt) } };
    case 'created':
      // Created but never started (a start that failed): waiting to run, as current upstream
      // reports it (1.20 called it terminated with exit code 0, which made such a pod "Succeeded").
      return { waiting: {} };
    case 'exited': {
      const reason = cs.reason !== '' ? cs.reason : cs.exitCode === 0 ? 'Completed' : 'Error';
      const terminated: NonNullable<ContainerState['terminated']> = {
        exitCode: cs.exitCode,
        reason,
        containerID: containerID(cs.id),
      };
      if (cs.message !== '') terminated.message = cs.message;
      if (cs.startedAt > 0) terminated.startedAt = iso(cs.startedAt);
      if (cs.finishedAt > 0) terminated.finishedAt = iso(cs.finishedAt);
      return { terminated };
    }
    case 'unknown':
      return { waiting: {} };
  }
}

/** Upstream convertToAPIContainerStatuses for either the init or the app container list. */
function containerStatuses(
  inputs: StatusInputs,
  containers: Container[],
  previous: ContainerStatus[] | undefined,
  isInit: boolean,
  defaultWaitingReason: string,
): ContainerStatus[] {
  const { pod, runtime, waiting } = inputs;
  const prev = new Map((previous ?? []).map((s) => [s.name, s]));
  const statuses = new Map<string, ContainerStatus>();
  for (const c of containers) {
    const old = prev.get(c.name);
    statuses.set(c.name, {
      name: c.name,
      image: c.image ?? '',
      imageID: '',
      state: { waiting: { reason: defaultWaitingReason } },
      lastState: old?.lastState ?? {},
      ready: false,
      restartCount: old?.restartCount ?? 0,
      started: false,
    });
  }
  const seen = new Map<string, number>();
  const specs = new Map(containers.map((c) => [c.name, c]));
  for (const cs of runtime.containers) {
    const status = statuses.get(cs.name);
    const c = specs.get(cs.name);
    if (!status || !c) continue;
    const n = seen.get(cs.name) ?? 0;
    if (n >= 2) continue;
    seen.set(cs.name, n + 1);
    if (n === 0) {
      status.state = convertState(cs);
      status.containerID = containerID(cs.id);
      status.image = cs.image !== '' ? cs.image : status.image;
      status.imageID = cs.imageRef;
      status.restartCount = cs.restartCount;
      const running = cs.state === 'running';
      status.started = running && (inputs.probes?.isStarted(cs.name) ?? true);
      // Upstream UpdatePodStatus: a regular init container is ready once it completed successfully;
      // a sidecar init container, like a regular container, once started and its readiness passes.
      status.ready =
        isInit && !isRestartableInitContainer(c)
          ? cs.state === 'exited' && cs.exitCode === 0
          : running && status.started && (inputs.probes?.isReady(cs.name) ?? true);
      status.lastState = {};
    } else {
      status.lastState = convertState(cs);
    }
  }
  // A container the next sync will (re)start, but could not last time, is Waiting with the reason.
  for (const c of containers) {
    if (isInit) {
      const s = findContainerStatus(runtime, c.name);
      if (s && s.state === 'exited' && s.exitCode === 0) continue;
    }
    if (!shouldContainerBeRestarted(c, pod, runtime)) continue;
    const reason = waiting.get(c.name);
    const status = statuses.get(c.name);
    if (!reason || !status) continue;
    if (status.state.terminated) status.lastState = status.state;
    status.state = { waiting: { reason: reason.reason, message: reason.message } };
  }
  return containers.map((c) => statuses.get(c.name)!);
}

/**
 * Upstream getPhase. Sidecar init containers (restartPolicy Always) count with the regular
 * containers once started; one still starting keeps the pod Pending until a regular container ran.
 */
export function podPhase(spec: PodSpec, init: ContainerStatus[], app: ContainerStatus[]): PodPhase {
  let pendingInit = 0;
  let failedInit = 0;
  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  const initByName = statusesByName(init);
  const appByName = statusesByName(app);
  for (const c of spec.initContainers ?? []) {
    const s = initByName.get(c.name);
    if (isRestartableInitContainer(c)) {
      if (!s) unknown++;
      else if (s.state.running) {
        if (s.started !== true) pendingInit++;
        running++;
      } else if (s.state.terminated) {
        // A stopped sidecar does not count towards the phase.
      } else if (s.state.waiting) {
        if (!s.lastState.terminated) {
          pendingInit++;
          waiting++;
        }
      } else {
        pendingInit++;
        unknown++;
      }
      continue;
    }
    if (!s) {
      pendingInit++;
      continue;
    }
    if (s.state.running) pendingInit++;
    else if (s.state.terminated) {
      if (s.state.terminated.exitCode !== 0) failedInit++;
    } else if (s.state.waiting) {
      if (s.lastState.terminated) {
        if (s.lastState.terminated.exitCode !== 0) failedInit++;
      } else pendingInit++;
    } else pendingInit++;
  }
  for (const c of spec.containers) {
    const s = appByName.get(c.name);
    if (!s) {
      unknown++;
      continue;
    }
    if (s.state.running) running++;
    else if (s.state.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state.waiting) {
      if (s.lastState.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }
  const policy = spec.restartPolicy ?? 'Always';
  if (failedInit > 0 && policy === 'Never') return 'Failed';
  // Once a regular container ran, restarting sidecars do not send the pod back to Pending.
  if (pendingInit > 0 && !hasAnyRegularContainerStarted(spec, app)) return 'Pending';
  if (waiting > 0) return 'Pending';
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (policy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

/** Stamps a generated condition with transition times, kept from the previous status while unchanged. */
function stamp(c: GeneratedCondition, previous: PodCondition[] | undefined, nowIso: string): PodCondition {
  const old = previous?.find((p) => p.type === c.type);
  const out: PodCondition = {
    type: c.type,
    status: c.status,
    lastProbeTime: null,
    lastTransitionTime:
      old && old.status === c.status && old.lastTransitionTime ? old.lastTransitionTime : nowIso,
  };
  if (c.reason !== undefined) out.reason = c.reason;
  if (c.message !== undefined) out.message = c.message;
  return out;
}

/**
 * Upstream generateAPIPodStatus: phase, container statuses with probe results, conditions and IPs.
 * Conditions the kubelet does not own (readiness gates' and others') are taken from the pod as
 * the API has it and kept first, as upstream orders them; Ready also waits for every readiness gate.
 */
export function computePodStatus(inputs: StatusInputs): PodStatus {
  const { pod, runtime, previous } = inputs;
  const nowIso = iso(inputs.now());
  const inits = pod.spec.initContainers ?? [];
  const initStatuses = containerStatuses(
    inputs,
    inits,
    previous?.initContainerStatuses,
    true,
    'PodInitializing',
  );
  const appStatuses = containerStatuses(
    inputs,
    pod.spec.containers,
    previous?.containerStatuses,
    false,
    // Upstream: any pod with init containers shows PodInitializing until a container starts.
    inits.length > 0 ? 'PodInitializing' : 'ContainerCreating',
  );
  let phase = podPhase(pod.spec, initStatuses, appStatuses);
  // Never regress out of a terminal phase (ours, or the API's).
  if (isTerminalPhase(previous?.phase)) phase = previous?.phase ?? phase;
  else if (isTerminalPhase(pod.status?.phase)) phase = pod.status?.phase ?? phase;

  const others = (pod.status?.conditions ?? []).filter((c) => !isKubeletOwnedCondition(c.type));
  const all = [...initStatuses, ...appStatuses];
  const generated = [
    generatePodInitializedCondition(pod.spec, all, phase),
    generatePodReadyCondition(pod.spec, others, all, phase),
    generateContainersReadyCondition(pod.spec, all, phase),
    { type: 'PodScheduled', status: 'True' } satisfies GeneratedCondition,
  ];
  const conditions = [
    ...others.map((c) => structuredClone(c)),
    ...generated.map((c) => stamp(c, previous?.conditions, nowIso)),
  ];
  const ips = podIPs(runtime);
  const status: PodStatus = {
    phase,
    conditions,
    startTime: previous?.startTime ?? nowIso,
    containerStatuses: appStatuses,
    qosClass: podQOSClass(pod),
  };
  if (inits.length > 0) status.initContainerStatuses = initStatuses;
  if (inputs.hostIP) status.hostIP = inputs.hostIP;
  const podIP = pod.spec.hostNetwork ? inputs.hostIP : ips[0];
  if (podIP) {
    status.podIP = podIP;
    status.podIPs = pod.spec.hostNetwork ? [{ ip: podIP }] : ips.map((ip) => ({ ip }));
  } else if (previous?.podIP) {
    status.podIP = previous.podIP;
    status.podIPs = previous.podIPs ?? [{ ip: previous.podIP }];
  }
  return status;
}

/** A pod is finished when its phase is terminal: the kubelet stops it and never restarts it. */
export function isTerminalPhase(phase: PodPhase | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}
