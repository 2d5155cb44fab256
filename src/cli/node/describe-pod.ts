/** `tskubelet describe pod NAME [-n NS]`: the pod from `/pods` in kubectl describe's layout. */
import { getPod, namespaceOf, type GlobalOptions, type NodeClient } from './common.ts';
import { describePod } from './describe-printer.ts';
import type { CommandIO } from './get-pods.ts';

export async function runDescribePod(
  client: NodeClient,
  name: string,
  opts: GlobalOptions,
  io: CommandIO,
): Promise<number> {
  const pod = await getPod(client, namespaceOf(opts), name, io.signal);
  io.out.write(describePod(pod, io.now()));
  return 0;
}
