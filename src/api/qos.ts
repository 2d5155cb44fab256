import type { Container, Pod } from './types.ts';
import { parseQuantity } from './quantity.ts';

export type QOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const COMPUTE = ['cpu', 'memory'];

/** Upstream qos.GetPodQOS over init and app containers (cpu and memory only). */
export function podQOSClass(pod: Pod): QOSClass {
  const containers: Container[] = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  const requests = new Map<string, number>();
  const limits = new Map<string, number>();
  let isGuaranteed = true;
  for (const c of containers) {
    for (const [name, q] of Object.entries(c.resources?.requests ?? {})) {
      if (!COMPUTE.includes(name)) continue;
      const v = parseQuantity(q, `resources.requests.${name}`);
      if (v > 0) requests.set(name, (requests.get(name) ?? 0) + v);
    }
    const found = new Set<string>();
    for (const [name, q] of Object.entries(c.resources?.limits ?? {})) {
      if (!COMPUTE.includes(name)) continue;
      const v = parseQuantity(q, `resources.limits.${name}`);
      if (v > 0) {
        found.add(name);
        limits.set(name, (limits.get(name) ?? 0) + v);
      }
    }
    if (found.size < COMPUTE.length) isGuaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (isGuaranteed) {
    for (const [name, req] of requests) {
      if (limits.get(name) !== req) {
        isGuaranteed = false;
        break;
      }
    }
  }
  return isGuaranteed && limits.size === COMPUTE.length ? 'Guaranteed' : 'Burstable';
}
