/**
 * `tskubelet exec NAME [-c C] [-i] [-t] -- CMD…`: runs a command in a container through the
 * kubelet API's exec (WebSocket, exec-client.ts). With -t the local terminal is put in raw mode and
 * always restored (normal end, error, signal); its size is sent at the start and on every resize.
 * The remote command's exit code becomes this process's.
 */
import type { Readable } from 'node:stream';
import { chooseContainer, getPod, namespaceOf, type GlobalOptions, type NodeClient } from './common.ts';
import { execOnNode, type ExecIO } from './exec-client.ts';
import type { CommandIO } from './get-pods.ts';
import { escapeTerminal } from './terminal-text.ts';

export interface ExecOptions extends GlobalOptions {
  container?: string;
  stdin?: boolean;
  tty?: boolean;
}

/** A terminal-capable input: process.stdin when it is a TTY. */
export interface TerminalInput extends Readable {
  isTTY?: boolean;
  setRawMode?: (mode: boolean) => unknown;
}

export interface ExecTerminal {
  stdin: TerminalInput;
  /** process.stdout's size and resize events, when it is a terminal. */
  columns?: () => number | undefined;
  rows?: () => number | undefined;
  onResize?: (listener: () => void) => () => void;
}

export async function runExec(
  client: NodeClient,
  name: string,
  command: readonly string[],
  opts: ExecOptions,
  io: CommandIO,
  term: ExecTerminal,
): Promise<number> {
  if (command.length === 0)
    throw new Error('you must specify at least one command for the container (after --)');
  const ns = namespaceOf(opts);
  const pod = await getPod(client, ns, name, io.signal);
  const container = chooseContainer(pod, opts.container, (l) => io.err.write(`${escapeTerminal(l)}\n`));
  let tty = opts.tty === true;
  if (tty && !(opts.stdin && term.stdin.isTTY && term.stdin.setRawMode)) {
    io.err.write('Unable to use a TTY - input is not a terminal or the right kind of file\n');
    tty = false;
  }
  const streams: ExecIO = {
    stdout: io.out,
    stderr: io.err,
    ...(opts.stdin ? { stdin: term.stdin } : {}),
    ...(tty && term.columns && term.rows
      ? {
          size: () => ({ width: term.columns?.() ?? 80, height: term.rows?.() ?? 24 }),
          ...(term.onResize ? { onResize: term.onResize } : {}),
        }
      : {}),
  };
  let raw = false;
  const restore = (): void => {
    if (raw) term.stdin.setRawMode?.(false);
    raw = false;
  };
  process.once('exit', restore);
  try {
    if (tty) {
      term.stdin.setRawMode?.(true);
      raw = true;
    }
    const outcome = await execOnNode(
      client,
      { namespace: ns, pod: name, container, command, stdin: opts.stdin === true, tty },
      streams,
      io.signal,
    );
    if ('error' in outcome) throw new Error(outcome.error);
    return outcome.exitCode;
  } finally {
    restore();
    process.off('exit', restore);
    // Nothing more is read: let the process end even though stdin is a terminal or an open pipe.
    if (opts.stdin) term.stdin.pause();
  }
}
