/**
 * `tskubelet describe pod NAME [-n NS]`: the pod from `/pods` in kubectl describe's layout, with the
 * kubelet's recent events about it (`/debug/pods/{ns}/{name}/events`, on the local socket only).
 */
import { NodeApiError } from './client.ts';
import { getPod, namespaceOf, type GlobalOptions, type NodeClient } from './common.ts';
import { describePod, type DescribeEvent } from './describe-printer.ts';
import type { CommandIO } from './get-pods.ts';

/** The pod's events; undefined when the kubelet does not serve them (HTTPS, an older tskubelet). */
async function podEvents(
  client: NodeClient,
  namespace: string,
  name: string,
  signal: AbortSignal,
): Promise<DescribeEvent[] | undefined> {
  const e = encodeURIComponent;
  try {
    const doc = await client.getJSON<{ events?: DescribeEvent[] }>(
      `/debug/pods/${e(namespace)}/${e(name)}/events`,
      signal,
    );
    return doc.events ?? [];
  } catch (err) {
    // Not served there: describe still prints the pod, and says where the events are.
    if (err instanceof NodeApiError && err.status === 404) return undefined;
    throw err;
  }
}

export async function runDescribePod(
  client: NodeClient,
  name: string,
  opts: GlobalOptions,
  io: CommandIO,
): Promise<number> {
  const ns = namespaceOf(opts);
  const pod = await getPod(client, ns, name, io.signal);
  const events = await podEvents(client, ns, name, io.signal);
  io.out.write(describePod(pod, io.now(), events));
  return 0;
}
