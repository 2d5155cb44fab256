/**
 * A spawned tskubelet's pods as its root-only local socket serves them (`/pods`, the node CLI's
 * transport, src/cli/node/client.ts): for suites that run the kubelet as a process without an API
 * server. No upstream counterpart (upstream's tests read the read-only port or the API server).
 */
import type { PodList } from '../../src/api/types.ts';
import { connectNode } from '../../src/cli/node/client.ts';
import { untilAlive, type AliveUntilOptions } from './poll.ts';

type LocalPod = PodList['items'][number];

/** The pods the kubelet on `socket` runs; undefined while it does not answer (not listening yet). */
export async function localPods(socket: string): Promise<PodList | undefined> {
  try {
    const client = await connectNode({ socket });
    return await client.getJSON<PodList>('/pods', AbortSignal.timeout(2_000));
  } catch {
    return undefined; // not listening yet, or busy starting: the caller polls again
  }
}

/**
 * Polls ({@link untilAlive}: every 100 ms unless told) the kubelet on `socket` until its pod `name`
 * is in `phase`, and returns that pod.
 */
export function untilLocalPodPhase(
  socket: string,
  name: string,
  phase: string,
  opts: AliveUntilOptions = {},
): Promise<LocalPod> {
  return untilAlive(
    `pod ${name} ${phase} (via ${socket})`,
    async () => {
      const pod = (await localPods(socket))?.items.find((p) => p.metadata.name === name);
      return pod?.status?.phase === phase ? pod : undefined;
    },
    opts,
  );
}
