import type { Pod } from '../../api/types.ts';
import type { RuntimeService } from '../cri/index.ts';

/**
 * The pod IP a lifecycle hook's httpGet goes to (upstream: the runtime's pod status IP), asked only
 * when a hook needs it.
 */
export function hookPodIP(
  runtime: RuntimeService,
  pod: Pod | undefined,
  sandboxId: string,
  signal?: AbortSignal,
): () => Promise<string | undefined> {
  return async () => {
    const sb = await runtime.podSandboxStatus(sandboxId, { signal });
    const ip = sb.network?.ip ?? '';
    if (ip !== '') return ip;
    // Host-network sandboxes have no IP of their own (upstream fails such hooks, kubernetes#134285).
    if (pod?.spec.hostNetwork) return pod.status?.podIP ?? pod.status?.hostIP;
    return undefined;
  };
}
