/**
 * One row of `get pods` as kubectl computes it (upstream pkg/printers/internalversion printPod):
 * READY counts ready app containers plus started-and-ready restartable init containers (sidecars);
 * STATUS is the pod's reason or phase, overridden by SchedulingGated, by the first init container
 * that is not done (`Init:N/M`, `Init:<reason>`, `Init:ExitCode:N`), then by the app containers
 * (last one wins: a waiting or terminated reason, `ExitCode:N`, `Signal:N`; `Completed` with a
 * ready running container shows `Running` or `NotReady`), then `Terminating` / `Unknown` for a pod
 * being deleted; RESTARTS sums restart counts with the age of the latest restart; AGE is
 * apimachinery's HumanDuration.
 */
import type { Container, ContainerStatus, Pod, PodCondition } from '../../api/types.ts';

export interface PodRow {
  namespace: string;
  name: string;
  ready: string;
  status: string;
  restarts: string;
  age: string;
  ip: string;
  node: string;
  nominatedNode: string;
  readinessGates: string;
}

/** upstream k8s.io/apimachinery/pkg/util/duration HumanDuration, from milliseconds. */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.trunc(hours / 24) % 365;
    const y = Math.trunc(hours / 24 / 365);
    return dy === 0 ? `${y}y` : `${y}y${dy}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/** upstream translateTimestampSince: `<unknown>` for a missing or unparsable time. */
export function since(timestamp: string | undefined, now: number): string {
  if (!timestamp) return '<unknown>';
  const t = Date.parse(timestamp);
  return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t);
}

function isRestartableInit(c: Container | undefined): boolean {
  return c?.restartPolicy === 'Always';
}

function conditionTrue(conditions: readonly PodCondition[] | undefined, type: string): boolean {
  return (conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

/** `Initialized` decides, even when it comes after others (upstream returns at the first match). */
function initializedTrue(conditions: readonly PodCondition[] | undefined): boolean {
  const c = (conditions ?? []).find((x) => x.type === 'Initialized');
  return c?.status === 'True';
}

function terminatedReason(t: { reason?: string; signal?: number; exitCode: number }, prefix: string): string {
  if (t.reason) return prefix + t.reason;
  return t.signal ? `${prefix}Signal:${t.signal}` : `${prefix}ExitCode:${t.exitCode}`;
}

function finishedAt(s: ContainerStatus): number | undefined {
  const at = s.lastState?.terminated?.finishedAt;
  const t = at ? Date.parse(at) : NaN;
  return Number.isNaN(t) ? undefined : t;
}

export function podRow(pod: Pod, now: number): PodRow {
  const status = pod.status ?? {};
  const spec = pod.spec ?? { containers: [] };
  const initSpecs = new Map((spec.initContainers ?? []).map((c) => [c.name, c]));
  let total = (spec.containers ?? []).length;
  for (const c of spec.initContainers ?? []) if (isRestartableInit(c)) total++;
  let ready = 0;
  let restarts = 0;
  let sidecarRestarts = 0;
  let lastRestart: number | undefined;
  let lastSidecarRestart: number | undefined;
  const later = (a: number | undefined, b: number | undefined) =>
    a === undefined ? b : b === undefined ? a : Math.max(a, b);

  let reason: string = status.reason || status.phase || '';
  for (const c of status.conditions ?? []) {
    if (c.type === 'PodScheduled' && c.reason === 'SchedulingGated') reason = 'SchedulingGated';
  }

  const initStatuses = status.initContainerStatuses ?? [];
  const initCount = (spec.initContainers ?? []).length;
  let initializing = false;
  for (let i = 0; i < initStatuses.length; i++) {
    const c = initStatuses[i];
    if (!c) continue;
    restarts += c.restartCount ?? 0;
    lastRestart = later(lastRestart, finishedAt(c));
    const sidecar = isRestartableInit(initSpecs.get(c.name));
    if (sidecar) {
      sidecarRestarts += c.restartCount ?? 0;
      lastSidecarRestart = later(lastSidecarRestart, finishedAt(c));
    }
    const state = c.state ?? {};
    if (state.terminated && state.terminated.exitCode === 0) continue;
    if (sidecar && c.started === true) {
      if (c.ready) ready++;
      continue;
    }
    if (state.terminated) {
      reason = terminatedReason(state.terminated, 'Init:');
    } else if (state.waiting?.reason && state.waiting.reason !== 'PodInitializing') {
      reason = `Init:${state.waiting.reason}`;
    } else {
      reason = `Init:${i}/${initCount}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || initializedTrue(status.conditions)) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    const statuses = status.containerStatuses ?? [];
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i];
      if (!c) continue;
      restarts += c.restartCount ?? 0;
      lastRestart = later(lastRestart, finishedAt(c));
      const state = c.state ?? {};
      if (state.waiting?.reason) reason = state.waiting.reason;
      else if (state.terminated) reason = terminatedReason(state.terminated, '');
      else if (c.ready && state.running) {
        hasRunning = true;
        ready++;
      }
    }
    if (reason === 'Completed' && hasRunning) {
      reason = conditionTrue(status.conditions, 'Ready') ? 'Running' : 'NotReady';
    }
  }

  const terminal = status.phase === 'Succeeded' || status.phase === 'Failed';
  if (pod.metadata.deletionTimestamp && status.reason === 'NodeLost') reason = 'Unknown';
  else if (pod.metadata.deletionTimestamp && !terminal) reason = 'Terminating';

  const gates = spec.readinessGates ?? [];
  const gatesTrue = gates.filter((g) => conditionTrue(status.conditions, g.conditionType)).length;
  const nominated = (status as { nominatedNodeName?: string }).nominatedNodeName;
  return {
    namespace: pod.metadata.namespace ?? 'default',
    name: pod.metadata.name ?? '',
    ready: `${ready}/${total}`,
    status: reason,
    restarts:
      restarts !== 0 && lastRestart !== undefined
        ? `${restarts} (${humanDuration(now - lastRestart)} ago)`
        : String(restarts),
    // Static pods from a file or URL carry no creationTimestamp: their start time stands in.
    age: since(pod.metadata.creationTimestamp ?? status.startTime, now),
    ip: status.podIPs?.[0]?.ip || '<none>',
    node: spec.nodeName || '<none>',
    nominatedNode: nominated || '<none>',
    readinessGates: gates.length > 0 ? `${gatesTrue}/${gates.length}` : '<none>',
  };
}
