/**
 * `tskubelet logs NAME [-c C | --all-containers] [-f] [--tail N] [--since D | --since-time T]
 * [--limit-bytes N] [--previous] [--timestamps]`: the container's log
 * from the kubelet API (`/containerLogs/{ns}/{pod}/{container}`), streamed to stdout; with -f it
 * follows until the container stops or the user interrupts. On a terminal the log's control
 * characters and escape sequences are shown escaped (terminal-text.ts), so a container cannot drive
 * the user's terminal; piped or redirected, the bytes are written as they are, as kubectl writes
 * them (`tskubelet logs POD | cat` shows a log's colours). `--since` is a Go duration sent as
 * `sinceSeconds` rounded up, as kubectl does (kubectl/pkg/cmd/logs/logs.go); `--all-containers`
 * prints the init containers, then the app containers, one after the other, or all at once with
 * `-f` (kubectl's parallel follow; no prefix, as kubectl without `--prefix`).
 */
import { pipeline } from 'node:stream/promises';
import { tryParseGoDuration } from '../../config/duration.ts';
import { chooseContainer, getPod, namespaceOf, type GlobalOptions, type NodeClient } from './common.ts';
import type { CommandIO } from './get-pods.ts';
import { escapeTerminal, terminalEscaper } from './terminal-text.ts';

export interface LogsOptions extends GlobalOptions {
  container?: string;
  follow?: boolean;
  tail?: number;
  previous?: boolean;
  timestamps?: boolean;
  /** A Go duration (`5s`, `2h`); sent as sinceSeconds. */
  since?: string;
  /** RFC 3339; sent as sinceTime. */
  sinceTime?: string;
  limitBytes?: number;
  allContainers?: boolean;
}

/** Checks the flags as kubectl's LogsOptions.Validate does; throws its message. */
export function validateLogsOptions(opts: LogsOptions): void {
  if (opts.since !== undefined && opts.sinceTime !== undefined) {
    throw new Error('at most one of `sinceTime` or `sinceSeconds` may be specified');
  }
  if (opts.since !== undefined) {
    const d = tryParseGoDuration(opts.since);
    if (!d.ok) throw new Error(`invalid argument "${opts.since}" for "--since" flag: ${d.reason}`);
    if (d.ms <= 0) throw new Error('--since must be greater than 0');
  }
  if (opts.sinceTime !== undefined && Number.isNaN(Date.parse(opts.sinceTime))) {
    throw new Error(`invalid argument "${opts.sinceTime}" for "--since-time" flag: not an RFC 3339 time`);
  }
  if (opts.limitBytes !== undefined && opts.limitBytes < 0)
    throw new Error('--limit-bytes must be greater than 0');
  if (opts.tail !== undefined && opts.tail < -1)
    throw new Error('--tail must be greater than or equal to -1');
  if (opts.allContainers && opts.container)
    throw new Error('--all-containers=true should not be specified with container name');
}

/** The kubelet API path of a log request. */
export function logsPath(namespace: string, pod: string, container: string, opts: LogsOptions): string {
  const q = new URLSearchParams();
  if (opts.follow) q.set('follow', 'true');
  if (opts.tail !== undefined && opts.tail >= 0) q.set('tailLines', String(opts.tail));
  if (opts.previous) q.set('previous', 'true');
  if (opts.timestamps) q.set('timestamps', 'true');
  if (opts.since !== undefined) {
    const d = tryParseGoDuration(opts.since);
    if (d.ok) q.set('sinceSeconds', String(Math.ceil(d.ms / 1000)));
  }
  if (opts.sinceTime !== undefined)
    q.set('sinceTime', new Date(Date.parse(opts.sinceTime)).toISOString().replace(/\.000Z$/, 'Z'));
  if (opts.limitBytes !== undefined && opts.limitBytes > 0) q.set('limitBytes', String(opts.limitBytes));
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
  validateLogsOptions(opts);
  const ns = namespaceOf(opts);
  const pod = await getPod(client, ns, name, io.signal);
  const containers = opts.allContainers
    ? [...(pod.spec.initContainers ?? []), ...(pod.spec.containers ?? [])].map((c) => c.name)
    : [chooseContainer(pod, opts.container, (l) => io.err.write(`${escapeTerminal(l)}\n`))];
  const copy = async (container: string): Promise<void> => {
    const res = await client.getStream(logsPath(ns, name, container, opts), io.signal);
    if (io.outIsTerminal) await pipeline(res, terminalEscaper(), io.out, { end: false, signal: io.signal });
    else await pipeline(res, io.out, { end: false, signal: io.signal });
  };
  try {
    if (opts.follow && containers.length > 1) await Promise.all(containers.map(copy));
    else for (const c of containers) await copy(c);
  } catch (err) {
    if (io.signal.aborted) return 0; // Ctrl-C during -f
    throw err;
  }
  return 0;
}
