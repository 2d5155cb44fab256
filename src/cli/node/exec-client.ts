/**
 * The client of the Kubernetes remotecommand protocol over WebSocket (what the kubelet proxies to
 * the runtime's streaming server): subprotocols `v5.channel.k8s.io` (stdin can be closed),
 * `v4.channel.k8s.io` (the error channel carries a JSON Status with the exit code) and
 * `channel.k8s.io`. Each binary message starts with its channel: 0 stdin, 1 stdout, 2 stderr,
 * 3 error, 4 resize (`{"Width","Height"}`); v5 adds 255 (close a channel).
 */
import type { Duplex, Readable, Writable } from 'node:stream';
import type { NodeClient } from './client.ts';
import {
  FrameParser,
  OP_BINARY,
  OP_CLOSE,
  OP_PING,
  OP_PONG,
  OP_TEXT,
  acceptFor,
  sendFrame,
  websocketKey,
} from './websocket.ts';

export const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'channel.k8s.io'] as const;
export type ExecProtocol = (typeof EXEC_PROTOCOLS)[number];

export const STDIN = 0;
export const STDOUT = 1;
export const STDERR = 2;
export const ERROR = 3;
export const RESIZE = 4;
export const CLOSE = 255;

export interface ExecRequest {
  namespace: string;
  pod: string;
  container: string;
  command: readonly string[];
  stdin: boolean;
  tty: boolean;
}

/** The kubelet API path of an exec (upstream's query: one `command` per argument). */
export function execPath(r: ExecRequest): string {
  const q = new URLSearchParams();
  for (const c of r.command) q.append('command', c);
  if (r.stdin) q.set('input', '1');
  q.set('output', '1');
  if (!r.tty) q.set('error', '1');
  if (r.tty) q.set('tty', '1');
  const e = encodeURIComponent;
  return `/exec/${e(r.namespace)}/${e(r.pod)}/${e(r.container)}?${q.toString()}`;
}

/** What the error channel said: the remote command's exit code, or a failure to report. */
export type ExecOutcome = { exitCode: number } | { error: string };

/**
 * Reads the error channel's content: for v4/v5 a metav1.Status (`Success`, or `NonZeroExitCode`
 * with an `ExitCode` cause), for the first protocol plain text. Empty: the command succeeded.
 */
export function execOutcome(protocol: ExecProtocol, text: string): ExecOutcome {
  const t = text.trim();
  if (t === '') return { exitCode: 0 };
  if (protocol === 'channel.k8s.io') {
    const m = /exit code (\d+)/i.exec(t);
    return m?.[1] ? { exitCode: Number(m[1]) } : { error: t };
  }
  let status: {
    status?: string;
    reason?: string;
    message?: string;
    details?: { causes?: { reason?: string; message?: string }[] };
  };
  try {
    status = JSON.parse(t) as typeof status;
  } catch {
    return { error: t };
  }
  if (status.status === 'Success') return { exitCode: 0 };
  if (status.reason === 'NonZeroExitCode') {
    const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
    const code = Number(cause?.message);
    if (Number.isInteger(code)) return { exitCode: code };
  }
  return { error: status.message || t };
}

/** One channel message: the channel byte, then the data. */
export function channelMessage(channel: number, data: Buffer | string): Buffer {
  const d = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  return Buffer.concat([Buffer.from([channel]), d]);
}

export interface ExecIO {
  stdin?: Readable;
  stdout: Writable;
  stderr: Writable;
  /** The terminal size now, and a subscription to its changes (tty sessions). */
  size?: () => { width: number; height: number };
  onResize?: (listener: () => void) => () => void;
}

/**
 * Runs the session on an upgraded socket until the server closes it; resolves with what the
 * error channel said. `signal` aborts it (the socket is destroyed).
 */
export function runChannelSession(
  socket: Duplex,
  head: Buffer,
  protocol: ExecProtocol,
  io: ExecIO,
  signal: AbortSignal,
): Promise<ExecOutcome> {
  return new Promise((resolve, reject) => {
    const parser = new FrameParser();
    let errorText = '';
    let closeSent = false;
    let failed: Error | undefined;
    const send = (channel: number, data: Buffer | string) =>
      sendFrame(socket, OP_BINARY, channelMessage(channel, data));

    /** A local output that cannot keep up stops the reading of the socket until it drains (bounded memory). */
    const backpressure = (w: Writable): void => {
      socket.pause();
      w.once('drain', () => socket.resume());
    };
    const onMessages = (chunk: Buffer): void => {
      let messages;
      try {
        messages = parser.push(chunk);
      } catch (err) {
        failed = err instanceof Error ? err : new Error(String(err));
        socket.destroy();
        return;
      }
      for (const m of messages) {
        if (m.opcode === OP_PING) sendFrame(socket, OP_PONG, m.data);
        else if (m.opcode === OP_CLOSE) {
          if (!closeSent) sendFrame(socket, OP_CLOSE, m.data.subarray(0, 2));
          closeSent = true;
          socket.end();
        } else if ((m.opcode === OP_BINARY || m.opcode === OP_TEXT) && m.data.length > 1) {
          const payload = m.data.subarray(1);
          switch (m.data[0]) {
            case STDOUT:
              if (!io.stdout.write(payload)) backpressure(io.stdout);
              break;
            case STDERR:
              if (!io.stderr.write(payload)) backpressure(io.stderr);
              break;
            case ERROR:
              errorText += payload.toString('utf8');
              break;
            default:
              break; // channel opened (empty) or unknown: nothing to do
          }
        }
      }
    };

    const sendSize = (): void => {
      if (!io.size) return;
      const { width, height } = io.size();
      send(RESIZE, JSON.stringify({ Width: width, Height: height }));
    };
    const unsubscribe = io.onResize?.(sendSize);
    sendSize();

    const onStdin = (chunk: Buffer | string): void => {
      if (
        !send(STDIN, typeof chunk === 'string' ? Buffer.from(chunk) : chunk) &&
        io.stdin &&
        !socket.destroyed
      ) {
        // The connection cannot take more: read no more input until it drains.
        const input = io.stdin;
        input.pause();
        socket.once('drain', () => input.resume());
      }
    };
    const onStdinEnd = (): void => {
      // Only v5 can tell the command its stdin is done; older protocols keep it open.
      if (protocol === 'v5.channel.k8s.io') send(CLOSE, Buffer.from([STDIN]));
    };
    if (io.stdin) {
      io.stdin.on('data', onStdin);
      io.stdin.once('end', onStdinEnd);
    }
    const onAbort = () => socket.destroy();
    signal.addEventListener('abort', onAbort, { once: true });

    socket.on('data', onMessages);
    socket.on('error', (err) => {
      failed ??= err;
    });
    socket.once('close', () => {
      unsubscribe?.();
      signal.removeEventListener('abort', onAbort);
      if (io.stdin) {
        io.stdin.off('data', onStdin);
        io.stdin.off('end', onStdinEnd);
      }
      if (signal.aborted) reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      else if (failed && errorText === '') reject(failed);
      else resolve(execOutcome(protocol, errorText));
    });
    if (head.length > 0) onMessages(head);
  });
}

/** Opens the exec on the kubelet and runs it to the end. */
export async function execOnNode(
  client: NodeClient,
  r: ExecRequest,
  io: ExecIO,
  signal: AbortSignal,
): Promise<ExecOutcome> {
  const key = websocketKey();
  const up = await client.upgrade(
    execPath(r),
    {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': key,
      'sec-websocket-protocol': EXEC_PROTOCOLS.join(', '),
    },
    signal,
  );
  const accept = up.response.headers['sec-websocket-accept'];
  if (accept !== acceptFor(key)) {
    up.socket.destroy();
    throw new Error('the streaming server answered the upgrade without a valid Sec-WebSocket-Accept');
  }
  const chosen = up.response.headers['sec-websocket-protocol'] ?? 'channel.k8s.io';
  const protocol = EXEC_PROTOCOLS.find((p) => p === chosen);
  if (!protocol) {
    up.socket.destroy();
    throw new Error(`the streaming server chose an unknown subprotocol ${JSON.stringify(chosen)}`);
  }
  const outcome = await runChannelSession(up.socket, up.head, protocol, io, signal);
  if (!up.socket.destroyed) up.socket.destroy();
  return outcome;
}
