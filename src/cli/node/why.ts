/** `tskubelet why NAME [-n NS] [-o json]`: why the pod is (not) running, with the evidence. */
import { getDebugDocument, namespaceOf, type GlobalOptions, type NodeClient } from './common.ts';
import { formatWhy, type PodWhy } from './debug-printers.ts';
import type { CommandIO } from './get-pods.ts';

export async function runWhy(
  client: NodeClient,
  name: string,
  opts: GlobalOptions & { output?: string },
  io: CommandIO,
): Promise<number> {
  const doc = await getDebugDocument<PodWhy>(client, namespaceOf(opts), name, 'why', io.signal);
  io.out.write(opts.output === 'json' ? `${JSON.stringify(doc, null, 4)}\n` : formatWhy(doc));
  return 0;
}
