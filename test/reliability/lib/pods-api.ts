/** The kubelet's own view of its pods, from its read-only port (`GET /pods`), for a standalone node. */
import type { Pod } from '../../../src/api/types.ts';

/** Names (`namespace/name`) of pods whose every container the kubelet reports running and ready. */
export async function readyPods(port: number, signal?: AbortSignal): Promise<Set<string>> {
  const res = await fetch(`http://127.0.0.1:${port}/pods`, { signal: signal ?? AbortSignal.timeout(5_000) });
  if (!res.ok) throw new Error(`GET /pods: HTTP ${res.status}`);
  const list = (await res.json()) as { items?: Pod[] };
  const out = new Set<string>();
  for (const p of list.items ?? []) {
    const cs = p.status?.containerStatuses ?? [];
    if (cs.length > 0 && cs.every((c) => c.ready && c.state?.running)) {
      out.add(`${p.metadata.namespace ?? 'default'}/${p.metadata.name}`);
    }
  }
  return out;
}
