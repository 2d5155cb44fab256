import type { Pod } from '../api/types.ts';
import { requirementMatches } from '../api/node-selector.ts';
import { milliCPU, parseQuantity } from '../api/quantity.ts';

export interface AdmitResult {
  admit: boolean;
  reason?: string;
  message?: string;
}

/** Upstream lifecycle.PodAdmitHandler: the kubelet walks a list of these before starting a pod. */
export interface PodAdmitHandler {
  readonly name: string;
  admit(pod: Pod, activePods: readonly Pod[]): AdmitResult;
}

export function runAdmitHandlers(
  handlers: readonly PodAdmitHandler[],
  pod: Pod,
  active: readonly Pod[],
): AdmitResult {
  for (const h of handlers) {
    const r = h.admit(pod, active);
    if (!r.admit) return r;
  }
  return { admit: true };
}

/** What admission needs to know about the node (from the Node object, or the machine standalone). */
export interface NodeView {
  name: string;
  labels: Record<string, string>;
  /** Allocatable in base units: cpu in millicores, memory in bytes, pods as a count. */
  allocatable: { milliCPU: number; memory: number; pods: number };
}

/** Upstream computePodResourceRequest: max(sum of app containers, largest init container) + overhead. */
export function podRequests(pod: Pod): { milliCPU: number; memory: number } {
  const sum = { milliCPU: 0, memory: 0 };
  const req = (c: { resources?: { requests?: Record<string, string> } }) => ({
    milliCPU:
      c.resources?.requests?.cpu !== undefined
        ? milliCPU(c.resources.requests.cpu, 'resources.requests.cpu')
        : 0,
    memory:
      c.resources?.requests?.memory !== undefined
        ? parseQuantity(c.resources.requests.memory, 'resources.requests.memory')
        : 0,
  });
  for (const c of pod.spec.containers) {
    const r = req(c);
    sum.milliCPU += r.milliCPU;
    sum.memory += r.memory;
  }
  for (const c of pod.spec.initContainers ?? []) {
    const r = req(c);
    sum.milliCPU = Math.max(sum.milliCPU, r.milliCPU);
    sum.memory = Math.max(sum.memory, r.memory);
  }
  if (pod.spec.overhead) {
    if (pod.spec.overhead.cpu) sum.milliCPU += milliCPU(pod.spec.overhead.cpu, 'spec.overhead.cpu');
    if (pod.spec.overhead.memory)
      sum.memory += parseQuantity(pod.spec.overhead.memory, 'spec.overhead.memory');
  }
  return sum;
}

function insufficient(resource: string, requested: number, used: number, capacity: number): AdmitResult {
  return {
    admit: false,
    reason: `OutOf${resource}`,
    message: `Node didn't have enough resource: ${resource}, requested: ${Math.round(requested)}, used: ${Math.round(used)}, capacity: ${Math.round(capacity)}`,
  };
}

/**
 * Upstream GeneralPredicates as the kubelet runs them at admission: resources (pods, cpu, memory
 * requests against allocatable), node name, host ports, node selector / required node affinity.
 */
export function generalPredicatesAdmitHandler(node: () => NodeView): PodAdmitHandler {
  return {
    name: 'GeneralPredicates',
    admit(pod, activePods) {
      const n = node();
      if (activePods.length + 1 > n.allocatable.pods) {
        return insufficient('pods', 1, activePods.length, n.allocatable.pods);
      }
      const want = podRequests(pod);
      const used = { milliCPU: 0, memory: 0 };
      for (const p of activePods) {
        const r = podRequests(p);
        used.milliCPU += r.milliCPU;
        used.memory += r.memory;
      }
      if (want.milliCPU > 0 && used.milliCPU + want.milliCPU > n.allocatable.milliCPU) {
        return insufficient('cpu', want.milliCPU, used.milliCPU, n.allocatable.milliCPU);
      }
      if (want.memory > 0 && used.memory + want.memory > n.allocatable.memory) {
        return insufficient('memory', want.memory, used.memory, n.allocatable.memory);
      }
      if (pod.spec.nodeName && pod.spec.nodeName !== n.name) {
        return { admit: false, reason: 'NodeName', message: 'Predicate NodeName failed' };
      }
      if (hostPortConflict(pod, activePods)) {
        return { admit: false, reason: 'NodePorts', message: 'Predicate NodePorts failed' };
      }
      if (!matchesNodeSelector(pod, n.labels)) {
        return { admit: false, reason: 'NodeAffinity', message: 'Predicate NodeAffinity failed' };
      }
      return { admit: true };
    },
  };
}

function hostPorts(pod: Pod): string[] {
  const out: string[] = [];
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    for (const p of c.ports ?? []) {
      if (p.hostPort) out.push(`${p.protocol ?? 'TCP'}/${p.hostIP ?? '0.0.0.0'}/${p.hostPort}`);
    }
  }
  return out;
}

/** Two pods may not claim the same host port/protocol on overlapping addresses (0.0.0.0 overlaps all). */
function hostPortConflict(pod: Pod, activePods: readonly Pod[]): boolean {
  const mine = hostPorts(pod);
  if (mine.length === 0) return false;
  const taken = activePods.flatMap(hostPorts);
  return mine.some((m) => {
    const [proto, ip, port] = m.split('/');
    return taken.some((t) => {
      const [tp, tip, tport] = t.split('/');
      return tp === proto && tport === port && (ip === tip || ip === '0.0.0.0' || tip === '0.0.0.0');
    });
  });
}

/** spec.nodeSelector, and requiredDuringSchedulingIgnoredDuringExecution node affinity terms (ORed). */
export function matchesNodeSelector(pod: Pod, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(pod.spec.nodeSelector ?? {})) if (labels[k] !== v) return false;
  const terms =
    pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  return terms.some((t) => (t.matchExpressions ?? []).every((r) => requirementMatches(r, labels)));
}
