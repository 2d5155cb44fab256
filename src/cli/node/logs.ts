/**
 * `tskubelet logs NAME [-c C] [-f] [--tail N] [--previous] [--timestamps]`: the container's log
 * from the kubelet API (`/containerLogs/{ns}/{pod}/{container}`), streamed to stdout; with -f it
 * follows until the container stops or the user interrupts. On a terminal the log's control
 * characters and escape sequences are shown escaped (terminal-text.ts), so a container cannot drive
 * the user's terminal; piped or redirected, the bytes are written as they are, as kubectl writes
 * them (`tskubelet logs POD | cat` shows a log's colours).
 */
import { pipeline } from 'node:stream/promises';
import { chooseContainer, getPod, namespaceOf, type GlobalOptions, type NodeClient } from './common.ts';
import type { CommandIO } from './get-pods.ts';
import { escapeTerminal, terminalEscaper } from './terminal-text.ts';

export interface LogsOptions extends GlobalOptions {
  container?: string;
  follow?: boolean;
  tail?: number;
  previous?: boolean;
  timestamps?: boolean;
}

/** The kubelet API path of a log request. */
export function logsPath(namespace: string, pod: string, container: string, opts: LogsOptions): string {
  const q = new URLSearchParams();
  if (opts.follow) q.set('follow', 'true');
  if (opts.tail !== undefined && opts.tail >= 0) q.set('tailLines', String(opts.tail));
  if (opts.previous) q.set('previous', 'true');
  if (opts.timestamps) q.set('timestamps', 'true');
  const e = encodeURIComponent;
  const query = q.toString();
  return `/containerLogs/${e(namespace)}/${e(pod)}/${e(container)}${query ? `?${query}` : ''}`;
}

export async function runLogs(
  client: NodeClient,
  name: string,
  opts: LogsOptions,
  io: CommandIO,
): Promise<number> {
  const ns = namespaceOf(opts);
  const pod = await getPod(client, ns, name, io.signal);
  const container = chooseContainer(pod, opts.container, (l) => io.err.write(`${escapeTerminal(l)}\n`));
  const res = await client.getStream(logsPath(ns, name, container, opts), io.signal);
  try {
    if (io.outIsTerminal) await pipeline(res, terminalEscaper(), io.out, { end: false, signal: io.signal });
    else await pipeline(res, io.out, { end: false, signal: io.signal });
  } catch (err) {
    if (io.signal.aborted) return 0; // Ctrl-C during -f
    throw err;
  }
  return 0;
}
