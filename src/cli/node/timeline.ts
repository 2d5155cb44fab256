/** `tskubelet timeline NAME [-n NS] [-o json]`: the pod's startup/termination timeline as a table. */
import { getDebugDocument, namespaceOf, type GlobalOptions, type NodeClient } from './common.ts';
import { formatTimeline, type PodTimeline } from './debug-printers.ts';
import type { CommandIO } from './get-pods.ts';
import { jsonForTerminal } from './terminal-text.ts';

export async function runTimeline(
  client: NodeClient,
  name: string,
  opts: GlobalOptions & { output?: string },
  io: CommandIO,
): Promise<number> {
  const doc = await getDebugDocument<PodTimeline>(client, namespaceOf(opts), name, 'timeline', io.signal);
  io.out.write(opts.output === 'json' ? `${jsonForTerminal(doc, 4)}\n` : formatTimeline(doc));
  return 0;
}
