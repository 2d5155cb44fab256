import { createHash } from 'node:crypto';

/** JSON with object keys sorted, so equal values always serialize the same way. */
export function canonicalJSON(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const sorted: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
      return sorted;
    }
    return v;
  });
}

/**
 * The container hash written to the `io.kubernetes.container.hash` annotation (upstream HashContainer:
 * a short hash of the container spec). A running container whose hash differs from its spec is
 * restarted; that is how an in-place image update reaches the runtime.
 */
export function hashContainer(container: object): string {
  return createHash('sha256').update(canonicalJSON(container)).digest('hex').slice(0, 8);
}
