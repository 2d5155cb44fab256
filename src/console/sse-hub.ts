/**
 * Server-sent event streams (text/event-stream) to a bounded number of clients. What a client has
 * not read yet stays in its response's buffers; once that passes a bound the client is dropped (its
 * connection destroyed), never buffered without end: a browser tab that stalls costs at most the
 * bound. A comment line every `heartbeatMs` keeps proxies from timing an idle stream out and finds
 * dead peers. `close()` ends every stream (kubelet shutdown) and refuses new ones. Slots are shared
 * by everyone up to `maxClients`, and each user holds at most `maxClientsPerUser` of them, so one
 * user cannot take them all. No upstream counterpart (the kubelet serves no event streams).
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../util/logger.ts';

/** One event of the stream: its name and a JSON payload. */
export interface SseMessage {
  readonly event: string;
  readonly data: unknown;
}

/** What the hub needs of an HTTP response (ServerResponse satisfies it; tests pass fakes). */
export interface SseSink {
  writeHead(status: number, headers: Record<string, string>): unknown;
  write(chunk: string): boolean;
  end(chunk?: string): unknown;
  destroy(): unknown;
  /** Bytes written but not yet handed to the kernel (ServerResponse: its own + its socket's). */
  readonly writableLength: number;
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
}

export interface SseHubOptions {
  /** Streams open at once; one more is answered 503. */
  maxClients: number;
  /** Streams one user may hold at once; one more is answered 429. Default: `maxClients`. */
  maxClientsPerUser?: number;
  /** A client whose unsent bytes pass this is dropped. */
  maxBufferedBytes: number;
  heartbeatMs: number;
  logger: Logger;
  /** The first client arrived (start producing changes). */
  onActive?: () => void;
  /** The last client left (stop producing: nobody looks). */
  onIdle?: () => void;
}

/**
 * 503: no slot (all taken, or the hub is closed); 429: this user holds their share. Nothing is
 * written on a refusal: the caller answers it.
 */
export type OpenResult = { ok: true } | { ok: false; status: 503 | 429; reason: string };

export interface SseHub {
  /**
   * Starts a stream on `res` for `user` (the authenticated user's name; '' when unknown, which
   * counts as one user): headers, then `initial` (a snapshot). Refused (nothing written) when the
   * user holds `maxClientsPerUser` streams, when `maxClients` are open, or when the hub is closed.
   */
  open(
    req: Pick<IncomingMessage, 'socket'> | undefined,
    res: SseSink,
    initial: readonly SseMessage[],
    user?: string,
  ): OpenResult;
  /** Sends one event to every client. */
  broadcast(message: SseMessage): void;
  readonly clients: number;
  /** Clients dropped so far because they did not keep up. */
  readonly dropped: number;
  /** Ends every stream; later opens are refused. */
  close(): void;
}

/** The stream's own headers; the caller adds security headers. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
  'x-content-type-options': 'nosniff',
};

/** The wire form of one event (JSON never holds a raw newline, so `data` is one line). */
export function formatSse(message: SseMessage): string {
  return `event: ${message.event}\ndata: ${JSON.stringify(message.data)}\n\n`;
}

/** A client that lost its connection retries after this long (EventSource's `retry:` field). */
const RETRY_MS = 2_000;

export function createSseHub(opts: SseHubOptions): SseHub {
  /** Each open stream and the user it is counted for. */
  const clients = new Map<SseSink, string>();
  const perUser = new Map<string, number>();
  const maxPerUser = opts.maxClientsPerUser ?? opts.maxClients;
  let closed = false;
  let dropped = 0;
  let heartbeat: NodeJS.Timeout | undefined;

  function remove(res: SseSink): void {
    const user = clients.get(res);
    if (user === undefined) return;
    clients.delete(res);
    const held = (perUser.get(user) ?? 1) - 1;
    if (held > 0) perUser.set(user, held);
    else perUser.delete(user);
    if (clients.size === 0) {
      if (heartbeat) clearInterval(heartbeat);
      heartbeat = undefined;
      opts.onIdle?.();
    }
  }

  /** Writes to one client; drops it when its unsent bytes pass the bound. */
  function send(res: SseSink, chunk: string): void {
    if (res.destroyed) {
      remove(res);
      return;
    }
    res.write(chunk);
    if (res.writableLength > opts.maxBufferedBytes) {
      dropped++;
      opts.logger.warn('console stream client is not reading; dropping it', {
        unsentBytes: res.writableLength,
        maxBufferedBytes: opts.maxBufferedBytes,
        dropped,
      });
      remove(res);
      res.destroy();
    }
  }

  return {
    open(req, res, initial, user = '') {
      if (closed) return { ok: false, status: 503, reason: 'the kubelet is shutting down' };
      if (clients.size >= opts.maxClients) {
        return {
          ok: false,
          status: 503,
          reason: `too many console streams open (${opts.maxClients}); close one and retry`,
        };
      }
      if ((perUser.get(user) ?? 0) >= maxPerUser) {
        return {
          ok: false,
          status: 429,
          reason: `too many console streams open for user ${JSON.stringify(user)} (${maxPerUser} per user); close one and retry`,
        };
      }
      // Nagle would hold small events back; a stream wants each event out at once.
      req?.socket.setNoDelay(true);
      res.writeHead(200, { ...SSE_HEADERS });
      clients.set(res, user);
      perUser.set(user, (perUser.get(user) ?? 0) + 1);
      res.once('close', () => remove(res));
      if (clients.size === 1) {
        heartbeat = setInterval(() => {
          for (const c of [...clients.keys()]) send(c, ': heartbeat\n\n');
        }, opts.heartbeatMs);
        heartbeat.unref();
        opts.onActive?.();
      }
      send(res, `retry: ${RETRY_MS}\n\n${initial.map(formatSse).join('')}`);
      return { ok: true };
    },
    broadcast(message) {
      if (clients.size === 0) return;
      const chunk = formatSse(message);
      for (const c of [...clients.keys()]) send(c, chunk);
    },
    get clients() {
      return clients.size;
    },
    get dropped() {
      return dropped;
    },
    close() {
      closed = true;
      for (const c of [...clients.keys()]) {
        remove(c);
        c.end();
      }
    },
  };
}
