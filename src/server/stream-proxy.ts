/**
 * exec / attach / port-forward: the runtime prepared a session on its own streaming server (CRI
 * Exec/Attach/PortForward return its URL); the client's upgrade request (SPDY/3.1 or WebSocket) is
 * replayed to that URL and the two connections are spliced byte for byte (upstream's
 * UpgradeAwareHandler with upgradeRequired). The kubelet never parses the stream protocol.
 *
 * Both sockets are destroyed together: when either side closes or errors, when the connection to
 * the runtime fails, or after `idleTimeoutMs` without traffic (streamingConnectionIdleTimeout).
 */
import type { IncomingMessage } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { WEBSOCKET_TOKEN_PROTOCOL_PREFIX } from './auth/authenticator.ts';
import { rejectUpgrade } from './http-util.ts';

/** Request headers not passed on to the runtime (hop-by-hop ones are rewritten; credentials stay here). */
const DROPPED_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'authorization',
  'proxy-authorization',
  'cookie',
  'content-length',
  'transfer-encoding',
  'x-remote-user',
  'x-remote-group',
]);
const CONNECT_TIMEOUT_MS = 10_000;
/** How long the surviving side may take to flush after the other side closed. */
const DRAIN_TIMEOUT_MS = 10_000;

export interface ProxyOptions {
  idleTimeoutMs: number;
  logger: Logger;
  /** Called once when both sockets are closed (for in-flight accounting). */
  onClose?: () => void;
}

export function proxyUpgrade(
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
  target: URL,
  opts: ProxyOptions,
): void {
  const port = Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
  const upstream: Socket =
    target.protocol === 'https:'
      ? // The runtime's streaming server on loopback presents a self-signed certificate.
        tlsConnect({ host: target.hostname, port, rejectUnauthorized: false, servername: target.hostname })
      : netConnect({ host: target.hostname, port });
  let closed = false;
  let connected = false;
  let drainTimer: NodeJS.Timeout | undefined;
  /** Tears both sockets down at once: errors, timeouts, a failed connect. */
  const close = (why: string, err?: unknown): void => {
    if (closed) return;
    closed = true;
    clearTimeout(connectTimer);
    clearTimeout(drainTimer);
    if (err !== undefined) opts.logger.debug('stream proxy closed', { why, err: describeError(err) });
    if (!connected && !client.destroyed) {
      rejectUpgrade(client, 502, `cannot reach the container runtime's streaming server: ${why}`);
    } else {
      client.destroy();
    }
    upstream.destroy();
    opts.onClose?.();
  };
  /**
   * One side closed: the pipe ends the other side, which still has to flush what it was given
   * (the last output and the exit status of an exec); it is destroyed only if that takes too long.
   */
  const sideClosed = (): void => {
    if (closed) return;
    if (client.destroyed && upstream.destroyed) {
      close('closed');
      return;
    }
    drainTimer ??= setTimeout(() => close('drain timeout'), DRAIN_TIMEOUT_MS);
  };
  const connectTimer = setTimeout(() => close('connect timeout'), CONNECT_TIMEOUT_MS);

  upstream.once(target.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
    clearTimeout(connectTimer);
    connected = true;
    const lines = [
      `${req.method ?? 'GET'} ${target.pathname}${target.search} HTTP/1.1`,
      `Host: ${target.host}`,
    ];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i] ?? '';
      const lower = name.toLowerCase();
      if (DROPPED_HEADERS.has(lower)) continue;
      let value = req.rawHeaders[i + 1] ?? '';
      if (lower === 'sec-websocket-protocol') {
        // The bearer token subprotocol was for us; the runtime gets the stream protocols only.
        value = value
          .split(',')
          .map((p) => p.trim())
          .filter((p) => !p.startsWith(WEBSOCKET_TOKEN_PROTOCOL_PREFIX))
          .join(', ');
        if (value === '') continue;
      }
      lines.push(`${name}: ${value}`);
    }
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  for (const s of [client, upstream]) {
    // Upgrade sockets are net/tls sockets; a bare Duplex (tests) has no idle timer.
    (s as Partial<Socket>).setTimeout?.(opts.idleTimeoutMs);
    s.on('timeout', () => close('idle timeout'));
    s.on('error', (err) => close('socket error', err));
    s.on('close', sideClosed);
  }
}
