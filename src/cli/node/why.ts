/** `tskubelet why NAME [-n NS] [-o json]`: why the pod is (not) running, with the evidence. */
import { getDebugDocument, namespaceOf, type GlobalOptions, type NodeClient } from './common.ts';
import { formatWhy, type PodWhy } from './debug-printers.ts';
import type { CommandIO } from './get-pods.ts';
import { jsonForTerminal } from './terminal-text.ts';

export async function runWhy(
  client: NodeClient,
  name: string,
  opts: GlobalOptions & { output?: string },
  io: CommandIO,
): Promise<number> {
  const doc = await getDebugDocument<PodWhy>(client, namespaceOf(opts), name, 'why', io.signal);
  io.out.write(opts.output === 'json' ? `${jsonForTerminal(doc, 4)}\n` : formatWhy(doc));
  return 0;
}
