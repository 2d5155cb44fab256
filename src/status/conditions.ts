/**
 * The pod conditions the kubelet owns, computed from container statuses (upstream
 * pkg/kubelet/status/generate.go), and the readiness-gate rule for the Ready condition.
 */
import type { Container, ContainerStatus, Pod, PodCondition, PodPhase, PodSpec } from '../api/types.ts';
import { isRestartableInitContainer } from '../api/pod-util.ts';

/** Condition reasons, as upstream spells them. */
export const UNKNOWN_CONTAINER_STATUSES = 'UnknownContainerStatuses';
export const POD_COMPLETED = 'PodCompleted';
export const POD_FAILED = 'PodFailed';
export const CONTAINERS_NOT_READY = 'ContainersNotReady';
export const CONTAINERS_NOT_INITIALIZED = 'ContainersNotInitialized';
export const READINESS_GATES_NOT_READY = 'ReadinessGatesNotReady';

/**
 * Condition types the kubelet writes and overwrites (upstream PodConditionsByKubelet). Every other
 * type (readiness gates, DisruptionTarget, …) belongs to someone else and is kept as the API has it.
 * PodReadyToStartContainers is kubelet-owned upstream only where that feature is on; we do not
 * produce it (our API level is 1.20), so it counts as someone else's here.
 */
export const KUBELET_OWNED_CONDITIONS: readonly string[] = [
  'PodScheduled',
  'Ready',
  'Initialized',
  'ContainersReady',
];

export function isKubeletOwnedCondition(type: string): boolean {
  return KUBELET_OWNED_CONDITIONS.includes(type);
}

/** A condition as generated, before the status manager stamps transition times on it. */
export interface GeneratedCondition {
  type: string;
  status: 'True' | 'False';
  reason?: string;
  message?: string;
}

export interface PodReadinessGate {
  conditionType: string;
}

/** spec.readinessGates (not in our PodSpec type; carried through untouched from the API or manifest). */
export function readinessGatesOf(spec: PodSpec): PodReadinessGate[] {
  const gates: unknown = (spec as PodSpec & { readinessGates?: unknown }).readinessGates;
  if (!Array.isArray(gates)) return [];
  const out: PodReadinessGate[] = [];
  for (const g of gates) {
    const type: unknown = (g as { conditionType?: unknown } | null)?.conditionType;
    if (typeof type === 'string' && type !== '') out.push({ conditionType: type });
  }
  return out;
}

/** Go's fmt %s of a []string: `[a b c]`. */
function goList(names: string[]): string {
  return `[${names.join(' ')}]`;
}

/** Each container's status by name (the first of a name wins): one lookup per container, not a scan. */
export function statusesByName(statuses: readonly ContainerStatus[]): Map<string, ContainerStatus> {
  const byName = new Map<string, ContainerStatus>();
  for (const s of statuses) if (!byName.has(s.name)) byName.set(s.name, s);
  return byName;
}

/** Upstream HasAnyRegularContainerStarted: a regular container is running or has terminated. */
export function hasAnyRegularContainerStarted(spec: PodSpec, statuses: readonly ContainerStatus[]): boolean {
  const names = new Set(spec.containers.map((c) => c.name));
  return statuses.some(
    (s) => names.has(s.name) && (s.state.running !== undefined || s.state.terminated !== undefined),
  );
}

/**
 * Upstream GenerateContainersReadyCondition: every regular container and every sidecar init
 * container is ready. `statuses` holds init and regular container statuses together.
 */
export function generateContainersReadyCondition(
  spec: PodSpec,
  statuses: readonly ContainerStatus[] | undefined,
  phase: PodPhase | undefined,
): GeneratedCondition {
  const type = 'ContainersReady';
  if (statuses === undefined) return { type, status: 'False', reason: UNKNOWN_CONTAINER_STATUSES };
  const unknown: string[] = [];
  const unready: string[] = [];
  const byName = statusesByName(statuses);
  const consider = (c: Container) => {
    const s = byName.get(c.name);
    if (!s) unknown.push(c.name);
    else if (!s.ready) unready.push(c.name);
  };
  for (const c of spec.initContainers ?? []) if (isRestartableInitContainer(c)) consider(c);
  for (const c of spec.containers) consider(c);
  if (phase === 'Succeeded' && unknown.length === 0) return { type, status: 'False', reason: POD_COMPLETED };
  if (phase === 'Failed') return { type, status: 'False', reason: POD_FAILED };
  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${goList(unknown)}`);
  if (unready.length > 0) messages.push(`containers with unready status: ${goList(unready)}`);
  if (messages.length > 0) {
    return { type, status: 'False', reason: CONTAINERS_NOT_READY, message: messages.join(', ') };
  }
  return { type, status: 'True' };
}

/**
 * Upstream GeneratePodReadyCondition: Ready follows ContainersReady; when that is True, every
 * readiness gate's condition in `conditions` must be True as well.
 */
export function generatePodReadyCondition(
  spec: PodSpec,
  conditions: readonly PodCondition[],
  statuses: readonly ContainerStatus[] | undefined,
  phase: PodPhase | undefined,
): GeneratedCondition {
  const containersReady = generateContainersReadyCondition(spec, statuses, phase);
  if (containersReady.status !== 'True') return { ...containersReady, type: 'Ready' };
  const messages: string[] = [];
  for (const gate of readinessGatesOf(spec)) {
    const c = conditions.find((x) => x.type === gate.conditionType);
    if (!c) {
      messages.push(`corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`);
    } else if (c.status !== 'True') {
      messages.push(
        `the status of pod readiness gate "${gate.conditionType}" is not "True", but ${c.status}`,
      );
    }
  }
  if (messages.length > 0) {
    return {
      type: 'Ready',
      status: 'False',
      reason: READINESS_GATES_NOT_READY,
      message: messages.join(', '),
    };
  }
  return { type: 'Ready', status: 'True' };
}

/**
 * Upstream GeneratePodInitializedCondition: every regular init container succeeded and every
 * sidecar init container started (or a regular container already ran, which implies both).
 */
export function generatePodInitializedCondition(
  spec: PodSpec,
  statuses: readonly ContainerStatus[] | undefined,
  phase: PodPhase | undefined,
): GeneratedCondition {
  const type = 'Initialized';
  const inits = spec.initContainers ?? [];
  if (statuses === undefined && inits.length > 0) {
    return { type, status: 'False', reason: UNKNOWN_CONTAINER_STATUSES };
  }
  const byName = statusesByName(statuses ?? []);
  const unknown: string[] = [];
  const incomplete: string[] = [];
  for (const c of inits) {
    const s = byName.get(c.name);
    if (!s) {
      unknown.push(c.name);
      continue;
    }
    const done = isRestartableInitContainer(c) ? s.started === true : s.ready;
    if (!done) incomplete.push(c.name);
  }
  if (phase === 'Succeeded' && unknown.length === 0) return { type, status: 'True', reason: POD_COMPLETED };
  if (hasAnyRegularContainerStarted(spec, statuses ?? [])) return { type, status: 'True' };
  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${goList(unknown)}`);
  if (incomplete.length > 0) messages.push(`containers with incomplete status: ${goList(incomplete)}`);
  if (messages.length > 0) {
    return { type, status: 'False', reason: CONTAINERS_NOT_INITIALIZED, message: messages.join(', ') };
  }
  return { type, status: 'True' };
}

/**
 * Upstream NeedToReconcilePodReadiness: the pod has readiness gates and its Ready condition, as the
 * API has it, disagrees with what its conditions now say (e.g. someone just set a gate's
 * condition). The kubelet then syncs the pod, so Ready follows without waiting for a resync.
 */
export function needToReconcilePodReadiness(pod: Pod): boolean {
  if (readinessGatesOf(pod.spec).length === 0) return false;
  const status = pod.status ?? {};
  const conditions = status.conditions ?? [];
  const statuses = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
  const want = generatePodReadyCondition(pod.spec, conditions, statuses, status.phase);
  const current = conditions.find((c) => c.type === 'Ready');
  if (!current) return false;
  return current.status !== want.status || (current.message ?? '') !== (want.message ?? '');
}
