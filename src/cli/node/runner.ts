/**
 * Runs one node command: connects, wires stdout/stderr and Ctrl-C (an AbortSignal), and turns any
 * failure into one `error: …` line on stderr and a non-zero exit code (1; 130 when interrupted).
 */
import { connectNode, type ConnectionOptions, type NodeClient } from './client.ts';
import type { CommandIO } from './get-pods.ts';
import { escapeTerminal } from './terminal-text.ts';

export async function runNodeCommand(
  opts: ConnectionOptions,
  body: (client: NodeClient, io: CommandIO) => Promise<number>,
): Promise<number> {
  const ac = new AbortController();
  const onSignal = (): void => ac.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // A reader that went away (`| head`) ends the output quietly, as kubectl does.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') ac.abort(err);
  });
  try {
    const client = await connectNode(opts);
    return await body(client, {
      out: process.stdout,
      outIsTerminal: process.stdout.isTTY === true,
      err: process.stderr,
      signal: ac.signal,
      now: Date.now,
    });
  } catch (err) {
    if (ac.signal.aborted) return 130;
    // The message may quote the kubelet's answer (pod names, a container's words).
    const message = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
    process.stderr.write(`error: ${escapeTerminal(message)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
